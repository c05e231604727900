"""A scripted model: a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions
wire format (plain JSON, and server-sent events ending in ``data: [DONE]``) and answers each
request with the next step of its script. It records every request it gets.

Steps: :class:`Say` (an answer, streamed when the request asks for it), :class:`Fail` (an HTTP
error, with ``Retry-After`` if given), :class:`Cut` (a stream closed in the middle),
:class:`Stall` (a stream that stops until the test releases it),
:class:`Garbage` (a 200 whose body is not JSON). Past the script's end it answers HTTP 500.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "scripted failure"
    retry_after: str | None = None


@dataclass(frozen=True)
class Cut:
    text: str  # sent in part, then the connection is closed without the rest or [DONE]


@dataclass(frozen=True)
class Stall:
    text: str  # sent in part; then the server waits for ``release`` (a Ctrl-C test)


@dataclass(frozen=True)
class Garbage:
    body: str


Step = Say | Fail | Cut | Stall | Garbage


class ScriptedModel:
    """The server, as a context manager; ``url`` is its API root (``.../v1``)."""

    def __init__(self, *steps: Step, models: tuple[str, ...] = ("scripted-1",), key: str = ""):
        self.steps = list(steps)
        self.models = models
        self.key = key  # when set, requests must carry "Authorization: Bearer {key}"
        self.requests: list[dict[str, Any]] = []  # the JSON body of each completion request
        self.stalled = threading.Event()  # a Stall step has sent its first part
        self.release = threading.Event()  # lets a Stall step end
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def next_step(self, body: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(body)
            return self.steps.pop(0) if self.steps else Fail(500, "the script has ended")


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": m} for m in model.models]})
            else:
                self._json(404, {"error": {"message": "no such path"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions":
                return self._json(404, {"error": {"message": "no such path"}})
            if model.key and self.headers.get("Authorization") != f"Bearer {model.key}":
                return self._json(401, {"error": {"message": "Incorrect API key provided"}})
            if body.get("model") not in model.models:
                message = f"The model `{body.get('model')}` does not exist"
                return self._json(404, {"error": {"message": message, "code": "model_not_found"}})
            step = model.next_step(body)
            if isinstance(step, Fail):
                headers = {"Retry-After": step.retry_after} if step.retry_after else {}
                self._json(step.status, {"error": {"message": step.message}}, headers)
            elif isinstance(step, Garbage):
                self._send(200, step.body.encode(), "application/json")
            elif body.get("stream"):
                self._stream(body["model"], step)
            else:
                assert isinstance(step, Say), "a cut needs a streamed request"
                self._json(200, _completion(body["model"], step.text))

        def _json(self, status: int, value: object, headers: dict[str, str] | None = None):
            self._send(status, json.dumps(value).encode(), "application/json", headers)

        def _send(self, status: int, data: bytes, kind: str, headers: dict | None = None):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, name: str, step: Say | Cut | Stall) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = [step.text[i : i + 8] for i in range(0, len(step.text), 8)]
            if isinstance(step, Cut | Stall):
                for piece in pieces[: max(1, len(pieces) // 2)]:
                    self._event({"model": name, "choices": [{"delta": {"content": piece}}]})
                if isinstance(step, Stall):
                    model.stalled.set()
                    model.release.wait(30)
                self.close_connection = True  # no terminating chunk: the stream is cut
                return
            for piece in pieces:
                self._event({"model": name, "choices": [{"delta": {"content": piece}}]})
            self._event({"model": name, "choices": [{"delta": {}, "finish_reason": "stop"}]})
            self._event({"model": name, "choices": [], "usage": _usage(step.text)})
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")

        def _event(self, value: object) -> None:
            self._chunk(f"data: {json.dumps(value)}\n\n".encode())

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _usage(text: str) -> dict[str, int]:
    return {"prompt_tokens": 1000, "completion_tokens": len(text) // 4, "total_tokens": 0}


def _completion(name: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": name,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": _usage(text),
    }
