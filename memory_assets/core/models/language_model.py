"""A small client for an OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
llama.cpp server, LM Studio, a hosted API, ...), shared by the language-model jobs: extraction on
the write path now, the dream and ``MEMORY.md`` promotion later.

``ChatClient.chat(messages)`` returns the first choice's message content;
``ChatClient.complete_json(system, user)`` asks for a JSON object (``response_format``
``json_object``) and returns it parsed, tolerating a fenced block or prose around it
(``parse_json_object``); ``ChatClient.chat_tools(messages, tools)`` offers the model function
tools (``tools`` as JSON-schema function definitions) and returns its ``AssistantMessage``: text,
``tool_calls`` or both, ready to be sent back (``to_message()``) with the ``role: tool`` results.
``make_chat_client(settings)`` builds one from ``MEMORY_LLM_*``.

Each call goes through ``openai_compat.Endpoint``, with the retry policy the embeddings client
shares: one total time limit (``timeout``, ``MEMORY_LLM_TIMEOUT_S``) covers every attempt and
every wait between them; connection errors, 5xx and 429 answers are retried with exponential
backoff (a ``Retry-After`` is honoured) only while the limit leaves time for it; the caller gets
its answer or an error within the limit. Every failure raises ``LanguageModelError``, whose
message names the endpoint, the model, what happened (the HTTP status and the server's own error
text, invalid JSON, no choices, the time limit, an answer over ``MAX_ANSWER_BYTES``, abandoned
while it streams) and the fix. The API key is sent as ``Authorization: Bearer`` and never
appears in a message or a repr.

A server that refuses an optional request field with a 400 naming it (``response_format`` on
an older llama.cpp, ``temperature`` on a model that only takes its default) is asked again once
without that field, and the client remembers not to send it again.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_assets.core.models import openai_compat
from memory_assets.core.text import excerpt

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings

DEFAULT_TIMEOUT = 30.0  # seconds for one call, all attempts included
CHAT_PATH = "/chat/completions"
# The most of one answer the client holds in memory. A chat answer with a page of tool calls is a
# few hundred KB; 8 MiB is far above any real answer and far below what a runaway or hostile
# server could stream within the time limit (several GB from localhost), which would otherwise be
# buffered whole.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
DEFAULT_KEY_VAR = "MEMORY_LLM_API_KEY"
# Request fields a server may refuse; on a 400 that names one, the request is sent again without it.
OPTIONAL_FIELDS = ("response_format", "temperature")
_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)  # a reasoning model's preamble


class LanguageModelError(RuntimeError):
    """A chat call that gave no usable answer; the message says what happened and how to fix it."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for. ``arguments`` is the JSON text the model wrote,
    unparsed (it may be malformed: the caller answers that with a tool error)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AssistantMessage:
    """The first choice's message of a tool-enabled call: its text (None when it only called
    tools), its tool calls (empty when it answered in text) and the finish reason."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None

    def to_message(self) -> dict[str, Any]:
        """The message as it goes back into the conversation (``role: assistant``)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer: the whole text, else the first fenced block
    (```` ```json ... ``` ````), else the first ``{...}`` that parses inside surrounding prose. A
    reasoning model's ``<think>...</think>`` block is ignored. Raises ValueError (saying why) for an
    empty answer, JSON that is not an object, or no object."""
    stripped = _THINK_RE.sub("", text).strip()
    if not stripped:
        raise ValueError("the answer is empty")
    for candidate in (stripped, *(m.group(1).strip() for m in _FENCE_RE.finditer(stripped))):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        raise ValueError(f"the answer is JSON but {_json_kind(value)}, not an object")
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", stripped):
        try:
            value, _ = decoder.raw_decode(stripped, m.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("the answer holds no JSON object")


class ChatClient(openai_compat.EndpointClient):
    """``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature"}`` (and
    ``"response_format": {"type": "json_object"}`` when JSON is wanted).

    ``timeout`` is the total time limit of one call, retries and waits included; ``max_retries``
    bounds the further attempts after a connection error, a 5xx or a 429 (never after a timeout:
    the limit is spent). ``temperature`` None leaves it to the server. ``key_var`` only names the
    key's environment variable in error messages. ``max_answer_bytes`` caps the body of one answer
    (``MAX_ANSWER_BYTES``): a longer one is abandoned as soon as it is seen, not retried."""

    error = LanguageModelError

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = openai_compat.RETRIES,
        backoff: float = openai_compat.BACKOFF,
        temperature: float | None = 0.0,
        key_var: str = DEFAULT_KEY_VAR,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._connect(
            base_url,
            model,
            api_key,
            self._wording(key_var),
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_answer_bytes=max_answer_bytes,
        )
        self.model = self._endpoint.model
        self.temperature = temperature
        self.key_var = key_var
        self.max_answer_bytes = max_answer_bytes
        self._dropped: set[str] = set()  # optional fields this server refused

    @staticmethod
    def _wording(key_var: str) -> openai_compat.Wording:
        return openai_compat.Wording(
            name="chat endpoint",
            api="chat-completions",
            path=CHAT_PATH,
            url_var="MEMORY_LLM_URL",
            model_var="MEMORY_LLM_MODEL",
            key_var=key_var,
            example_url="http://127.0.0.1:11434/v1",
            model_kind="a chat model",
            example_model="llama3.1:8b or gpt-4o-mini",
            fallback="use the deterministic built-ins",
            slow_fix="The server is overloaded or the model too slow; check the server's load, use a "
            "smaller model, or raise MEMORY_LLM_TIMEOUT_S.",
            size_fix="No chat answer is that long: check that MEMORY_LLM_URL is an OpenAI-compatible "
            "chat-completions endpoint and that the server caps the model's output (max_tokens).",
            size_limit="MAX_ANSWER_BYTES",
        )

    # -- the calls ---------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        json_mode: bool = False,
        temperature: float | None = None,
    ) -> str:
        """The first choice's message content for ``messages`` (``{"role", "content"}`` dicts)."""
        return self._complete(messages, json_mode, temperature)[0]

    def complete_json(self, system: str, user: str, *, temperature: float | None = None) -> dict[str, Any]:
        """The JSON object the model answers to a system and a user message."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        content, finish_reason = self._complete(messages, True, temperature)
        try:
            return parse_json_object(content)
        except ValueError as exc:
            what = f"{exc}: {excerpt(content)!r}"
            if finish_reason == "length":
                what += " (the answer was cut off: finish_reason 'length')"
            raise self._fail(
                what,
                "Use a model that follows JSON instructions (an instruction-tuned chat model), or raise "
                "its output limit if the answer was cut off.",
            ) from None

    def chat_tools(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        temperature: float | None = None,
        timeout: float | None = None,
    ) -> AssistantMessage:
        """The model's next message when it may call ``tools`` (OpenAI function definitions:
        ``{"type": "function", "function": {"name", "description", "parameters"}}``).

        ``messages`` may hold earlier assistant messages with ``tool_calls`` and the ``role: tool``
        answers (``tool_call_id``, ``content``). ``timeout`` overrides the client's time limit for
        this call (an agent passes what is left of its own limit)."""
        payload: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if tools:
            payload["tools"] = [dict(t) for t in tools]
        chosen = self.temperature if temperature is None else temperature
        if chosen is not None and "temperature" not in self._dropped:
            payload["temperature"] = chosen
        return self._assistant_message(self._post(payload, None if timeout is None else float(timeout)))

    # -- one call: the endpoint's attempts within the time limit ----------------------------------
    def _complete(
        self, messages: Sequence[Mapping[str, Any]], json_mode: bool, temperature: float | None
    ) -> tuple[str, str | None]:
        payload: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        chosen = self.temperature if temperature is None else temperature
        if chosen is not None and "temperature" not in self._dropped:
            payload["temperature"] = chosen
        if json_mode and "response_format" not in self._dropped:
            payload["response_format"] = {"type": "json_object"}
        return self._content(self._post(payload))

    def _post(self, payload: dict[str, Any], limit: float | None = None) -> Any:
        try:
            return self._endpoint.call(
                payload, limit, lambda refused: self._drop_refused_field(payload, refused)
            )
        except openai_compat.EndpointError as exc:
            refused_tools = exc.status == 400 and "tool" in exc.detail.lower()
            raise self._fail(exc.what, _TOOLS_REFUSED if refused_tools else exc.fix) from exc

    def _drop_refused_field(self, payload: dict[str, Any], reply: openai_compat.Reply) -> bool:
        """Remove an optional field the server's 400 names; True when one was removed."""
        if reply.status != 400:
            return False
        text = reply.error_text().lower()
        for name in OPTIONAL_FIELDS:
            if name in payload and name in text:
                del payload[name]
                self._dropped.add(name)
                return True
        return False

    # -- answers and errors ------------------------------------------------------------------------
    def _first_choice(self, body: Any) -> dict[str, Any]:
        """The first choice of a chat-completions answer (a dict, possibly empty)."""
        if not isinstance(body, dict):
            raise self._fail(
                f"the answer is not a JSON object: {excerpt(str(body))!r}", self._endpoint.not_openai()
            )
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            error = body.get("error")
            if error:
                detail = error.get("message", error) if isinstance(error, dict) else error
                raise self._fail(
                    f"the server answered with an error: {excerpt(str(detail))}", self._endpoint.not_openai()
                )
            raise self._fail(
                f"the answer has no choices: {excerpt(json.dumps(body))!r}", self._endpoint.not_openai()
            )
        return choices[0] if isinstance(choices[0], dict) else {}

    def _content(self, body: Any) -> tuple[str, str | None]:
        first = self._first_choice(body)
        finish_reason = first.get("finish_reason")
        message = first.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal") if isinstance(message, dict) else None
            what = "the first choice has no message content"
            if refusal:
                what += f" (the model refused: {excerpt(str(refusal))})"
            elif finish_reason:
                what += f" (finish_reason {finish_reason!r})"
            raise self._fail(what, "Check that MEMORY_LLM_MODEL is a chat model that answers in text.")
        return content, finish_reason if isinstance(finish_reason, str) else None

    def _assistant_message(self, body: Any) -> AssistantMessage:
        first = self._first_choice(body)
        finish_reason = first.get("finish_reason")
        message = first.get("message")
        if not isinstance(message, dict):
            raise self._fail(
                f"the first choice has no message: {excerpt(json.dumps(first))!r}",
                self._endpoint.not_openai(),
            )
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            content = None
        raw_calls = message.get("tool_calls")
        if not isinstance(raw_calls, list):
            # the pre-tools protocol: one ``function_call`` on the message
            legacy = message.get("function_call")
            raw_calls = [{"function": legacy}] if isinstance(legacy, dict) else []
        calls = tuple(_tool_call(raw, n) for n, raw in enumerate(raw_calls) if isinstance(raw, dict))
        if not calls and not (content or "").strip():
            refusal = message.get("refusal")
            if refusal:
                raise self._fail(
                    f"the model refused: {excerpt(str(refusal))}",
                    "Check the prompt and the model (MEMORY_LLM_MODEL).",
                )
        return AssistantMessage(content, calls, finish_reason if isinstance(finish_reason, str) else None)


