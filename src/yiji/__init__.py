"""yiji (忆迹): local, auditable long-term memory for AI companions and agents."""

__version__ = "0.1.0"
