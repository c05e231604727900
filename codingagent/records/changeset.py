"""What a session (or one of its turns) changed in the workspace, as one unified diff:
``codingagent diff`` and the page's download (docs/undo.md, "The session as a patch").

The "before" of each file is the first pre-image its turns kept (file commands' and
RUN_COMMAND's alike: :mod:`.history`); the "after" is the file as the next turn found it
(its next pre-image), or as it is now in the workspace. The text is git's: ``diff --git``,
``a/`` and ``b/`` paths, ``new file mode`` / ``deleted file mode``, ``\\ No newline at end of
file``, so ``patch -R -p1`` (and ``git apply -R``) gives back the files as they were.
A file that is not text (NUL bytes, not UTF-8) is named, not shown: a patch cannot carry it.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.state import SessionError
from codingagent.workspace import PathRejected, Workspace


@dataclass(frozen=True)
class FileChange:
    path: str
    before: bytes | None  # None: the file did not exist
    before_mode: int | None
    after: bytes | None
    after_mode: int | None


def changes(store: SessionStore, session_id: str, turn: int | None = None) -> list[FileChange]:
    """The files the session's committed turns (or only turn ``turn``, by its sequence
    number) changed, before and after, sorted by path; unchanged ones left out."""
    state = store.load(session_id)
    folders = store.turns(session_id, state.sequence_number)
    numbers = [int(folder.name) for folder in folders]
    if turn is not None and turn not in numbers:
        known = ", ".join(map(str, numbers)) or "none yet"
        raise SessionError(f"Session {session_id} has no turn {turn} (its turns: {known})")
    chosen = [f for f in folders if turn is None or int(f.name) == turn]
    later = [f for f in folders if turn is not None and int(f.name) > turn]
    before = _first_preimages(chosen)
    after = _first_preimages(later)
    ws = Workspace(Path(state.workspace), protected=store.protected)
    found = []
    for path, (data, mode) in sorted(before.items()):
        then = after.get(path)
        new_data, new_mode = then if then is not None else _now(ws, path)
        if (data, _kind(mode)) != (new_data, _kind(new_mode)):
            found.append(FileChange(path, data, mode, new_data, new_mode))
    return found


def _first_preimages(folders: list[Path]) -> dict[str, tuple[bytes | None, int | None]]:
    """Each path's first pre-image in these turns: its content (None: no file) and mode."""
    first: dict[str, tuple[bytes | None, int | None]] = {}
    for folder in folders:
        record = TurnRecord(folder)
        for entry in record.preimages().entries:
            if entry["path"] in first:
                continue
            existed = "inline" in entry or bool(entry["blob"])
            if not existed:
                first[entry["path"]] = (None, None)
                continue
            with record.saved_content(entry) as stream:
                first[entry["path"]] = (stream.read(), entry["mode"])
    return first


def _now(ws: Workspace, path: str) -> tuple[bytes | None, int | None]:
    try:
        data = ws.read_bytes(path)
        mode = os.stat(ws.resolve(path)).st_mode
    except (OSError, PathRejected):
        return None, None
    return data, mode


def _kind(mode: int | None) -> str:
    if mode is None:
        return ""
    return "100755" if mode & stat.S_IXUSR else "100644"


def unified(found: list[FileChange]) -> tuple[str, list[str]]:
    """The changes as one git-style unified diff, and the paths it could not carry
    (binary files)."""
    parts: list[str] = []
    binary: list[str] = []
    for change in found:
        old, new = text_of(change.before), text_of(change.after)
        head = [f"diff --git a/{change.path} b/{change.path}\n"]
        source, target = f"a/{change.path}", f"b/{change.path}"
        if change.before is None:
            head.append(f"new file mode {_kind(change.after_mode)}\n")
            source = "/dev/null"
        elif change.after is None:
            head.append(f"deleted file mode {_kind(change.before_mode)}\n")
            target = "/dev/null"
        elif _kind(change.before_mode) != _kind(change.after_mode):
            head += [
                f"old mode {_kind(change.before_mode)}\n",
                f"new mode {_kind(change.after_mode)}\n",
            ]
        if old is None or new is None:
            binary.append(change.path)
            parts += [*head, f"Binary files {source} and {target} differ\n"]
            continue
        body = list(difflib.unified_diff(_lines(old), _lines(new), source, target))
        if body:
            body[0], body[1] = f"--- {source}\n", f"+++ {target}\n"
        parts += head + [
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in body
        ]
    return "".join(parts), binary


def text_of(data: bytes | None) -> str | None:
    """The text of a file's content ("" for none); None when it is not text."""
    if data is None:
        return ""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    """The lines of ``text``, each with its ``\\n`` (the last one may have none); only
    ``\\n`` ends a line, as in a patch."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
