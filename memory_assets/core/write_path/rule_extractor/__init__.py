"""The deterministic rule-based extractor: the embedded default, with no model and no network.

``RuleExtractor`` (an ``extraction.Extractor``) turns the first-person statements of a turn's
user message into one-sentence, third-person facts ("I live in Lisbon." -> "Lives in Lisbon.").
It never raises, ignores ``known`` (the classifier handles repeats), and gives the same facts, in
the order stated, for the same turn. At most ``MAX_FACTS`` facts of at most ``MAX_FACT_CHARS``
characters each, from the first ``MAX_SCAN_CHARS`` characters of the message (a warning says when
either cap cut something).

One concept in four parts; imports point one way, ``vocabulary`` <- ``rewrites`` and
``instruction_rewrites`` <- ``table`` <- ``pipeline``:

- ``vocabulary.py``: the word tables (relations, pets, nationalities, states, tech terms, verbs,
  adverbs...) and the word-level helpers (first person to third, conjugation);
- ``rewrites.py``: ``Draft`` and the rewrite of each kind of statement about the user;
  ``instruction_rewrites.py``: the rewrites of lasting instructions to the assistant;
- ``table.py``: the rule tables, anchored pattern -> rewrite, in the order they are tried;
- ``pipeline.py``: prepare, split, gate and rewrite a message, and ``RuleExtractor``. Its
  docstring says what the rules catch and what they ignore.

The names below are the package's surface; the underscored names inside are its own.
"""

from memory_assets.core.write_path.rule_extractor.pipeline import (
    MAX_FACT_CHARS,
    MAX_FACTS,
    MAX_SCAN_CHARS,
    RuleExtractor,
)

__all__ = ["MAX_FACTS", "MAX_FACT_CHARS", "MAX_SCAN_CHARS", "RuleExtractor"]
