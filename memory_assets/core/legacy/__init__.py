"""Legacy rows: export first, then delete, refusing anything that would lose data (design §4.12).

A legacy row is a row of ``archival_memories`` that no markdown file owns: its source type (the
first-class column, or the metadata JSON of an assistant-era table) is not one the indexer writes
(``archive_log``, ``notebook``, ``core_file``), or it names no source file. No reindex can replace
such a row and no tombstone can retire it, and the assistant's rows from before the markdown tier
exist nowhere else: deleting them unexported is data loss. The assistant's fallback table
``memory_blocks`` (its persona, user and facts blocks) is covered the same way. In this package
"legacy" means exactly that: rows no markdown owns.

The steps, each safe to repeat, one module per workflow:

* ``find.find_legacy``: the legacy rows of the project's index, or of an assistant-format LanceDB
  at ``table_uri`` (table ``archival_memories``), read as they are (never migrated, never
  written), plus the ``memory_blocks`` blocks. Only the home's user's rows: other users' rows are
  counted and never touched.
* ``find.check_recorded``: whether each row's first 90 characters, folded (``text.fold``), occur
  in a daily log, a vault page or a core file (whole words; MEMORY.md's manual zone only, since
  its generated zone is rewritten by generators and is no record). ``find.recorded_nowhere_else``
  is the asset check built on it.
* ``export.export``: appends every unrecorded row to the capture tier (the durable append, under
  the writers' lock): to the log of its ``created_at`` UTC day when that day is after the
  watermark, else to today's log tagged ``legacy from-YYYY-MM-DD`` (the indexer takes the fact's
  date from the tag), or ``legacy undated`` when the row has no date at all. Blocks go to their
  core file: ``facts`` into MEMORY.md's manual zone, ``persona``/``user`` appended to
  persona.md/user.md. A second export appends nothing (the check sees the first one's lines).
* ``backup.apply``: refuses while anything is recorded nowhere; otherwise backs up, deletes the
  legacy rows through the indexer under its exclusive table lock, and verifies the counts.
  ``memory_blocks`` is never deleted (nothing reads it; it costs nothing to keep).
* ``backup.restore``: the table exactly as it was, from the directory copy or from the tag;
  ``backup.forget_backup`` drops a backup that is no longer wanted.

How a backup is kept (a tagged version, and a directory copy beside a local table) is described in
``backup.py``. Every confirmed apply and every restore is appended to ``.state/legacy.jsonl``
(``journal.py``), which the asset check reads.

The modules import one way: ``journal`` ← ``find`` ← ``export`` and ``backup``; ``export`` and
``backup`` never import each other.
"""
