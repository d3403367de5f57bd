"""The OpenAI-compatible chat client against a real HTTP server in the test process.

``ChatServer`` speaks ``POST /v1/chat/completions`` on 127.0.0.1 (an ephemeral port) and answers
from a per-test script; the write path's extractor tests use it too.
"""

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.models.language_model import (
    ChatClient,
    LanguageModelError,
    make_chat_client,
    parse_json_object,
)
from memory_assets.core.settings import Settings
from memory_assets_tests.processes import free_port

SECRET = "sk-test-0123456789abcdef"


@dataclass
class Answer:
    """One scripted answer: a status, a body (an object is sent as JSON), headers, and a delay
    before anything is sent."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(content: str | None, finish_reason: str = "stop") -> Answer:
    """A 200 chat completion whose first choice says ``content``."""
    return Answer(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
        }
    )


def error(status: int, message: str, **headers: str) -> Answer:
    return Answer(status, {"error": {"message": message, "type": "server_error"}}, dict(headers))


Script = Answer | Callable[[dict[str, Any]], Answer]


class ChatServer:
    """A real ``/v1/chat/completions`` server in a thread. Request n (0-based) gets
    ``script[min(n, len(script) - 1)]``: an ``Answer``, or a function of the request body giving one.
    ``requests`` records every request's path, lower-cased headers and JSON body."""

    def __init__(self) -> None:
        self.script: list[Script] = [completion('{"facts": []}')]
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True  # a handler still sleeping never holds up close()
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer_with(self, *script: Script) -> None:
        self.script = list(script)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def respond(self, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        body = json.loads(raw or b"{}")
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            step = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
        if path != "/v1/chat/completions":
            return error(404, f"no route {path}")
        return step(body) if callable(step) else step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                answer = server.respond(self.path, headers, raw)
                if answer.delay and server._stop.wait(answer.delay):
                    return
                if isinstance(answer.body, bytes | str):
                    payload = answer.body.encode() if isinstance(answer.body, str) else answer.body
                    kind = "text/html"
                else:
                    payload, kind = json.dumps(answer.body).encode(), "application/json"
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (its time limit) and closed the connection
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        return Handler


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


def client(server: ChatServer, **kwargs: Any) -> ChatClient:
    kwargs.setdefault("backoff", 0.01)
    return ChatClient(server.base_url, "test-model", kwargs.pop("api_key", SECRET), **kwargs)


# -- the request ------------------------------------------------------------------------------------
def test_complete_json_sends_an_openai_request_and_returns_the_object(server: ChatServer) -> None:
    server.answer_with(completion('{"answer": 42, "items": ["a"]}'))
    result = client(server).complete_json("be terse", "what is it?")
    assert result == {"answer": 42, "items": ["a"]}
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"
    assert request["headers"]["content-type"] == "application/json"
    assert request["body"] == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "be terse"},
            {"role": "user", "content": "what is it?"},
        ],
        "temperature": 0.0,
        "response_format": {"type": "json_object"},
    }


def test_chat_without_key_or_json_mode_sends_neither(server: ChatServer) -> None:
    server.answer_with(completion("plain words"))
    chat = ChatClient(server.base_url + "/chat/completions/", " test-model ", None, temperature=None)
    assert chat.url == server.base_url + "/chat/completions"  # a full path or trailing slash is accepted
    assert chat.chat([{"role": "user", "content": "hi"}]) == "plain words"
    [request] = server.requests
    assert "authorization" not in request["headers"]
    assert request["body"] == {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}


def test_the_key_never_shows(server: ChatServer) -> None:
    server.answer_with(error(401, "Incorrect API key provided"))
    chat = client(server)
    assert SECRET not in repr(chat)
    with pytest.raises(LanguageModelError) as info:
        chat.complete_json("s", "u")
    message = str(info.value)
    assert SECRET not in message
    assert "HTTP 401" in message and "Incorrect API key provided" in message
    assert "MEMORY_LLM_API_KEY" in message  # the fix names where the key comes from
    assert len(server.requests) == 1  # a 4xx is not retried


# -- tolerated answers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"facts": [{"content": "Lives in Porto."}]}\n```',
        'Here is the JSON you asked for:\n```\n{"facts": [{"content": "Lives in Porto."}]}\n```\nDone.',
        'Sure! {"facts": [{"content": "Lives in Porto."}]} Hope this helps {not json}.',
        '  \n{"facts": [{"content": "Lives in Porto."}]}\n',
    ],
)
def test_fenced_or_wrapped_json_is_extracted(server: ChatServer, content: str) -> None:
    server.answer_with(completion(content))
    assert client(server).complete_json("s", "u") == {"facts": [{"content": "Lives in Porto."}]}


