"""The workspace listing: the regular files the LLM is shown, and their sizes.

The walk opens each folder from its parent without following symlinks, like the guard, and
leaves out ``.git``, the agent's folders, SKIPPED_DIRS and what the ignore files ignore.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field

from codingagent.fsio import Folder, close_folder
from codingagent.workspace.gitignore import Rules, add_rules
from codingagent.workspace.pathguard import Guard, PathRejected, is_git, open_dir, open_file

UNSIZED = -1  # the size of a file listed without a stat (see ``list_files``' ``sizes``)
_IGNORE_FILE_MAX = 1024 * 1024  # bytes of an ignore file honoured; a bigger one is cut there

# Folders the listing never enters: they are large, generated, and useless to the LLM.
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".hypothesis",
    }
)


@dataclass(frozen=True)
class Listing:
    """The workspace's files as the LLM sees them."""

    entries: list[tuple[str, int]]  # (posix path relative to the root, size or UNSIZED), sorted
    omitted: int  # files left out by the cap
    # st_mtime_ns of the files stat'ed for their sizes (the code map's cache key, with the size)
    times: dict[str, int] = field(default_factory=dict, compare=False)


def display_name(name: str) -> str:
    """A file name as text the outbox can hold: undecodable bytes become ``\\xff`` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def list_files(guard: Guard, limit: int = 1000, sizes: int | None = None) -> Listing:
    """The regular files the LLM is shown: sorted, at most ``limit`` of them; only the first
    ``sizes`` files met (None: all) are stat'ed for their sizes, the others have UNSIZED.

    Symlinks are neither listed nor followed, so the listing never shows anything outside
    the root.  Left out: ``.git``, the agent's folders and SKIPPED_DIRS at any depth, and
    what the ``.gitignore`` files (nested ones too) and ``.git/info/exclude`` ignore; a
    folder left out is not even entered.  ``omitted`` counts only the files the listing
    would show but for the cap: ignored and skipped files are not counted.

    Only the files that can still be among the first ``limit`` are stat'ed for their
    sizes, which keeps a 100k-file tree within a few times a bare ``os.walk``.
    """
    shown = _Shown(limit, sys.maxsize if sizes is None else sizes)
    _walk(guard, shown)
    return shown.listing()


def _walk(guard: Guard, shown: _Shown) -> None:
    # Iterative, not recursive: a reply's RUN_COMMAND can nest folders thousands deep.
    # Each folder is opened from its parent without following symlinks, like the guard.
    root = guard.open_root()
    pending: list[_Pending] = []
    try:
        rules = add_rules(None, "", _ignore_lines(root, ".git", "info", "exclude"))
        _scan(guard, root, "", "", rules, pending, shown)
        while pending:
            where = pending.pop()
            try:
                folder = open_dir(where.parent.folder, where.name)
            except OSError:
                continue  # replaced or vanished since it was listed
            finally:
                where.parent.release()
            _scan(guard, folder, where.rel, where.shown_as, where.rules, pending, shown)
    finally:
        for where in pending:
            where.parent.release()


def _scan(
    guard: Guard,
    folder: Folder,
    rel: str,
    shown_as: str,
    rules: Rules | None,
    pending: list[_Pending],
    shown: _Shown,
) -> None:
    """Hand the files in ``folder`` to ``shown``; queue its subfolders on ``pending``.

    ``rel`` is the folder's real path ('' or ending in '/'), ``shown_as`` that path as the
    listing shows it, ``rules`` the ignore rules in force above it.  Entries are judged by
    their names and types alone (no stat): the loop costs little more than a bare walk.
    """
    rules = add_rules(rules, rel, _ignore_lines(folder, ".gitignore"))
    judge = None if rules is None else rules.judge(rel)
    subfolders = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(name)
                    elif entry.is_file(follow_symlinks=False) and not (
                        judge is not None and judge.ignores_file(name)
                    ):
                        shown.add(
                            shown_as + (name if name.isascii() else display_name(name)), entry
                        )
                except OSError:
                    pass  # vanished while we looked
    except OSError:
        pass  # an unreadable folder is simply not listed
    kept = [
        name
        for name in subfolders
        if not _skipped(guard, rel + name)
        and not (judge is not None and judge.ignores_folder(name))
    ]
    if not kept:
        close_folder(folder)
        return
    parent = _Parent(folder, len(kept))
    # Queued so that they are listed in name order (the last is taken first): the files
    # met first are then nearly the ones shown, and few others need a stat.
    for name in sorted(kept, reverse=True):
        shown_path = f"{shown_as}{display_name(name)}/"
        pending.append(_Pending(parent, name, f"{rel}{name}/", shown_path, rules))


def _skipped(guard: Guard, rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return is_git(name) or name in SKIPPED_DIRS or guard.is_agent_folder(rel)


class _Parent:
    """An open folder shared by its subfolders still to be listed; closed after the last."""

    def __init__(self, folder: Folder, waiting: int) -> None:
        self.folder = folder
        self._waiting = waiting

    def release(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            close_folder(self.folder)


@dataclass(frozen=True, slots=True)
class _Pending:
    """A folder still to be listed, found in ``parent``."""

    parent: _Parent
    name: str
    rel: str  # its real path below the root, ending in '/'
    shown_as: str  # that path as the listing shows it
    rules: Rules | None  # the ignore rules in force above it


class _Shown:
    """The first ``limit`` files in path order, with their sizes, and how many there are.

    Files arrive in any order.  One that sorts after ``limit`` files already found cannot be
    shown: it is counted but not stat'ed.  As the walk takes folders in name order, that is
    nearly every file after the first ``limit``.
    """

    def __init__(self, limit: int, sizes: int) -> None:
        self._limit = max(0, limit)
        self._unsized_after = sizes  # files stat'ed; the next ones are taken as the walk saw them
        self._kept: list[tuple[str, int]] = []
        self._times: dict[str, int] = {}
        self._trim_at = self._limit
        self._bound: str | None = None if limit > 0 else ""  # paths after it cannot be shown
        self._count = 0

    def add(self, path: str, entry: os.DirEntry[str]) -> None:
        """Count the regular file ``entry``; keep it with its size if it may be shown."""
        self._count += 1
        if self._bound is not None and path > self._bound:
            return
        if self._unsized_after <= 0:
            self._kept.append((path, UNSIZED))
        else:
            self._unsized_after -= 1
            try:  # relative to its folder, still open: no path is looked up again
                info = entry.stat(follow_symlinks=False)
            except OSError:
                info = None
            if info is None or not stat.S_ISREG(info.st_mode):  # vanished or replaced meanwhile
                self._count -= 1
                return
            self._kept.append((path, info.st_size))
            self._times[path] = info.st_mtime_ns
        if len(self._kept) >= self._trim_at:
            self._kept.sort()
            del self._kept[self._limit :]
            self._bound = self._kept[-1][0]
            self._trim_at = 2 * self._limit

    def listing(self) -> Listing:
        entries = sorted(self._kept)[: self._limit]
        times = self._times
        if len(times) > len(entries):
            times = {path: times[path] for path, _ in entries if path in times}
        return Listing(entries=entries, omitted=self._count - len(entries), times=times)


def _ignore_lines(folder: Folder, *path: str) -> list[str]:
    """The lines of the ignore file at ``path`` below ``folder``; none unless it is a regular
    file (reached, like everything the listing opens, without following a symlink)."""
    opened: list[Folder] = []
    try:
        for name in path[:-1]:
            folder = open_dir(folder, name)
            opened.append(folder)
        with os.fdopen(open_file(folder, path[-1], "/".join(path)), "rb") as f:
            data = f.read(_IGNORE_FILE_MAX)
    except (OSError, PathRejected):
        return []
    finally:
        for each in opened:
            close_folder(each)
    return os.fsdecode(data).removeprefix("\ufeff").splitlines()
