"""An OpenAI-compatible endpoint over HTTP, as both model clients (``embedder.HttpEmbedder``,
``language_model.ChatClient``) reach it: the base URL a user wrote, one JSON POST under one retry
policy, and every way it can fail, worded once.

``Endpoint.call(payload, limit)`` returns the JSON body of a 200 answer or raises
``EndpointError``, whose ``what`` and ``fix`` say what happened (the HTTP status and the server's
own error text, invalid JSON, the time limit, an answer too large, no connection) and how to fix
it, in the client's own terms (``Wording``: its settings, its API, what unsetting its URL gives).
Both clients derive from ``EndpointClient``, which builds their endpoint and raises its failures as
the client's own error type.
The policy, the same for every client:

* one total time limit covers every attempt and every wait between them; a request still in
  flight when it runs out is abandoned to a daemon thread that gives up on its own within about
  one more limit, so the caller always hears back within the limit;
* connection errors, 5xx and 429 answers are sent again after an exponential backoff, or after
  the server's ``Retry-After`` (honoured up to ``RetryPolicy.max_retry_after``) when longer, at
  most ``RetryPolicy.retries`` times and only while the limit leaves time for the wait; never
  after a timeout (the limit is spent);
* an answer body over ``max_answer_bytes`` is abandoned as soon as it is seen (its declared
  ``Content-Length`` or the bytes read so far), never buffered whole and never retried.

The API key is sent as ``Authorization: Bearer`` and appears in no repr and no error.
"""

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from memory_assets.core.backoff import MODEL_REQUEST_RETRY
from memory_assets.core.text import excerpt

RETRIES = 3  # further attempts after a connection error, a 5xx or a 429
BACKOFF = MODEL_REQUEST_RETRY.first_s  # seconds before the first retry; doubles each time
MAX_RETRY_AFTER = 30.0  # a server's Retry-After is honoured up to this many seconds


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


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed attempt is sent again: at most ``retries`` more times, the n-th (0-based)
    after ``MODEL_REQUEST_RETRY``'s wait starting at ``backoff`` seconds (``backoff * 2**n``), or
    after the server's ``Retry-After`` when that is longer (capped at ``max_retry_after``)."""

    retries: int = RETRIES
    backoff: float = BACKOFF
    max_retry_after: float = MAX_RETRY_AFTER

    def delay(self, retries_done: int, deadline: float, retry_after: str | None = None) -> float | None:
        """Seconds to wait before the next attempt, or None when no retry is left or the wait
        would not end before ``deadline`` (a ``time.monotonic()`` value)."""
        if retries_done >= self.retries:
            return None
        delay = MODEL_REQUEST_RETRY.starting_at(max(0.0, self.backoff)).wait(retries_done)
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = max(delay, min(float(retry_after), self.max_retry_after))
        if time.monotonic() + delay >= deadline:
            return None
        return delay


def retryable(status: int) -> bool:
    """An answer worth sending again: the server failed (5xx) or is rate limiting (429)."""
    return status == 429 or status >= 500


@dataclass(frozen=True)
class Reply:
    """The server's answer to the last attempt of one call."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    attempts: int  # requests sent for this answer, the last one included

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def error_text(self) -> str:
        """The server's own explanation of an error answer (``server_error_text``)."""
        return server_error_text(self.text)


@dataclass(frozen=True)
class Wording:
    """How one client's errors name its API, its settings and its fixes."""

    name: str  # how a message names the endpoint: "embeddings endpoint", "chat endpoint"
    api: str  # the OpenAI API it speaks: "embeddings", "chat-completions"
    path: str  # appended to the base URL: "/embeddings", "/chat/completions"
    url_var: str  # the setting of the base URL
    model_var: str  # the setting of the model's name
    key_var: str  # the setting of the API key
    example_url: str  # a base URL to show, e.g. http://127.0.0.1:8080/v1
    model_kind: str  # "an embedding model", "a chat model"
    example_model: str  # a model's name to show: "text-embedding-3-small"
    fallback: str  # what unsetting ``url_var`` gives: "use the bundled local model"
    slow_fix: str  # the fix when the time limit runs out
    size_fix: str  # the fix when an answer is over the size limit
    size_limit: str  # where the size limit comes from: "MAX_ANSWER_BYTES"
    placeholder_models: tuple[str, ...] = ()  # names that mean no model was chosen ("default")


class EndpointError(Exception):
    """A call that gave no usable answer: ``what`` happened and the ``fix``. ``status`` is the
    HTTP status of an error answer (None when none came back) and ``detail`` the server's own
    explanation of it."""

    def __init__(self, what: str, fix: str, status: int | None = None, detail: str = "") -> None:
        super().__init__(f"{what}. {fix}")
        self.what = what
        self.fix = fix
        self.status = status
        self.detail = detail


