"""The pure domain core of memory-assets.

Nothing under this package imports Dagster: formats, the indexer, retrieval, ranking and the
dedup measurement are plain Python that the Dagster layer (``memory_assets.defs``), the CLI and
the assistant (as a library) all call. A test enforces the boundary.
"""
