"""Benchmarks: commands that print numbers (``yiji bench ...``)."""
