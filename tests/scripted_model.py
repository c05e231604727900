"""A scripted model: fake servers of each API we speak (tests/fake_apis.py), answering each
request with the next step of a script and recording every request.

In-process, ``model.transport`` (an ``httpx.MockTransport``) stands in for the network; as a
context manager, the same fake is served over a real HTTP server on 127.0.0.1 (``model.url``),
for the end-to-end tests and the ones that run the agent in a subprocess.

Steps: :class:`Say` (an answer, streamed when the request asks for it; ``cut`` makes it stop at
the output limit), :class:`Fail` (an HTTP error, with ``Retry-After`` if given), :class:`Cut` (a
stream closed in the middle), :class:`Stall` (a stream that stops until the test releases it),
:class:`Garbage` (a 200 whose body is not JSON). Past the script's end it answers HTTP 500.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass(frozen=True)
class Say:
    text: str
    cut: bool = False  # the answer stopped at the output limit (finish_reason: length)
    thinking: str = ""  # reasoning sent apart from the text (the local fakes send it)


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "scripted failure"
    retry_after: str | None = None


@dataclass(frozen=True)
class Cut:
    text: str  # sent in part, then the connection is closed without the rest or the end event


@dataclass(frozen=True)
class Stall:
    text: str  # sent in part; then the server waits for ``release`` (a Ctrl-C test)


@dataclass(frozen=True)
class Garbage:
    body: str


Step = Say | Fail | Cut | Stall | Garbage


class ScriptedModel:
    """A fake of ``api``'s server with a script; a context manager serves it on 127.0.0.1."""

    def __init__(
        self,
        *steps: Step,
        models: tuple[str, ...] = ("scripted-1",),
        key: str = "",
        api: str = "openai",
    ):
        from fake_apis import FAKES
        from fake_local import LOCAL_FAKES

        self.steps = list(steps)
        self.models = models
        self.key = key  # when set, requests must carry it as the API expects
        self.api = api
        self.requests: list[dict[str, Any]] = []  # the JSON body of each completion request
        self.headers: list[httpx.Headers] = []  # and its headers
        self.stalled = threading.Event()  # a Stall step has sent its first part
        self.release = threading.Event()  # lets a Stall step end
        self.root = "http://fake.test"  # replaced by the real address once served
        self._lock = threading.Lock()
        self.fake = (FAKES | LOCAL_FAKES)[api](self)
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The profile's base_url for this API."""
        return self.root + self.fake.prefix

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.fake.handle)

    def __enter__(self) -> ScriptedModel:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _bridge(self))
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll: shutdown() waits for it, and every test with a model pays that wait.
        threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def next_step(self, body: dict[str, Any], headers: httpx.Headers) -> Step:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.steps.pop(0) if self.steps else Fail(500, "the script has ended")

    def pieces(self, step: Say | Cut | Stall) -> Iterator[str]:
        """The text of a streamed step in pieces; a cut or stalled step stops half way."""
        pieces = [step.text[i : i + 8] for i in range(0, len(step.text), 8)]
        if isinstance(step, Say):
            yield from pieces
            return
        yield from pieces[: max(1, len(pieces) // 2)]
        if isinstance(step, Stall):
            self.stalled.set()
            self.release.wait(30)
        raise httpx.RemoteProtocolError("the scripted stream was cut")


def _bridge(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    """A real HTTP server's handler that hands each request to the fake's ``handle``."""

    class Bridge(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Each chunk is its own small write: with Nagle's algorithm on, one waits for the
        # client's delayed ACK (about 40 ms here), which every test with a model would pay.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._bridge(b"")

        def do_POST(self) -> None:
            self._bridge(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def _bridge(self, content: bytes) -> None:
            request = httpx.Request(
                self.command,
                model.root + self.path,
                headers=list(self.headers.items()),
                content=content,
            )
            response = model.fake.handle(request)
            self.send_response(response.status_code)
            for name, value in response.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for data in response.stream:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
            except httpx.RemoteProtocolError:  # a cut: no terminating chunk
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")

    return Bridge
