"""Applying a reply to a session, as a test does: its text, or a file as the inbox source and
``codingagent step`` do. The one helper the tests that apply replies share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codingagent.protocol.replies import REPLY_SIZE_CAP
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.seams import Reply, TurnReport
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.sources.inbox import hand_off, read_reply_file


def apply_file(
    store: SessionStore, sid: str, path: Path, max_reply_bytes: int = REPLY_SIZE_CAP, **options: Any
) -> TurnReport:
    reply = read_reply_file(path, max_reply_bytes)
    force = options.pop("force", False)
    turn = TurnOptions(max_reply_bytes=max_reply_bytes, **options)
    report = apply_reply(store, sid, reply, turn, force)
    hand_off(reply, report, store.inbox)
    return report


def step(store: SessionStore, sid: str, text: str | bytes, **options: Any) -> TurnReport:
    """Apply the reply ``text`` (saved as ``r.txt``) to the session as one turn."""
    data = text.encode() if isinstance(text, str) else text
    options.setdefault("shell", Shell(timeout=10))
    reply = Reply(data, options.pop("source", "r.txt"), meta=options.pop("extra_meta", {}))
    force = options.pop("force", False)
    return apply_reply(store, sid, reply, TurnOptions(**options), force)
