"""A turn's history folder, the write-ahead journal of a turn in flight, and undo.

Every committed turn keeps ``sessions/{id}/turns/{NNNN}/`` (:class:`TurnRecord`, the one place
that knows its file names).  The journal (``sessions/{id}/journal.json``) exists exactly while a
turn is in flight; before any workspace file is written or deleted, its pre-image (bytes and
mode, or "did not exist") is appended to the turn's ``preimages.jsonl`` and fsynced, so a turn
can always be put back: by recovery after a crash, or later by :func:`undo`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .crashpoints import crash_point
from .fsio import atomic_write, folder_syncs_grouped, fsync_folder, naming
from .outbox import ensure_outbox, open_workspace
from .session import SessionError, SessionState, SessionStore, damaged, utc_now
from .workspace import PathRejected, PreImage, Workspace

INLINE_PREIMAGE = 64 * 1024  # pre-images up to this size live in the journal line itself


class TurnRecord:
    """The history folder of one turn, ``sessions/{id}/turns/{NNNN}/``: the reply, the state
    before the turn, its commands, results, the digests of the files it left (post-images),
    its meta data and the pre-images of every file it changed (small ones inline in
    ``preimages.jsonl``, big ones in ``pre/``)."""

    REPLY = "reply.txt"
    STATE_BEFORE = "state-before.json"
    COMMANDS = "commands.json"
    RESULTS = "results.json"
    POSTIMAGES = "postimages.json"
    META = "meta.json"
    PREIMAGES = "preimages.jsonl"
    PRE = "pre"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def reply_path(self) -> Path:
        return self.folder / self.REPLY

    # --- writing ----------------------------------------------------------------------------

    def write_opening(self, reply: bytes, state_before: SessionState) -> None:
        """The reply and the state before the turn, durable (the journal names this folder)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with folder_syncs_grouped():  # the folder is fsynced once, after all three
            self._write({self.REPLY: reply, self.STATE_BEFORE: state_before.to_json()})
            (self.folder / self.PREIMAGES).touch()

    def write_outcome(self, commands: list[Any], results: list[Any], post: dict) -> None:
        self._write({self.COMMANDS: commands, self.RESULTS: results, self.POSTIMAGES: post})

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._write({self.META: meta})

    def _write(self, files: dict[str, Any]) -> None:
        """``bytes``/``str`` values verbatim, others as JSON."""
        for name, value in files.items():
            if not isinstance(value, bytes | str):
                value = json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"
            atomic_write(self.folder / name, value)

    def add_preimage(self, pre: PreImage, index: int) -> None:
        """Append ``pre`` to ``preimages.jsonl`` durably, before its file is first changed."""
        entry: dict[str, Any] = {
            "path": pre.path,
            "mode": pre.mode,
            "blob": None,
            "createdDirs": list(pre.created_dirs),
        }
        if pre.data is not None and len(pre.data) <= INLINE_PREIMAGE:
            entry["inline"] = base64.b64encode(pre.data).decode("ascii")  # one fsync, not three
        elif pre.existed:
            entry["blob"] = blob = f"{self.PRE}/{index:04d}"
            blobs = self.folder / self.PRE
            if not blobs.is_dir():
                blobs.mkdir()
                fsync_folder(self.folder)
            content = pre.data if pre.data is not None else pre.stream
            atomic_write(self.folder / blob, content)  # type: ignore[arg-type]
            fsync_folder(blobs)  # durable now, also inside a turn's grouped folder syncs
        try:
            with open(self.folder / self.PREIMAGES, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a full disk names no file
            naming(e, self.folder / self.PREIMAGES)
            raise

    # --- reading ----------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return self._read(self.META)

    def results(self) -> list[dict[str, Any]]:
        return self._read(self.RESULTS)

    def postimages(self) -> dict[str, str | None]:
        return self._read(self.POSTIMAGES)

    def state_before(self) -> SessionState:
        path = self.folder / self.STATE_BEFORE
        try:
            return SessionState.model_validate_json(path.read_bytes())
        except ValidationError as e:
            raise damaged(path, e) from None

    def _read(self, name: str) -> Any:
        path = self.folder / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, FileNotFoundError) as e:  # JSON and UTF-8 errors are ValueErrors
            raise damaged(path, e) from None

    def preimage_entries(self) -> list[dict[str, Any]]:
        """The pre-images recorded, in order; a torn last line (crash mid-append) is skipped:
        its file had not been touched yet."""
        try:
            lines = (self.folder / self.PREIMAGES).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return entries

    def restore(self, ws: Workspace) -> list[str]:
        """Put back every file the turn changed, last change first; the paths, in that order.

        Files that did not exist are removed before any is written back: that frees space
        first, for a rollback on a full disk.  Saved contents are streamed back from the
        history, never read whole into memory.
        """
        restored = []
        entries = reversed(self.preimage_entries())
        for entry in sorted(entries, key=lambda e: "inline" in e or bool(e["blob"])):
            dirs = tuple(entry["createdDirs"])
            with self._saved_content(entry) as stream:
                ws.restore(PreImage(entry["path"], None, entry["mode"], dirs, stream=stream))
            restored.append(entry["path"])
        return restored

    def _saved_content(self, entry: dict[str, Any]) -> contextlib.AbstractContextManager:
        """The saved content of a pre-image entry as an open binary stream (None: no file)."""
        if "inline" in entry:
            return io.BytesIO(base64.b64decode(entry["inline"]))
        if entry["blob"]:
            return open(self.folder / entry["blob"], "rb")
        return contextlib.nullcontext()


