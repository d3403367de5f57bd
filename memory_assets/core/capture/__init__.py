"""The capture tier: append-only daily logs (and, later, transcripts and confirmations)."""
