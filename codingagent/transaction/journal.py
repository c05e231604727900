"""The write-ahead journal of a turn in flight.

The journal (``sessions/{id}/journal.json``) exists exactly while a turn (or an undo,
:mod:`codingagent.transaction.undo`) is in flight. Before any workspace file is written or
deleted, its pre-image (bytes and mode, or "did not exist") is appended to the turn's record
(``preimages.jsonl`` in ``sessions/{id}/turns/{NNNN}/``, framed and checksummed there:
:class:`~codingagent.records.history.TurnRecord`) and fsynced, so a turn can always be put
back: by recovery after a crash (:mod:`codingagent.session.recovery`), or later by undo. A
RUN_COMMAND, which may change any file, is covered by a ``command`` record written before it
runs and naming its overlay layer or the session's shadow copy of the workspace; its changes'
pre-images follow it (:mod:`codingagent.transaction.capture`, docs/undo.md). The turn lends
the journal to the executor as the workspace's :class:`~codingagent.workspace.preimage.Keeper`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from codingagent.execute.context import CommandFailed
from codingagent.fsio import atomic_write
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.state import SessionError, damaged
from codingagent.transaction.crashpoints import crash_point
from codingagent.workspace import PreImage

PREIMAGE_CAP = 50 * 1024 * 1024  # bytes of pre-images one turn may keep (max_preimage_bytes)


def refuse_if_interrupted(store: SessionStore, session_id: str) -> None:
    """A SessionError while an interrupted turn waits for recovery (its journal is there)."""
    if store.journal_path(session_id).exists():
        raise SessionError(
            f"Session {session_id} has an interrupted turn; run 'codingagent resume "
            f"{session_id}' to recover it first"
        )


class Journal:
    """The write-ahead record of one turn in flight.

    ``journal.json`` marks the turn as open. It is the turn's
    :class:`~codingagent.workspace.preimage.Keeper`: :meth:`record` saves each file's first
    pre-image before the file is changed, refusing the change when the turn's pre-images would
    pass ``preimage_cap`` bytes (sparse files count by the bytes they really hold, and their
    holes are kept).
    """

    def __init__(
        self,
        path: Path,
        record: TurnRecord,
        sequence: int,
        source: str,
        preimage_cap: int = PREIMAGE_CAP,
    ) -> None:
        self.path = path
        self.turn = record
        self.paths: list[str] = []
        self.preimage_cap = preimage_cap
        self.saved = 0  # bytes of pre-images kept so far
        # The reply's name is all recovery needs besides reply.txt (and its mark, when it was
        # read from a rendered page: history.keep_reply); meta.json comes at the end.
        opened = {"sequence": sequence, "turn": record.folder.name, "replyFile": source}
        atomic_write(self.path, json.dumps(opened))

    @staticmethod
    def read(path: Path) -> dict[str, Any] | None:
        """The open journal at ``path``, or ``None`` when no turn (or undo) is in flight."""
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as e:  # cut short or edited by hand
            raise damaged(path, e, "a valid journal") from None

    def record(self, pre: PreImage) -> None:
        if pre.path in self.paths:
            return  # the first pre-image is the one that matters
        size = _stored_size(pre)
        if self.saved + size > self.preimage_cap:
            raise CommandFailed(
                f"Not changed: keeping '{pre.path}' ({size:,} bytes) so that this turn can be "
                f"undone would pass the {self.preimage_cap:,} bytes a turn may keep "
                "(setting max_preimage_bytes)"
            )
        self.turn.add_preimage(pre, len(self.paths))
        self.saved += size
        self.paths.append(pre.path)
        crash_point("preimage")

    def record_all(self, pres: list[PreImage]) -> None:
        """The pre-images of the files a reply's file commands will write, recorded before
        the first command runs, in one append and one fsync (a turn of many writes pays one,
        not one a file). Those already recorded are left out; at the first that would pass the
        cap, the rest are left to the command that changes each (it is then refused, by
        name)."""
        kept: list[PreImage] = []
        saved = self.saved
        for pre in pres:
            if pre.path in self.paths or any(pre.path == each.path for each in kept):
                continue
            size = _stored_size(pre)
            if saved + size > self.preimage_cap:
                break
            kept.append(pre)
            saved += size
        with self.turn.held():
            for n, pre in enumerate(kept):
                self.turn.add_preimage(pre, len(self.paths) + n)
        self.paths += [pre.path for pre in kept]
        self.saved = saved
        for _ in kept:  # (a kill here finds all of them durable, no file changed yet)
            crash_point("preimage")

    def mark(self, entry: dict[str, Any]) -> None:
        """Append a record that is no file's pre-image (a command's marks: docs/undo.md)."""
        self.turn.add_mark(entry)

    def close(self) -> None:
        self.path.unlink()


def _stored_size(pre: PreImage) -> int:
    """The bytes keeping ``pre`` costs: a sparse file's holes cost nothing."""
    if pre.data is not None:
        return len(pre.data)
    if pre.stream is None:
        return 0
    info = os.fstat(pre.stream.fileno())
    return min(info.st_size, info.st_blocks * 512) if hasattr(info, "st_blocks") else info.st_size
