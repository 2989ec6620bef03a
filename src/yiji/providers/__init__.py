"""Providers: OpenAI-compatible extraction and embedding clients over httpx, behind Protocols."""