def turn_record(store: SessionStore, session_id: str, sequence: int) -> TurnRecord:
    """The record of the turn that answered outbox ``sequence``."""
    return TurnRecord(store.turn_dir(session_id, sequence))


def turn_log(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """Each committed turn's meta data and results, oldest first."""
    records = map(TurnRecord, store.turns(session_id))
    return [{**record.meta(), "results": record.results()} for record in records]


class Journal:
    """The write-ahead record of one turn in flight.

    ``journal.json`` marks the turn as open; :meth:`record` is the workspace's
    ``before_change`` hook: it saves each file's first pre-image before the file is changed.
    """

    def __init__(self, path: Path, record: TurnRecord, sequence: int, source: str) -> None:
        self.path = path
        self.turn = record
        self.paths: list[str] = []
        # The reply's name is all recovery needs besides reply.txt; meta.json comes at the end.
        opened = {"sequence": sequence, "turn": record.folder.name, "replyFile": source}
        atomic_write(self.path, json.dumps(opened))

    @staticmethod
    def read(path: Path) -> dict[str, Any] | None:
        """The open journal at ``path``, or ``None`` when no turn is in flight."""
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as e:  # cut short or edited by hand
            raise damaged(path, e, "a valid journal") from None

    def record(self, pre: PreImage) -> None:
        if pre.path in self.paths:
            return  # the first pre-image is the one that matters
        self.turn.add_preimage(pre, len(self.paths))
        self.paths.append(pre.path)
        crash_point("preimage")

    def close(self) -> None:
        self.path.unlink()


@dataclass
class UndoReport:
    turns: list[int]  # the sequence numbers of the undone turns, newest first
    restored: list[str]  # files put back
    state: SessionState
    outbox: Path


def undo(store: SessionStore, session_id: str, turns: int = 1, force: bool = False) -> UndoReport:
    """Restore the files of the last ``turns`` turns exactly and rewind the session.

    Refuses, changing nothing, if a file those turns wrote was changed since (unless ``force``).
    Undone turns' history is kept in ``undone/``.
    """
    state = store.load(session_id)
    if store.journal_path(session_id).exists():
        raise SessionError(f"Session {session_id} has an interrupted turn; resume it first")
    history = store.turns(session_id, state.sequence_number)
    if not 1 <= turns <= len(history):
        raise SessionError(f"Session {session_id} has {len(history)} turn(s) to undo, not {turns}")
    undoing = [TurnRecord(folder) for folder in history[-turns:]]
    ws = open_workspace(store, state)
    expected: dict[str, str | None] = {}
    for record in undoing:  # oldest first, so the newest post-image of each path wins
        expected |= record.postimages()
    changed = sorted(path for path, digest in expected.items() if digest_of(ws, path) != digest)
    if changed and not force:
        raise SessionError(
            f"Nothing undone: {', '.join(changed)} changed since the agent wrote "
            f"{'it' if len(changed) == 1 else 'them'}; use --force to overwrite those changes"
        )
    restored = [path for record in reversed(undoing) for path in record.restore(ws)]
    rewound = undoing[0].state_before()
    rewound.updated_at = utc_now()
    for sequence in range(rewound.sequence_number + 1, state.sequence_number + 1):
        store.outbox_path(session_id, sequence).unlink(missing_ok=True)
    outbox = ensure_outbox(store, rewound)
    store.save(rewound)
    for record in undoing:
        store.set_aside(session_id, record.folder, "undone")
    numbers = [int(record.folder.name) for record in reversed(undoing)]
    return UndoReport(numbers, list(dict.fromkeys(restored)), rewound, outbox)


def digest_of(ws: Workspace, path: str) -> str | None:
    """sha256 of a workspace file, or None if it does not exist."""
    try:
        return hashlib.sha256(ws.read_bytes(path)).hexdigest()
    except (FileNotFoundError, PathRejected):
        return None
