"""Frozen copies of earlier code that a benchmark runs side by side with today's (not part of the package)."""
