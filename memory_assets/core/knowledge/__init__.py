"""The knowledge tier (floor 1): the vault and the small files that steer consolidation.

The vault's pages (``vault.py`` walks them, ``chunking.py`` splits them for the index,
``personal_pages.py`` is the ``3_Personal/`` page format the consolidators write, with one
bounded frontmatter reader, ``frontmatter_yaml.py``); what a claim is worth (``importance.py``)
and which category it has (``categories.py``); how two claims compare (``claims.py``, shared by
the write path's classifier and the dream); ``MEMORY.md``'s marked zones (``memory_md.py``); and
the runner-owned state: the watermark in ``log.md``, tombstones (the only removal mechanism),
confirmations, the dream's pacing state and the recall log. Nothing here reads the index.
"""
