"""What a session's turns changed in the workspace, before and after, by one rule, shown two
ways: as one patch (``codingagent diff``, the page's download: docs/undo.md, "The session as a
patch") and as each turn's diffs (the page).

The rule: the "before" of a file in a turn is the pre-image the turn kept (file commands' and
RUN_COMMAND's alike: :mod:`.history`); its "after" is the pre-image the next turn that changed
the file kept, or else the file as it is now in the workspace. A turn also recorded the sha256
of what it left (``postimages.json``): when the "after" differs from it, the file was changed by
hand after the turn, and the page says so. A change a RUN_COMMAND made names the command.

The patch is git's: ``diff --git``, ``a/`` and ``b/`` paths, ``new file mode`` / ``deleted file
mode``, ``\\ No newline at end of file``, so ``patch -R -p1`` (and ``git apply -R``) gives back
the files as they were. A file that is not text (NUL bytes, not UTF-8) is named, not shown: a
patch cannot carry it. The diffs themselves come from the one engine, :mod:`.hunks`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from codingagent.records.history import TurnRecord
from codingagent.records.hunks import hunks, unified
from codingagent.records.store import SessionStore, open_workspace
from codingagent.state import SessionError
from codingagent.workspace import PathRejected, Workspace, display_name

MAX_DIFF_BYTES = 1024 * 1024  # the page: either side larger than this, no diff is shown


@dataclass(frozen=True)
class FileChange:
    """One file a turn (or a session) changed: its content and mode before and after (None:
    no file)."""

    path: str
    before: bytes | None
    before_mode: int | None
    after: bytes | None
    after_mode: int | None
    by: str = ""  # the command that made the change, when a RUN_COMMAND did (docs/undo.md)
    # The file was changed by hand after the turn: "after this turn" (before a later turn
    # changed it), "since" (it is not as the turn left it now), or "".
    by_hand: str = ""


def turn_changes(
    ws: Workspace, folders: list[Path], limit: int | None = None, edits: bool = False
) -> list[list[FileChange]]:
    """What each committed turn (``folders``, oldest first) changed, in order: every file it
    kept a pre-image of, before and after by the rule above; ``limit``: bytes read of a side
    (the page's ``MAX_DIFF_BYTES + 1``), None for all; ``edits``: also which files were
    changed by hand after the turn (from its post-images). One pass, newest turn first."""
    later: dict[str, tuple[bytes | None, int | None]] = {}  # a later turn's pre-image
    turns = []
    for folder in reversed(folders):
        record = TurnRecord(folder)
        posts = _postimages(record) if edits else {}
        found = []
        for entry in _first_entries(record):
            path = entry["path"]
            edited = "after this turn" if path in later else "since"
            after, after_mode = later[path] if path in later else _now(ws, path, limit)
            before, before_mode = later[path] = _saved(record, entry, limit)
            known = limit is None or after is None or len(after) < limit
            by_hand = edited if edits and known and _sha256(after) != posts.get(path) else ""
            by = entry.get("by", "")
            found.append(FileChange(path, before, before_mode, after, after_mode, by, by_hand))
        turns.append(found)
    return turns[::-1]


def changes(store: SessionStore, session_id: str, turn: int | None = None) -> list[FileChange]:
    """The files the session's committed turns (or only turn ``turn``, by its sequence
    number) changed, before and after, sorted by path; unchanged ones left out."""
    state = store.load(session_id)
    folders = store.turns(session_id, state.sequence_number)
    numbers = [int(folder.name) for folder in folders]
    if turn is not None and turn not in numbers:
        known = ", ".join(map(str, numbers)) or "none yet"
        raise SessionError(f"Session {session_id} has no turn {turn} (its turns: {known})")
    ws = open_workspace(store, state)  # (a workspace gone is said, not a patch deleting all)
    # A turn's "after" is the next turn's pre-image: the turns from it on are read, no earlier.
    chosen = turn_changes(ws, folders if turn is None else folders[numbers.index(turn) :])
    if turn is not None:
        chosen = chosen[:1]
    whole: dict[str, FileChange] = {}  # the first turn's before, the last one's after
    for found in chosen:
        for change in found:
            first = whole.get(change.path, change)
            whole[change.path] = FileChange(
                change.path, first.before, first.before_mode, change.after, change.after_mode
            )
    return [
        change
        for path, change in sorted(whole.items())
        if (change.before, _kind(change.before_mode)) != (change.after, _kind(change.after_mode))
    ]


def patch(found: list[FileChange]) -> tuple[str, list[str]]:
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
        parts += [*head, unified(source, target, hunks(old, new))]
    return "".join(parts), binary


@dataclass(frozen=True)
class FileDiff:
    """One file a turn changed, as the page shows it. ``diff`` is a unified diff ('' when
    there is no text to show: ``note`` then says why, e.g. a binary file)."""

    path: str
    change: str  # "created", "deleted" or "changed"
    diff: str
    note: str = ""
    by: str = ""  # the command that made the change, when a RUN_COMMAND did (docs/undo.md)


def file_diff(path: str, before: bytes | None, after: bytes | None) -> FileDiff:
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
    return FileDiff(path, change, unified(fromfile, tofile, hunks(old, new)))


def session_diffs(ws: Workspace, folders: list[Path]) -> list[list[FileDiff]]:
    """The diffs of each committed turn of a session (``folders``, oldest first), in order."""
    turns = []
    for found in turn_changes(ws, folders, MAX_DIFF_BYTES + 1, edits=True):
        diffs = []
        for change in found:  # (a command may make any name: display_name)
            diff = file_diff(display_name(change.path), change.before, change.after)
            edited = f"the file was changed by hand {change.by_hand}" if change.by_hand else ""
            note = "; ".join(filter(None, [diff.note, edited]))
            diffs.append(FileDiff(diff.path, diff.change, diff.diff, note, change.by))
        turns.append(diffs)
    return turns


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


def _first_entries(record: TurnRecord) -> list[dict]:
    """The turn's first pre-image of each path, in the order kept."""
    first: dict[str, dict] = {}
    for entry in record.preimages().entries:
        first.setdefault(entry["path"], entry)
    return list(first.values())


def _saved(record: TurnRecord, entry: dict, limit: int | None) -> tuple[bytes | None, int | None]:
    """A pre-image's content (at most ``limit`` bytes; None: no file) and mode."""
    with record.saved_content(entry) as stream:
        if stream is None:
            return None, None
        return stream.read(limit if limit is not None else -1), entry["mode"]


def _now(ws: Workspace, path: str, limit: int | None) -> tuple[bytes | None, int | None]:
    """The file now (at most ``limit`` bytes) and its mode, or None: it does not exist."""
    try:
        data = ws.read_bytes(path, limit=limit)
        mode = os.stat(ws.resolve(path)).st_mode
    except (OSError, PathRejected):
        return None, None
    return data, mode


def _kind(mode: int | None) -> str:
    if mode is None:
        return ""
    return "100755" if mode & stat.S_IXUSR else "100644"


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _postimages(record: TurnRecord) -> dict[str, str | None]:
    """The sha256 of what the turn left in each file; none for a turn still being written."""
    try:
        return record.postimages()
    except FileNotFoundError:
        return {}
