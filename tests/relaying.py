"""Helpers for the relay's tests (and the extension's): the agent run with ``start --relay`` in
a subprocess, a client that speaks as the extension, and a TCP forwarder standing in for
``ssh -L`` (docs/relay.md)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

EXTENSION = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"  # a made-up extension id
OTHER_EXTENSION = "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba"
ANNOUNCED = re.compile(r"on http://127\.0\.0\.1:(\d+)\. Pairing code: ([A-Z0-9]{4}-[A-Z0-9]{4})")


class RelayClient:
    """Speaks to a relay as the extension does: its Origin, then its token once paired.

    ``chromium``: its GETs are sent as Chromium sends an extension service worker's GET to a
    host it has permission for: no Origin, ``Sec-Fetch-Site: none`` (docs/relay.md).
    """

    def __init__(self, port: int, origin: str | None = EXTENSION, chromium: bool = False) -> None:
        self.base = f"http://127.0.0.1:{port}/relay/v1"
        self.origin = origin
        self.chromium = chromium
        self.token: str | None = None
        self.http = httpx.Client(timeout=30)

    def close(self) -> None:
        self.http.close()

    def headers(self, method: str = "POST") -> dict[str, str]:
        if self.chromium and method == "GET":
            headers = {"Sec-Fetch-Site": "none"}
        else:
            headers = {"Origin": self.origin} if self.origin is not None else {}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(self.base + path, headers=self.headers("GET"), params=params)

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.post(self.base + path, headers=self.headers(), json=body or {})

    def pair(self, code: str) -> dict[str, Any]:
        response = self.post("/pair", {"code": code})
        assert response.status_code == 200, response.text
        self.token = response.json()["token"]
        return dict(response.json())

    def prompt(self, after: str | None = None, wait: float = 20) -> dict[str, Any]:
        params: dict[str, Any] = {"wait": wait} | ({"after": after} if after else {})
        response = self.get("/prompt", **params)
        assert response.status_code == 200, (response.status_code, response.text)
        return dict(response.json())

    def reply(self, prompt_id: str, text: str, url: str = "https://chat.test/c/1") -> Any:
        response = self.post("/reply", {"prompt_id": prompt_id, "text": text, "source_url": url})
        assert response.status_code == 200, response.text
        return response.json()


@dataclass
class Agent:
    process: subprocess.Popen
    port: int
    code: str
    lines: list[str] = field(default_factory=list)  # its stderr, as it comes
    out: list[str] = field(default_factory=list)  # its stdout, as it comes

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} in the agent's output:\n{self.output}")
            time.sleep(0.05)


@contextmanager
def relay_agent(
    root: Path, *args: str, task: str = "t", command: list[str] | None = None
) -> Iterator[Agent]:
    """``codingagent start TASK --relay --relay-port 0 ARGS --root ROOT`` (or ``command``
    ARGS --root ROOT) in a subprocess, once it announced its relay; stopped with Ctrl-C (then
    killed) if it still runs after."""
    start = [sys.executable, "-m", "codingagent", "start", task, "--relay", "--relay-port", "0"]
    command = [*(command or start), "--no-copy"]  # no test touches a clipboard
    process = subprocess.Popen(
        [*command, *args, "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    lines: list[str] = []
    out: list[str] = []
    readers = [_reader(process.stderr, lines), _reader(process.stdout, out)]
    try:
        deadline = time.monotonic() + 30
        while (found := ANNOUNCED.search("".join(lines))) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the agent announced no relay:\n" + "".join(lines))
            time.sleep(0.05)
        yield Agent(process, int(found.group(1)), found.group(2), lines, out)
    finally:
        interrupt(process)
        for reader in readers:
            reader.join(5)


def interrupt(process: subprocess.Popen) -> None:
    """Stop an agent as Ctrl-C does, and kill it if it still runs 10 s later."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _reader(stream: IO[str] | None, into: list[str]) -> threading.Thread:
    """A thread that reads ``stream`` line by line into ``into``."""
    assert stream is not None
    reader = threading.Thread(target=lambda: into.extend(iter(stream.readline, "")), daemon=True)
    reader.start()
    return reader


class Forwarder:
    """A TCP forwarder on 127.0.0.1 (any free port) to ``127.0.0.1:target``: what ``ssh -L``
    does for an agent on another machine, bytes in both directions and nothing more."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Forwarder:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with suppress(OSError):  # shutdown wakes the accept(); close() alone would not
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            for sock in self._open:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