class EndpointClient:
    """What both model clients share: ``_connect`` builds their ``Endpoint`` (a refused URL, model
    or time limit raised as the client's own ``error`` type) and keeps its base URL, URL, key and
    time limit on the client; ``_fail`` words a failure as that type, naming the endpoint and the
    model. The repr never shows the key."""

    error: type[Exception] = EndpointError  # what the client raises: its own error type

    def _connect(
        self,
        url: str,
        model: str,
        api_key: str | None,
        wording: Wording,
        *,
        timeout: float,
        max_retries: int,
        backoff: float,
        max_answer_bytes: int,
    ) -> None:
        """``RetryPolicy(max_retries, backoff)``, a negative value taken as 0."""
        try:
            self._endpoint = Endpoint(
                url,
                model,
                api_key,
                wording=wording,
                policy=RetryPolicy(max(0, max_retries), max(0.0, backoff)),
                timeout=timeout,
                max_answer_bytes=max_answer_bytes,
            )
        except EndpointError as exc:
            raise self.error(str(exc)) from None
        self.base_url, self.url = self._endpoint.base_url, self._endpoint.url
        self.api_key = self._endpoint.api_key
        self.timeout = self._endpoint.timeout

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, model={self._endpoint.model!r})"

    def _fail(self, what: str, fix: str) -> Exception:
        return self.error(self._endpoint.message(what, fix))


class _DeadlineExceeded(Exception):
    """The time limit ran out while a request was in flight."""


class _TooLarge(Exception):
    """The answer's body is over the limit; the argument says how that showed."""


