"""A turn's history folder, ``sessions/{id}/turns/{NNNN}/`` (:class:`TurnRecord`): the reply, the
state before, the commands, results and meta, the digests of the files it left, and the
pre-images of every file it changed, each written durably; the framed, checksummed lines of
``preimages.jsonl`` (:func:`frame`, :func:`read_frames`); and :func:`turn_log`, each turn's
outcome in short (a queue's summary rows)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codingagent.fsio import O_CLOEXEC, atomic_write, folder_syncs_grouped, fsync_folder, naming
from codingagent.records.store import SessionStore
from codingagent.state import SessionState, damaged
from codingagent.workspace import PathRejected, PreImage, Workspace

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
        self._held: list[dict[str, Any]] | None = None  # records waiting for :meth:`held`'s end

    @property
    def reply_path(self) -> Path:
        return self.folder / self.REPLY

    # --- writing ----------------------------------------------------------------------------

    def write_opening(
        self, reply: bytes, state_before: SessionState, rendered: bool = False
    ) -> None:
        """The reply and the state before the turn, durable (the journal names this folder);
        ``rendered``: the reply was read from a chat's rendered page (see :func:`keep_reply`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with folder_syncs_grouped():  # the folder is fsynced once, after all three
            keep_reply(self.folder, reply, rendered)
            self._write({self.STATE_BEFORE: state_before.to_json()})
            (self.folder / self.PREIMAGES).touch()

    def clear_outcome(self) -> None:
        """Remove all but the reply (and its mark), for the reply to be applied again in this
        folder."""
        for entry in self.folder.iterdir():
            if entry.name in (self.REPLY, RENDERED):
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def write_outcome(self, commands: list[Any], results: list[Any], post: dict) -> None:
        self._write({self.COMMANDS: commands, self.RESULTS: results, self.POSTIMAGES: post})

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._write({self.META: meta})

    def _write(self, files: dict[str, Any]) -> None:
        """``bytes``/``str`` values verbatim, lists as JSON one item a line (the fast encoder:
        a turn of many commands must not stall), others as indented JSON."""
        for name, value in files.items():
            if isinstance(value, list):
                items = (json.dumps(item, ensure_ascii=False, default=str) for item in value)
                value = "[\n" + ",\n".join(items) + "\n]\n" if value else "[]\n"
            elif not isinstance(value, bytes | str):
                value = _json(value)
            atomic_write(self.folder / name, value, later=True)  # (in a turn: at its end)

    def add_preimage(self, pre: PreImage, index: int) -> None:
        """Append ``pre`` to ``preimages.jsonl`` durably, before its file is first changed.

        Each record is one framed line (see :func:`frame`).  A torn tail left by an append
        that failed (a full disk) is cut off before the next append, and a failing append
        takes its own bytes back, so a later record is never glued onto a broken one.
        """
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
        if pre.by:
            entry["by"] = pre.by
        self.add_mark(entry)

    def add_mark(self, entry: dict[str, Any]) -> None:
        """Append one record to ``preimages.jsonl``, durably (or at the end of :meth:`held`)."""
        if self._held is not None:
            self._held.append(entry)
            return
        self._append([entry])

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Append the records added meanwhile at the end, in one write and one fsync: for
        changes already made (a command's), which the journal's open mark covers until then."""
        self._held = []
        try:
            yield
            self._append(self._held)
        finally:
            self._held = None

    def _append(self, entries: list[dict[str, Any]]) -> None:
        try:
            append_frames(self.folder / self.PREIMAGES, entries)
        except OSError as e:  # a full disk names no file
            naming(e, self.folder / self.PREIMAGES)
            raise

    # --- reading ----------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return self._read(self.META)

    def results(self) -> list[dict[str, Any]]:
        return self._read(self.RESULTS)

    def commands(self) -> list[dict[str, Any]]:
        return self._read(self.COMMANDS)

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

    def preimages(self) -> Records:
        """The pre-images recorded, in order, and the damaged records (see :func:`read_frames`)."""
        try:
            data = (self.folder / self.PREIMAGES).read_bytes()
        except FileNotFoundError:
            return Records([], [])
        return read_frames(data)

    def saved_content(self, entry: dict[str, Any]) -> contextlib.AbstractContextManager:
        """The saved content of a pre-image entry as an open binary stream (None: no file)."""
        if "inline" in entry:
            return io.BytesIO(base64.b64decode(entry["inline"]))
        if entry["blob"]:
            return open(self.folder / entry["blob"], "rb")
        return contextlib.nullcontext()


def _json(value: Any) -> bytes:
    """Indented JSON in UTF-8; with ``\\u`` escapes when it holds a name that is not UTF-8 (a
    command can make one: the post-images name it)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(value, indent=2, default=str) + "\n").encode("ascii")


