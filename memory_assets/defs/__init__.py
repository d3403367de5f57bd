"""The Dagster layer (a face): thin wiring of the domain core into assets, checks, sensors and jobs.

One folder per domain (``index``, ``write_path``, ``dream``, ``reconcile``, ``dedup``, ``legacy``),
each holding its assets, checks, sensors and jobs side by side, and for many homes ``homes`` (the
homes sensor and the batches it cuts) and ``upkeep`` (the batch job); partitions, resources (the
``Home`` a run opens), how a single home's sensor and a daily schedule are declared
(``automation.py``) and the layer's numbers from the environment (``env.py``) are shared and live
in their own modules.
"""