class Endpoint:
    """``POST`` JSON to ``{base_url}{wording.path}`` for ``model`` under a ``RetryPolicy``, with
    ``Authorization: Bearer <api_key>`` when a key is set. ``url`` is the base URL as a user wrote
    it (``base_url``); one that is not http(s), a missing model or a time limit that is not
    positive is refused here with ``EndpointError``. One ``requests.Session`` per calling thread
    keeps connections alive (sessions are not thread-safe); a session whose request was abandoned
    is never used again."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None,
        *,
        wording: Wording,
        policy: RetryPolicy,
        timeout: float,
        max_answer_bytes: int,
    ) -> None:
        words = self.wording = wording
        self.base_url = base_url(url, words.path)
        self.url = self.base_url + words.path
        self.model = (model or "").strip()
        if not self.base_url.lower().startswith(("http://", "https://")):
            raise EndpointError(
                f"{words.name} {url!r} is not an http(s) URL",
                f"Set {words.url_var} to the endpoint's base URL, e.g. {words.example_url} ({words.path} is "
                f"appended), or unset it to {words.fallback}.",
            )
        if self.model in ("", *words.placeholder_models):
            chosen = f", but the model is {model!r}" if self.model else ""
            raise EndpointError(
                f"{words.name} {self.url} needs a model name{chosen}",
                f"Set {words.model_var} to {words.model_kind} the server serves (for example "
                f"{words.example_model}), or unset {words.url_var} to {words.fallback}.",
            )
        if not timeout > 0:
            raise EndpointError(
                f"{words.name} {self.url}: the time limit must be positive, not {timeout!r}",
                "Give it a number of seconds above 0.",
            )
        self.api_key = api_key or None
        self.policy = policy
        self.timeout = float(timeout)
        self.max_answer_bytes = max_answer_bytes
        self._local = threading.local()

    def __repr__(self) -> str:  # never shows the key
        return f"Endpoint({self.url!r}, model={self.model!r})"

    def message(self, what: str, fix: str) -> str:
        """An error message naming this endpoint and its model, what happened and the fix."""
        return f"{self.wording.name} {self.url} (model {self.model!r}): {what}. {fix}"

    def call(
        self,
        payload: dict[str, Any],
        limit: float | None = None,
        amend: Callable[[Reply], bool] | None = None,
        about: str = "",
    ) -> Any:
        """The JSON body of the 200 answer to ``payload`` within ``limit`` seconds (``timeout``
        when None), all attempts and waits included, or ``EndpointError``.

        ``amend`` sees each answer that is not a 200 before the policy does; when it changes
        ``payload`` and returns True, the request is sent again at once (not counted as a retry).
        ``about`` follows the time limit in a timeout's message (" for a batch of 64 text(s)")."""
        limit = self.timeout if limit is None else limit
        if not limit > 0:
            raise self._timed_out(0, 0.0, about)
        deadline = time.monotonic() + limit
        attempts = retries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out(attempts, limit, about)
            attempts += 1
            try:
                status, reason, headers, body = self._send(payload, remaining)
            except _DeadlineExceeded:
                raise self._timed_out(attempts, limit, about) from None
            except _TooLarge as exc:
                raise self._too_large(str(exc)) from None
            except requests.Timeout as exc:  # connect or read timeout: the limit is spent
                raise self._timed_out(attempts, limit, about) from exc
            except requests.ConnectionError as exc:  # refused, DNS, reset (or a timeout mid-body)
                if time.monotonic() >= deadline:
                    raise self._timed_out(attempts, limit, about) from exc
                delay = self.policy.delay(retries, deadline)
                if delay is None:
                    raise self._cannot_connect(attempts, exc) from exc
                retries += 1
                time.sleep(delay)
                continue
            except requests.RequestException as exc:
                raise self._request_failed(exc) from exc
            reply = Reply(status, reason, headers, body, attempts)
            if status != 200 and amend is not None and amend(reply):
                continue
            if retryable(status):
                delay = self.policy.delay(retries, deadline, headers.get("Retry-After"))
                if delay is not None:
                    retries += 1
                    time.sleep(delay)
                    continue
            if status != 200:
                raise self._http_error(reply)
            try:
                return json.loads(body)
            except ValueError:
                raise EndpointError(
                    f"the answer is not valid JSON: {excerpt(reply.text)!r}", self.not_openai()
                ) from None

    def not_openai(self) -> str:
        """The fix for an answer that is not what the API answers."""
        return (
            f"Check that {self.wording.url_var} points at an OpenAI-compatible {self.wording.api} API (the "
            "base URL, usually ending in /v1)."
        )

    # -- one attempt -----------------------------------------------------------------------------
    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
        return session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _send(self, payload: dict[str, Any], limit: float) -> tuple[int, str, Mapping[str, str], bytes]:
        """One request, answered within ``limit`` seconds (else ``_DeadlineExceeded``)."""
        deadline = time.monotonic() + limit
        session = self._session()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["reply"] = self._request(session, payload, deadline)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=run, name=f"{self.wording.api}-request", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            self._local.session = None  # the abandoned request still holds this one
            raise _DeadlineExceeded
        if "error" in box:
            raise box["error"]
        reply: tuple[int, str, Mapping[str, str], bytes] = box["reply"]
        return reply

    def _request(
        self, session: requests.Session, payload: dict[str, Any], deadline: float
    ) -> tuple[int, str, Mapping[str, str], bytes]:
        limit = max(0.001, deadline - time.monotonic())
        with session.post(
            self.url, json=payload, headers=self._headers(), timeout=limit, stream=True
        ) as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_answer_bytes:
                raise _TooLarge(f"Content-Length {int(declared)}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_content(chunk_size=65536):
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_answer_bytes:  # stop reading: never buffer the rest
                    raise _TooLarge(f"over {size} bytes received")
                if time.monotonic() > deadline:  # a server trickling its answer
                    raise _DeadlineExceeded
            return response.status_code, response.reason or "", response.headers, b"".join(chunks)

    # -- failures, in the client's words -----------------------------------------------------------
    def _timed_out(self, attempts: int, limit: float, about: str) -> EndpointError:
        tries = f" ({attempts} attempt(s))" if attempts > 1 else ""
        return EndpointError(
            f"no answer within the {limit:g} s time limit{tries}{about}", self.wording.slow_fix
        )

    def _too_large(self, seen: str) -> EndpointError:
        return EndpointError(
            f"the answer is larger than the {self.max_answer_bytes} byte limit ({self.wording.size_limit}; "
            f"{seen}); it was not read",
            self.wording.size_fix,
        )

    def _cannot_connect(self, attempts: int, exc: Exception) -> EndpointError:
        words = self.wording
        return EndpointError(
            f"cannot connect after {attempts} attempt(s) ({type(exc).__name__}: {excerpt(str(exc))})",
            f"Check that the server is running and that {words.url_var} is its base URL (e.g. "
            f"{words.example_url}), or unset {words.url_var} to {words.fallback}.",
        )

    def _request_failed(self, exc: Exception) -> EndpointError:
        return EndpointError(
            f"the request failed ({type(exc).__name__}: {excerpt(str(exc))})",
            f"Check {self.wording.url_var} (an http(s) base URL such as {self.wording.example_url}).",
        )

    def _http_error(self, reply: Reply) -> EndpointError:
        words, status = self.wording, reply.status
        what = f"HTTP {status} {reply.reason}".rstrip()
        if reply.attempts > 1:
            what += f" after {reply.attempts} attempts"
        detail = reply.error_text()
        if detail:
            what += f": {detail}"
        if status in (401, 403):
            fix = (
                f"Set {words.key_var} (or OPENAI_API_KEY) to a key this server accepts."
                if self.api_key is None
                else f"The API key was refused; check {words.key_var} (or OPENAI_API_KEY)."
            )
        elif status in (404, 405):
            fix = (
                f"Check {words.url_var}: it must be the API's base URL (usually ending in /v1; "
                f"{words.path} is appended), and {words.model_var} a model the server serves."
            )
        elif status == 429:
            fix = "The server is rate limiting; retry later or raise its limits."
        elif status >= 500:
            fix = "The server failed; check its logs, then retry."
        else:
            fix = (
                f"Check that {words.model_var} names {words.model_kind} this server serves and that the "
                f"server speaks the OpenAI {words.api} API."
            )
        return EndpointError(what, fix, status, detail)
