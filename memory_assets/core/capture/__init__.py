"""The capture tier (floor 1): what the assistant hands us, kept losslessly.

``daily_log.py`` is the format of ``memory/archive/YYYY-MM-DD.md`` (UTC days, ``## HH:MM — chat``
blocks of ``- [category] fact `tags``` lines) and its only writer, an fsync'd append under the
day's lock: logs are never rewritten (design §7 invariant 1). ``ledger.py`` remembers what each
log held, so the append-only check can name an edited line and its fix. ``transcripts.py``
reads ``transcripts/<session>.jsonl`` turns, reporting every line it cannot read as written.
Nothing here reads the vault, the index or a model.
"""
