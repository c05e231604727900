"""A turn's changes as unified diffs, from the turn's history.

A turn records each file's pre-image (``preimages.jsonl``) before changing it, and the sha256
of what it left (``postimages.json``). What the turn left is not stored: it is the pre-image the
next turn that changed the file recorded, or else the file as it is now. When that differs from
the recorded post-image (the file was edited by hand after the turn), the diff says so.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..commands import file_lines
from ..turn import _preimage_entries, _saved_content
from ..workspace import PathRejected, Workspace

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


def unified(path: str, before: bytes | None, after: bytes | None) -> FileDiff:
    """The change from ``before`` to ``after`` (``None``: the file did not exist)."""
    change = "created" if before is None else "deleted" if after is None else "changed"
    sides = [b for b in (before, after) if b is not None]
    if any(len(b) > MAX_DIFF_BYTES for b in sides):
        sizes = " -> ".join(f"{len(b):,} bytes" for b in sides)
        return FileDiff(path, change, "", f"too large to show a diff ({sizes})")
    old, new = _text(before), _text(after)
    if old is None or new is None:
        sizes = " -> ".join(f"{len(b):,} bytes" for b in sides)
        return FileDiff(path, change, "", f"binary file ({sizes})")
    if before == after:
        return FileDiff(path, change, "", "content unchanged")
    lines = difflib.unified_diff(
        file_lines(old),
        file_lines(new),
        fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null",
        n=CONTEXT_LINES,
        lineterm="",
    )
    return FileDiff(path, change, "\n".join(lines) + "\n")


def turn_diffs(ws: Workspace, folders: list[Path], index: int) -> list[FileDiff]:
    """The diffs of the turn in ``folders[index]``; ``folders`` are the session's committed
    turns, oldest first (what a turn left is read from the later ones)."""
    folder = folders[index]
    posts: dict[str, str | None] = _json(folder / "postimages.json")
    diffs = []
    for entry in _preimage_entries(folder):
        path = entry["path"]
        before = _content(folder, entry)
        after, later = _after(ws, folders[index + 1 :], path)
        diff = unified(path, before, after)
        too_large = after is not None and len(after) > MAX_DIFF_BYTES
        if not too_large and _sha256(after) != posts.get(path):
            edited = "after this turn" if later else "since"
            diff = FileDiff(
                diff.path,
                diff.change,
                diff.diff,
                "; ".join(filter(None, [diff.note, f"the file was changed by hand {edited}"])),
            )
        diffs.append(diff)
    return diffs


def _after(ws: Workspace, later: list[Path], path: str) -> tuple[bytes | None, bool]:
    """What a turn left in ``path``: the pre-image of the next turn that changed it, else the
    file now; and whether it came from a later turn."""
    for folder in later:
        for entry in _preimage_entries(folder):
            if entry["path"] == path:
                return _content(folder, entry), True
    try:
        return ws.read_bytes(path, limit=MAX_DIFF_BYTES + 1), False
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PathRejected):
        return None, False


def _content(folder: Path, entry: dict) -> bytes | None:
    """A pre-image's bytes (at most ``MAX_DIFF_BYTES + 1``), or None: the file did not exist."""
    with _saved_content(folder, entry) as stream:
        return None if stream is None else stream.read(MAX_DIFF_BYTES + 1)


def _text(data: bytes | None) -> str | None:
    """The text of a file ('' when it does not exist), or None: binary."""
    if data is None:
        return ""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
