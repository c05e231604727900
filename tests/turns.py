"""Applying a reply to a session, as a test does: its text, or a file as the inbox source and
``codingagent step`` do. The one helper the tests that apply replies share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codingagent.sandbox.shell import Shell
from codingagent.session.replies import REPLY_SIZE_CAP
from codingagent.session.store import SessionStore
from codingagent.session.turn import TurnReport, apply_reply
from codingagent.sources.inbox import hand_off, read_reply_file


def apply_file(
    store: SessionStore, sid: str, path: Path, max_reply_bytes: int = REPLY_SIZE_CAP, **options: Any
) -> TurnReport:
    reply = read_reply_file(path, max_reply_bytes)
    report = apply_reply(
        store,
        sid,
        reply.data,
        source=reply.source,
        size=reply.size,
        max_reply_bytes=max_reply_bytes,
        **options,
    )
    hand_off(reply, report, store.inbox)
    return report


def step(store: SessionStore, sid: str, text: str | bytes, **options: Any) -> TurnReport:
    """Apply the reply ``text`` (saved as ``r.txt``) to the session as one turn."""
    data = text.encode() if isinstance(text, str) else text
    options.setdefault("shell", Shell(timeout=10))
    return apply_reply(store, sid, data, source=options.pop("source", "r.txt"), **options)
