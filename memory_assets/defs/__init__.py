"""The Dagster layer (a face): thin wiring of the domain core into assets, checks, sensors and jobs.

One folder per domain (``index``, ``write_path``, ``dream``, ``reconcile``, ``dedup``, ``legacy``),
each holding its assets, checks, sensors and jobs side by side; partitions and resources (the
``Home`` a run opens) are shared and live in their own modules.
"""
