"""What yiji measures for its user, on a product install: ``yiji extraction check`` (the configured
extraction endpoint on built-in labelled turns) and ``yiji probe`` (two chat models, one scripted
conversation). The benchmarks are a development package of their own (``yiji_bench``)."""
