"""Clients for the models the core calls: the embedder (local sentence-transformers or an
OpenAI-compatible endpoint), the chat language model, and the OpenAI-compatible HTTP client and
retry policy they share (``openai_compat.py``).

Floor 1, beside capture and knowledge: they import settings and text helpers only, and every
floor above may use them.
"""
