"""The write path, a runner above the tiers: a conversation turn in, facts classified and written.

``process.py`` holds ``process_turns`` and ``process_turn``, its one-turn form (recall known facts, extract, classify, append, reindex,
refresh MEMORY.md); ``extraction.py`` the extractor interface, ``rule_extractor/`` the deterministic
default extractor, ``chat_extractor.py`` the OpenAI-compatible one; ``relative_dates.py`` the
relative dates in an extracted fact made absolute against the turn's time; ``classifier.py`` the
confirm / revise / new decision (design §5.6).
"""