def test_parse_json_object_takes_the_first_object_and_refuses_the_rest() -> None:
    assert parse_json_object('note {broken} then {"a": {"b": 1}} and {"c": 2}') == {"a": {"b": 1}}
    assert parse_json_object('<think>a draft: {"c": 2}</think>\n{"c": 3}') == {"c": 3}
    for text, reason in [
        ("", "empty"),
        ("I could not find any facts.", "no JSON object"),
        ('[{"content": "x"}]', "an array"),
        ('```json\n"just a string"\n```', "a string"),
    ]:
        with pytest.raises(ValueError, match=reason):
            parse_json_object(text)


# -- failures, each a LanguageModelError with a clear message ---------------------------------------
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (completion("I cannot help with that."), "no JSON object"),
        (completion('{"facts": [{"content": "cut o', finish_reason="length"), "cut off"),
        (completion('["a", "b"]'), "an array, not an object"),
        (completion(None), "no message content"),
        (Answer(body={"id": "x", "choices": []}), "no choices"),
        (Answer(body={"error": {"message": "model not loaded"}}), "model not loaded"),
        (Answer(body="<html>Bad Gateway</html>"), "not valid JSON"),
        (error(400, "unknown model 'test-model'"), "HTTP 400"),
        (error(404, "not found"), "HTTP 404"),
    ],
)
def test_bad_answers_raise_language_model_errors(server: ChatServer, answer: Answer, expected: str) -> None:
    server.answer_with(answer)
    with pytest.raises(LanguageModelError, match=expected) as info:
        client(server).complete_json("s", "u")
    message = str(info.value)
    assert server.base_url in message and "'test-model'" in message  # names the endpoint and model
    assert len(server.requests) == 1


def test_http_500_is_retried_then_reported_with_the_servers_text(server: ChatServer) -> None:
    server.answer_with(error(500, "CUDA out of memory"))
    with pytest.raises(LanguageModelError) as info:
        client(server, max_retries=2).complete_json("s", "u")
    message = str(info.value)
    assert "HTTP 500" in message and "after 3 attempts" in message and "CUDA out of memory" in message
    assert "check its logs" in message
    assert len(server.requests) == 3


def test_429_then_success_is_retried_honouring_retry_after(server: ChatServer) -> None:
    server.answer_with(error(429, "slow down", **{"Retry-After": "0.3"}), completion('{"ok": true}'))
    started = time.monotonic()
    assert client(server).complete_json("s", "u") == {"ok": True}
    assert time.monotonic() - started >= 0.3  # the server's Retry-After, not the 0.01 s backoff
    assert len(server.requests) == 2
    assert server.bodies[0] == server.bodies[1]


def test_503_then_success_is_retried(server: ChatServer) -> None:
    server.answer_with(error(503, "warming up"), error(502, "bad gateway"), completion('{"ok": 1}'))
    assert client(server).complete_json("s", "u") == {"ok": 1}
    assert len(server.requests) == 3


def test_a_slow_server_hits_the_total_time_limit(server: ChatServer) -> None:
    server.answer_with(Answer(body={"choices": []}, delay=5.0))
    started = time.monotonic()
    with pytest.raises(LanguageModelError, match=r"no answer within the 0\.5 s time limit") as info:
        client(server, timeout=0.5).complete_json("s", "u")
    assert time.monotonic() - started < 1.5
    assert "MEMORY_LLM_TIMEOUT_S" in str(info.value)
    assert len(server.requests) == 1  # a timeout is not retried: the limit is spent


def test_retries_stay_within_the_time_limit(server: ChatServer) -> None:
    server.answer_with(error(503, "busy"))
    started = time.monotonic()
    with pytest.raises(LanguageModelError, match="HTTP 503"):
        client(server, timeout=1.5, backoff=0.3, max_retries=10).complete_json("s", "u")
    assert time.monotonic() - started < 1.5  # waits of 0.3 + 0.6 s fit, 1.2 s more would not
    assert len(server.requests) == 3


def test_a_refused_connection_is_retried_then_reported() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LanguageModelError, match=r"cannot connect after 3 attempt\(s\)") as info:
        ChatClient(url, "m", max_retries=2, backoff=0.01).complete_json("s", "u")
    assert "Check that the server is running" in str(info.value)


