"""The Dagster layer: thin wiring of the domain core into assets, checks, sensors and jobs.

One folder per domain (``index``, ``dedup``), each holding its assets, checks, sensors and jobs
side by side; partitions and resources are shared and live in their own modules.
"""
