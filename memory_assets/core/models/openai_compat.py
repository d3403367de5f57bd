"""What the two OpenAI-compatible clients (``models/embedder.HttpEmbedder``, ``language_model.ChatClient``)
read the same way: the base URL a user wrote, and a server's own explanation of an error."""

import json

from memory_assets.core.text import excerpt


def base_url(url: str, path: str) -> str:
    """``http://host:port/v1`` from what a user may write: a trailing slash, or the full URL with
    the endpoint's ``path`` (``/embeddings``, ``/chat/completions``) appended."""
    base = url.strip().rstrip("/")
    return base.removesuffix(path).rstrip("/")


def server_error_text(body: str) -> str:
    """The server's own explanation in an error body: OpenAI's ``{"error": {"message": ...}}``, a
    plain ``error`` / ``detail`` / ``message`` field, or the start of the body."""
    try:
        value = json.loads(body)
    except ValueError:
        return excerpt(body)
    if isinstance(value, dict):
        for key in ("error", "detail", "message"):
            field = value.get(key)
            if isinstance(field, dict):
                field = field.get("message") or field.get("detail") or field
            if field:
                return excerpt(str(field))
    return excerpt(str(value))
