"""A small WebDriver BiDi client for the extension's Firefox tests (tests/firefox.py):
Debian's Firefox ESR started with its own remote agent (``--remote-debugging-port``), spoken to
over one WebSocket, no geckodriver and nothing downloaded.

The WebSocket is RFC 6455's client side written out here (a handshake, masked text frames out,
text, ping and close frames in), because the venv has no WebSocket library and this is all the
tests need. :class:`Bidi` sends commands and waits for their answers; events are kept in order
for :meth:`Bidi.events`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import threading
import time
from typing import Any


class BidiError(Exception):
    """A command the browser answered with an error."""


class WebSocket:
    """A blocking WebSocket client: text messages in and out."""

    def __init__(self, host: str, port: int, path: str, timeout: float = 30) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the browser closed the WebSocket handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"no WebSocket: {head.decode(errors='replace')}")
        self.sock.settimeout(None)
        self._send_lock = threading.Lock()

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self._send_lock:
            self.sock.sendall(header + mask + masked)

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the browser closed the WebSocket")
            data += chunk
        return data

    def receive(self) -> str:
        """The next text message (fragments joined; pings answered)."""
        message = b""
        while True:
            first, second = self._exactly(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exactly(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exactly(8))[0]
            mask = self._exactly(4) if second & 0x80 else b""
            payload = self._exactly(size)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("the browser closed the WebSocket")
            if opcode == 0x9:  # ping: pong with the same payload
                with self._send_lock:
                    pong = struct.pack("!BB", 0x8A, 0x80 | len(payload)) + b"\0" * 4 + payload
                    self.sock.sendall(pong)  # masked with zeros: the payload as it is
                continue
            if opcode in (0x0, 0x1):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class Bidi:
    """One BiDi session's connection: ``command(method, **params)`` returns the result."""

    def __init__(self, port: int) -> None:
        self.ws = WebSocket("127.0.0.1", port, "/session")
        self._next = 0
        self._cond = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while True:
                message = json.loads(self.ws.receive())
                with self._cond:
                    if message.get("type") == "event":
                        self._events.append(message)
                    elif "id" in message:
                        self._answers[message["id"]] = message
                    self._cond.notify_all()
        except (ConnectionError, OSError, ValueError):
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def command(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        return self.call(method, params, timeout)

    def call(self, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """``command`` with the parameters as a dict (names that are not Python's)."""
        with self._cond:
            self._next += 1
            ident = self._next
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise BidiError(
                        f"{method}: no answer ({'closed' if self._closed else 'timeout'})"
                    )
                self._cond.wait(left)
            answer = self._answers.pop(ident)
        if answer.get("type") == "error":
            raise BidiError(f"{method}: {answer.get('error')}: {answer.get('message')}")
        return dict(answer.get("result") or {})

    def events(self, method: str) -> list[dict[str, Any]]:
        """The events of ``method`` received so far, their params."""
        with self._cond:
            return [e["params"] for e in self._events if e.get("method") == method]

    def close(self) -> None:
        self.ws.close()
        self._reader.join(5)
