"""Search (floor 3): questions answered from the index, which this tier only reads.

``filters.py`` states what a search is narrowed to (``SearchFilters``, the one value every face
builds); ``retrieval.py`` runs a search's legs (``search``) and the write path's ``keyword_search``;
``ranking.py`` states the score, the second hop and the collapse (``Scorer``, ``Scored``,
``Hit``), with ``lexical.py``'s BM25 over the candidates; ``context.py`` attaches a hit's
neighbouring lines; ``query_dates.py`` reads the dates a question names; ``listing.py`` pages
through the rows with their provenance. Nothing here writes the table (design §7 invariant 2):
the indexer, one floor down, is its only writer.
"""
