"""Audits (floor 5): measurements and invariant checks over a home, shared by the CLI and Dagster.

``checks.py`` holds the invariant checks (design §7), each returning a ``CheckOutcome`` whose
problem lines name the file or day and the fix, ``facts_accounted.py`` the one that proves no
written fact is stranded and ``turns_accounted.py`` the one that proves no turn said is; ``dedup.py`` measures near-duplicates in the index
and the on-disk backlog, and ``measurement.py`` runs it over a home and writes its files.
They read the tiers below and never write them.
"""