def _tool_call(raw: Mapping[str, Any], index: int) -> ToolCall:
    """A tool call as the model wrote it; arguments a server sent as an object become JSON text,
    and a missing id gets a local one (the tool's answer must name it)."""
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    name = function.get("name")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = raw.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name=name if isinstance(name, str) else "",
        arguments=arguments,
    )


_TOOLS_REFUSED = (
    "The server or model refused the tool definitions: set MEMORY_LLM_MODEL to a model that supports "
    "tool (function) calling, and enable it on the server if it needs a flag (llama.cpp: --jinja)."
)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def make_chat_client(settings: "Settings") -> ChatClient | None:
    """The configured chat client (``MEMORY_LLM_URL``, ``MEMORY_LLM_MODEL``, the key from the
    variable ``MEMORY_LLM_KEY_VAR`` names, ``MEMORY_LLM_TIMEOUT_S``), or None when no URL is set
    (the deterministic built-ins then do the language-model jobs). Nothing is requested here."""
    if not settings.llm_url:
        return None
    if not (settings.llm_model or "").strip():
        raise LanguageModelError(
            f"MEMORY_LLM_URL is set ({openai_compat.base_url(settings.llm_url, CHAT_PATH)}) but MEMORY_LLM_MODEL is not: the "
            "endpoint needs a model name. Set MEMORY_LLM_MODEL to a chat model the server serves (for "
            "example llama3.1:8b or gpt-4o-mini), or unset MEMORY_LLM_URL to use the deterministic "
            "built-ins."
        )
    return ChatClient(
        settings.llm_url,
        settings.llm_model or "",
        settings.llm_api_key,
        timeout=settings.llm_timeout_s,
        key_var=settings.llm_key_var,
    )
