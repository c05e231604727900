"""A turn's changes as unified diffs, from the turn's history.

A turn records each file's pre-image (``preimages.jsonl``) before changing it, and the sha256
of what it left (``postimages.json``). What the turn left is not stored: it is the pre-image the
next turn that changed the file recorded, or else the file as it is now. When that differs from
the recorded post-image (the file was edited by hand after the turn), the diff says so. A change
a RUN_COMMAND made names the command (``by``).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from codingagent.protocol.commands import file_lines
from codingagent.records.changeset import text_of
from codingagent.records.history import TurnRecord
from codingagent.workspace import PathRejected, Workspace, display_name

MAX_DIFF_BYTES = 1024 * 1024  # either side larger than this: the diff says so and shows nothing
CONTEXT_LINES = 3


@dataclass(frozen=True)
class FileDiff:
    """One file a turn changed. ``diff`` is a unified diff ('' when there is no text to show:
    ``note`` then says why, e.g. a binary file)."""

    path: str
    change: str  # "created", "deleted" or "changed"
    diff: str
    note: str = ""
    by: str = ""  # the command that made the change, when a RUN_COMMAND did (docs/undo.md)


def unified(path: str, before: bytes | None, after: bytes | None) -> FileDiff:
    """The change from ``before`` to ``after`` (``None``: the file did not exist)."""
    change = "created" if before is None else "deleted" if after is None else "changed"
    sides = [b for b in (before, after) if b is not None]
    if any(len(b) > MAX_DIFF_BYTES for b in sides):
        sizes = " -> ".join(f"{len(b):,} bytes" for b in sides)
        return FileDiff(path, change, "", f"too large to show a diff ({sizes})")
    old, new = text_of(before), text_of(after)
    if old is None or new is None:
        sizes = " -> ".join(f"{len(b):,} bytes" for b in sides)
        return FileDiff(path, change, "", f"binary file ({sizes})")
    if before == after:
        return FileDiff(path, change, "", "content unchanged")
    fromfile = f"a/{path}" if before is not None else "/dev/null"
    tofile = f"b/{path}" if after is not None else "/dev/null"
    lines = _unified_lines(file_lines(old), file_lines(new), fromfile, tofile)
    return FileDiff(path, change, "\n".join(lines))


def _unified_lines(old: list[str], new: list[str], fromfile: str, tofile: str) -> list[str]:
    """difflib's unified diff, computed on the lines between the common head and tail only
    (with their context), so its cost follows the change, not the file: difflib's matcher is
    slow on long files. The hunk headers are shifted back to the whole file's line numbers."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    skip, keep = max(0, head - CONTEXT_LINES), max(0, tail - CONTEXT_LINES)
    lines = list(
        difflib.unified_diff(
            old[skip : len(old) - keep],
            new[skip : len(new) - keep],
            fromfile,
            tofile,
            n=CONTEXT_LINES,
            lineterm="",
        )
    )
    return [_HUNK.sub(lambda m: _shift(m, skip), line, count=1) for line in lines] + [""]


_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$")


def _shift(hunk: re.Match[str], lines: int) -> str:
    old, old_length, new, new_length = hunk.groups()
    return f"@@ -{int(old) + lines}{old_length} +{int(new) + lines}{new_length} @@"


def session_diffs(ws: Workspace, folders: list[Path]) -> list[list[FileDiff]]:
    """The diffs of each committed turn of a session (``folders``, oldest first), in order.

    One pass, newest turn first: what a turn left in a file is what the next turn that changed
    it found there, else the file as it is now.
    """
    found: dict[str, bytes | None] = {}  # path -> what a later turn found before changing it
    turns = []
    for folder in reversed(folders):
        record = TurnRecord(folder)
        posts = _postimages(record)
        diffs = []
        for entry in record.preimages().entries:
            path = entry["path"]
            later = path in found
            after = found[path] if later else _current(ws, path)
            before = found[path] = _content(record, entry)
            diff = unified(display_name(path), before, after)  # a command may make any name
            too_large = after is not None and len(after) > MAX_DIFF_BYTES
            if not too_large and _sha256(after) != posts.get(path):
                edited = "after this turn" if later else "since"
                note = "; ".join(
                    filter(None, [diff.note, f"the file was changed by hand {edited}"])
                )
                diff = FileDiff(diff.path, diff.change, diff.diff, note)
            diffs.append(replace(diff, by=entry.get("by", "")))
        turns.append(diffs)
    return turns[::-1]


def _current(ws: Workspace, path: str) -> bytes | None:
    """The file now (at most ``MAX_DIFF_BYTES + 1`` bytes), or None: it does not exist."""
    try:
        return ws.read_bytes(path, limit=MAX_DIFF_BYTES + 1)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PathRejected):
        return None


def _content(record: TurnRecord, entry: dict) -> bytes | None:
    """A pre-image's bytes (at most ``MAX_DIFF_BYTES + 1``), or None: the file did not exist."""
    with record.saved_content(entry) as stream:
        return None if stream is None else stream.read(MAX_DIFF_BYTES + 1)


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _postimages(record: TurnRecord) -> dict[str, str | None]:
    """The sha256 of what the turn left in each file; none for a turn still being written."""
    try:
        return record.postimages()
    except FileNotFoundError:
        return {}
