"""The derived tier (floor 2): the LanceDB table, always a function of the markdown.

``rows.py`` says what rows a file should produce (``FilePlan``, deterministic ids); the
``Indexer`` (``indexer.py``) diffs those plans against the table under per-file and table locks,
and is the one holder of ``table_writer.py``, the only code that writes the table (design §7
invariant 2); ``store.py`` reads it (versions, caches, schema checks) and ``index_state.py``
remembers each file's digest. ``table_damage.py`` finds damage to the table's files before they
are read, names it, and sets a damaged table aside for a rebuild. ``freshness.py`` tells the sensors which files are stale;
``maintenance.py`` says when the table is due an optimize and a prune.
Questions are answered one floor up, in ``core/search/``, which only reads this tier;
``best_facts.py`` is the per-turn MEMORY.md writer's read model; ``retire.py`` tombstones a text
and reindexes every file that holds it.
"""
