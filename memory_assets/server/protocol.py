"""uvicorn's HTTP/1.1 protocols, answering a request they cannot parse in the API's JSON.

A request uvicorn's parser refuses (a control character such as NUL in a header value, a
malformed request line) never reaches the app: uvicorn answers it 400 itself, in plain text.
These subclasses keep uvicorn's behaviour (the 400, then the connection closed) and only write
the body as every other error of the server is written (``errors.py``: ``{error, detail, fix}``,
code ``invalid_request``). ``http_protocol()`` is the one uvicorn would pick (httptools when it
is installed, else h11), passed to uvicorn as its ``http`` class.
"""

from uvicorn.protocols.http.h11_impl import H11Protocol

from memory_assets.server.errors import error_bytes

DETAIL = (
    "the request is not valid HTTP/1.1 (a malformed request line or header: a header value holding "
    "a control character such as NUL, say)"
)
FIX = "send printable ASCII in the request line and the headers (a bearer token is printable)"


def _response() -> bytes:
    body = error_bytes(400, "invalid_request", DETAIL, FIX)
    return (
        b"HTTP/1.1 400 Bad Request\r\n"
        b"content-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n"
        b"connection: close\r\n\r\n" + body
    )


class JsonH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        self.transport.write(_response())
        self.transport.close()


def http_protocol() -> type:
    """The protocol class for uvicorn's ``http`` setting: httptools' when installed, else h11's."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is not installed: uvicorn itself would use h11
        return JsonH11Protocol

    class JsonHttpToolsProtocol(HttpToolsProtocol):
        def send_400_response(self, msg: str) -> None:
            self.transport.write(_response())
            self.transport.close()

    return JsonHttpToolsProtocol