def test_a_refused_optional_field_is_dropped_once_and_remembered(server: ChatServer) -> None:
    def picky(body: dict[str, Any]) -> Answer:
        if "response_format" in body:
            return error(400, "'response_format' of type 'json_object' is not supported with this model")
        return completion('{"ok": true}')

    server.answer_with(picky)
    chat = client(server)
    assert chat.complete_json("s", "u") == {"ok": True}
    assert chat.complete_json("s", "u") == {"ok": True}
    assert ["response_format" in body for body in server.bodies] == [True, False, False]


# -- construction -----------------------------------------------------------------------------------
def test_make_chat_client_reads_the_settings(tmp_path: Path) -> None:
    assert make_chat_client(Settings.load(tmp_path, env={})) is None

    env = {
        "MEMORY_LLM_URL": "http://127.0.0.1:11434/v1/",
        "MEMORY_LLM_MODEL": "llama3.1:8b",
        "MEMORY_LLM_KEY_VAR": "MY_LLM_KEY",
        "MY_LLM_KEY": SECRET,
        "MEMORY_LLM_TIMEOUT_S": "7.5",
    }
    chat = make_chat_client(Settings.load(tmp_path, env=env))
    assert chat is not None
    assert chat.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert (chat.model, chat.api_key, chat.timeout, chat.key_var) == (
        "llama3.1:8b",
        SECRET,
        7.5,
        "MY_LLM_KEY",
    )
    assert SECRET not in repr(chat)

    with pytest.raises(LanguageModelError, match="MEMORY_LLM_MODEL is not"):
        make_chat_client(Settings.load(tmp_path, env={"MEMORY_LLM_URL": "http://127.0.0.1:11434/v1"}))


def test_a_url_that_is_not_http_is_a_clear_error() -> None:
    with pytest.raises(LanguageModelError, match="not an http"):
        ChatClient("127.0.0.1:11434/v1", "m")


# -- the size of an answer --------------------------------------------------------------------------
class FloodServer:
    """A real server on 127.0.0.1 whose every answer is a valid chat completion of ``total`` bytes,
    streamed 1 MiB at a time (with or without a Content-Length); ``sent`` counts the bytes it got
    out before the client hung up."""

    def __init__(self, total: int, declare_length: bool) -> None:
        self.sent = 0
        head = b'{"choices": [{"message": {"role": "assistant", "content": "'
        tail = b'"}, "finish_reason": "stop"}]}'
        filler = total - len(head) - len(tail)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # without a Content-Length the body ends when the socket closes

            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if declare_length:
                        self.send_header("Content-Length", str(total))
                    self.end_headers()
                    for part in [
                        head,
                        *[b"x" * (1 << 20)] * (filler >> 20),
                        b"x" * (filler % (1 << 20)),
                        tail,
                    ]:
                        self.wfile.write(part)
                        server.sent += len(part)
                except OSError:  # the client hung up
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.mark.parametrize("declare_length", [False, True])
def test_an_answer_over_the_size_limit_is_abandoned_not_buffered(declare_length: bool) -> None:
    from memory_assets.core.models.language_model import MAX_ANSWER_BYTES

    total = 64 << 20
    flood = FloodServer(total, declare_length)
    try:
        chat = ChatClient(flood.base_url, "test-model", timeout=20.0, backoff=0.01)
        with pytest.raises(LanguageModelError) as info:
            chat.chat([{"role": "user", "content": "hi"}])
        message = str(info.value)
        assert message.startswith(f"chat endpoint {flood.base_url}/chat/completions (model 'test-model'): ")
        assert f"larger than the {MAX_ANSWER_BYTES} byte limit (MAX_ANSWER_BYTES" in message
        assert ("Content-Length 67108864" if declare_length else "bytes received") in message
        assert "MEMORY_LLM_URL" in message
        time.sleep(0.2)  # let the server notice the hang-up
        assert flood.sent < total // 2  # the client stopped reading: the rest was never sent
    finally:
        flood.close()


def test_an_answer_under_the_size_limit_is_read(server: ChatServer) -> None:
    server.answer_with(completion("y" * 100_000))
    assert client(server, max_answer_bytes=200_000).chat([{"role": "user", "content": "hi"}]) == "y" * 100_000
    with pytest.raises(LanguageModelError, match="larger than the 50000 byte limit"):
        client(server, max_answer_bytes=50_000).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2  # an answer too large is not retried
