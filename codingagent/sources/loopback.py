"""The one way the agent's local servers (the chat-tab relay, the page) listen: a socket on
the loopback address only, so nothing off this machine reaches them (docs/relay.md,
docs/frontends.md)."""

from __future__ import annotations

import socket

from codingagent.settings import SettingsError

HOST = "127.0.0.1"


def listen(port: int, backlog: int, refused: str, advice: str) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (0: any free port); when it cannot, a
    :class:`SettingsError` saying ``refused`` (what could not listen), why, and ``advice``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(backlog)
    except OSError as e:
        sock.close()
        raise SettingsError(f"{refused} on {HOST}:{port}: {e.strerror or e} ({advice})") from None
    return sock