@dataclass
class Records:
    entries: list[dict[str, Any]]
    damaged: list[int]  # line numbers (from 1) of complete records that failed their check
    # A command's records (capture.py): "command" (its snapshot taken), "dirs" (folders it
    # made and removed), "unkept" (a change not kept), "untracked", "command-done".
    marks: list[dict[str, Any]] = field(default_factory=list)

    def open_command(self) -> dict[str, Any] | None:
        """The ``command`` mark of a command stopped before its changes were recorded: it
        names the shadow index it was taken with (``index``) or its overlay layer
        (``layer``)."""
        opened = None
        for mark in self.marks:
            if mark["kind"] == "command":
                opened = mark
            elif mark["kind"] == "command-done" and opened is not None:
                key = "layer" if "layer" in opened else "index"
                if mark.get(key) == opened[key]:
                    opened = None
        return opened

    def layers(self) -> set[str]:
        """The overlay layers the turn's commands ran on (in the session's folder)."""
        return {
            mark["layer"] for mark in self.marks if mark["kind"] == "command" and "layer" in mark
        }

    def unkept(self) -> list[str]:
        """What commands changed that was not kept, so cannot be put back."""
        return [
            f"'{mark['path']}' (changed by a command, not kept: {mark['why']})"
            for mark in self.marks
            if mark["kind"] == "unkept"
        ]

    def untracked(self) -> list[str]:
        """The ignored folders commands touched (not kept by rule)."""
        return [p for mark in self.marks if mark["kind"] == "untracked" for p in mark["paths"]]


def frame(entry: dict[str, Any]) -> bytes:
    """One record as a line: the CRC-32 of its JSON in 8 hex digits, a space, the JSON."""
    body = json.dumps(entry).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(body), body)


def read_frames(data: bytes) -> Records:
    """The records of a framed file: pre-images in ``entries``, others in ``marks``.

    A last line without its newline is a torn append: its file had not been changed yet
    (the change waits for the append), so it is no record.  A complete line that fails its
    checksum is damage, reported, never skipped silently.
    """
    lines = data.split(b"\n")[:-1]  # the piece after the last newline is a torn tail
    records = Records([], [])
    for number, line in enumerate(lines, 1):
        crc, _, body = line.partition(b" ")
        try:
            if int(crc, 16) != zlib.crc32(body) or len(crc) != 8:
                raise ValueError
            entry = json.loads(body)
            (records.marks if "kind" in entry else records.entries).append(entry)
        except ValueError:
            records.damaged.append(number)
    return records


def append_frame(path: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to the framed file ``path`` and fsync it (see :func:`append_frames`)."""
    append_frames(path, [entry])


def append_frames(path: Path, entries: list[dict[str, Any]]) -> None:
    """Append ``entries`` to the framed file ``path`` in one write, and fsync it.

    A torn tail (bytes after the last newline) is cut off first; if this append fails, the
    file is cut back to where it was, so the next append starts on a clean line.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | O_CLOEXEC, 0o666)
    try:
        end = _whole_lines_end(fd)
        if end != os.fstat(fd).st_size:  # (a truncate to the same size still costs a journal
            os.ftruncate(fd, end)  # write on some file systems)
        data = b"".join(map(frame, entries))
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, data[written:], end + written)
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)


def _whole_lines_end(fd: int) -> int:
    """The offset just past the last newline of the file ``fd`` (0 if it has none)."""
    end = os.fstat(fd).st_size
    chunk = 64 * 1024
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


RENDERED = "rendered"  # beside a kept reply.txt: it was read from a chat's rendered page


def keep_reply(folder: Path, reply: bytes, rendered: bool) -> Path:
    """Keep a reply as ``folder/reply.txt`` (a turn's, a refused one's), marked when it was
    read from a chat's rendered page: applied again from there (``step FILE --force``), it is
    read as rendered again (docs/protocol.md 4.6), never as raw text."""
    kept = folder / TurnRecord.REPLY
    if rendered:  # first: a reply.txt is never there unmarked
        atomic_write(folder / RENDERED, b"")
    atomic_write(kept, reply)
    return kept


def kept_rendered(path: Path) -> bool:
    """Whether ``path`` is a reply the agent kept after reading it from a rendered page."""
    return path.name == TurnRecord.REPLY and (path.parent / RENDERED).is_file()


def turn_record(store: SessionStore, session_id: str, sequence: int) -> TurnRecord:
    """The record of the turn that answered outbox ``sequence``."""
    return TurnRecord(store.turn_dir(session_id, sequence))


def turn_log(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """Each committed turn's meta data and results, oldest first."""
    records = map(TurnRecord, store.turns(session_id))
    return [{**record.meta(), "results": record.results()} for record in records]


def digest_of(ws: Workspace, path: str) -> str | None:
    """sha256 of a workspace file, or None if it does not exist; read in chunks (a command can
    leave a file of any size)."""
    digest = hashlib.sha256()
    try:
        with ws.open_bytes(path) as f:
            while chunk := f.read(1024 * 1024):
                digest.update(chunk)
    except (FileNotFoundError, PathRejected):
        return None
    return digest.hexdigest()
