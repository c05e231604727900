"""What a RUN_COMMAND changed in the workspace: stat scans before and after, and their diff.

A scan records each file's stat data (inode, size, mtime, ctime, mode) and each folder, and
reads no file: the session's shadow copy (:mod:`codingagent.transaction.shadow`) hashes only what
moved.  It covers what undo covers (docs/undo.md): every regular file except those in ``.git``,
the agent's folders, SKIPPED_DIRS and folders the ignore files ignore (``build/``,
``node_modules/``...): those folders are noted by their own stat data only ("untracked"), so a
command that creates, removes or fills one is told, but what is inside is not kept.  Git-ignored
*files* in tracked folders (``.env``) are covered.  Symlinks are neither followed nor kept.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codingagent.fsio import at
from codingagent.workspace.gitignore import Rules, add_rules
from codingagent.workspace.listing import SKIPPED_DIRS
from codingagent.workspace.pathguard import Guard, PathRejected, is_git, lstat
from codingagent.workspace.tree import ignore_lines

# Caches tools make and remake by themselves: not even named when a command changes them.
CACHES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis"})
# A file's stat data: (inode, size, mtime_ns, ctime_ns, mode); equal data means the same file.
Key = tuple[int, int, int, int, int]
# A file written this close (ns) before a scan may change again within the clock's tick with
# the same stat data ("racy", as git calls it): it is hashed again in the next comparison.
RACY_NS = 50_000_000


def key_of(info: os.stat_result) -> Key:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode)


@dataclass
class Scan:
    """The workspace's files and folders by stat data, as a command found or left them."""

    files: dict[str, Key] = field(default_factory=dict)  # posix path -> stat data
    dirs: set[str] = field(default_factory=set)  # tracked folders ('a', 'a/b'), not the root
    untracked: dict[str, Key] = field(default_factory=dict)  # ignored folders -> own stat data
    started_ns: int = 0  # the clock when the scan began (file times come from it)


def scan(
    guard: Guard, skip: frozenset[str] = frozenset(), walk: frozenset[str] = frozenset()
) -> Scan:
    """The workspace by stat data.  The folders in ``skip`` count as untracked and those in
    ``walk`` as tracked whatever the ignore files now say: a command that edits ``.gitignore``
    changes no verdict of the scans its changes are found by."""
    root = str(guard.root)
    found = Scan(started_ns=time.time_ns())
    exclude = add_rules(None, "", ignore_lines(root, ".git", "info", "exclude"))
    pending: list[tuple[str, Rules | None]] = [("", exclude)]
    while pending:
        rel, rules = pending.pop()
        folder = os.path.join(root, rel) if rel else root
        rules = add_rules(rules, rel, ignore_lines(folder, ".gitignore"))
        judge = None if rules is None else rules.judge(rel)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # vanished, or unreadable: not tracked
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished while we looked
            path = rel + entry.name
            if stat.S_ISREG(info.st_mode):
                found.files[path] = key_of(info)
            elif not stat.S_ISDIR(info.st_mode) or entry.name in CACHES or _fenced(guard, path):
                continue
            elif path not in walk and (
                path in skip
                or entry.name in SKIPPED_DIRS
                or (judge is not None and judge.ignores_folder(entry.name))
            ):
                found.untracked[path] = key_of(info)
            else:
                found.dirs.add(path)
                pending.append((path + "/", rules))
    return found


def _fenced(guard: Guard, rel: str) -> bool:
    return is_git(rel.rpartition("/")[2]) or guard.is_agent_folder(rel)


@dataclass
class Moved:
    """Paths whose stat data differ between two scans: what may have changed."""

    created: list[str] = field(default_factory=list)
    maybe_changed: list[str] = field(default_factory=list)  # there before and after: hash them
    deleted: list[str] = field(default_factory=list)
    dirs_created: list[str] = field(default_factory=list)  # outermost first
    dirs_deleted: list[str] = field(default_factory=list)  # outermost first
    untracked: list[str] = field(default_factory=list)  # ignored folders made, removed, changed


def moved(before: Scan, after: Scan, racy_since: int) -> Moved:
    """What differs from ``before`` to ``after``; files whose time is at or after
    ``racy_since`` (ns) count as moved even with equal stat data."""
    out = Moved()
    for path, key in after.files.items():
        old = before.files.get(path)
        if old is None:
            out.created.append(path)
        elif old != key or key[2] >= racy_since:
            out.maybe_changed.append(path)
    out.deleted = [path for path in before.files if path not in after.files]
    out.dirs_created = sorted(after.dirs - before.dirs)
    out.dirs_deleted = sorted(before.dirs - after.dirs)
    untracked = before.untracked.keys() | after.untracked.keys()
    out.untracked = sorted(
        p for p in untracked if before.untracked.get(p) != after.untracked.get(p)
    )
    return out


def restore_dirs(guard: Guard, created: list[str], deleted: list[str]) -> list[str]:
    """Remove the folders in ``created`` that are empty again (deepest first) and make those in
    ``deleted`` again (outermost first); what could not be made again, by name."""
    for rel in sorted(created, key=lambda p: p.count("/"), reverse=True):
        with (
            contextlib.suppress(OSError, PathRejected),
            guard.locate(rel, for_write=True, recorded=True) as spot,
        ):
            if len(spot.tail) == 1:
                path, dir_fd = at(spot.folder, spot.tail[0])
                os.rmdir(path, dir_fd=dir_fd)
    problems = []
    for rel in sorted(deleted, key=lambda p: p.count("/")):
        try:
            with guard.locate(rel, for_write=True, recorded=True) as spot:
                folder, name = spot.make_parents()
                info = lstat(folder, name)
                if info is None or not stat.S_ISDIR(info.st_mode):
                    path, dir_fd = at(folder, name)
                    os.mkdir(path, dir_fd=dir_fd)  # a file in its place: FileExistsError
        except (OSError, PathRejected) as e:
            problems.append(f"folder '{rel}' ({getattr(e, 'strerror', None) or e})")
    return problems


@dataclass
class CommandChanges:
    """What one command did to the workspace, as its result tells the model."""

    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # content or mode
    deleted: list[str] = field(default_factory=list)
    unkept: list[str] = field(default_factory=list)  # changed, but undo cannot put it back: why
    untracked: list[str] = field(default_factory=list)  # ignored folders it touched

    @property
    def paths(self) -> list[str]:
        return self.created + self.changed + self.deleted


class CommandWatch(Protocol):
    """What runs around each RUN_COMMAND: lent by a turn to the executor, as an argument of
    ``codingagent.execute.execute`` (the turn's capture, ``codingagent.transaction.capture``)."""

    def before(self, label: str) -> Path | None:
        """Get ready, durably, for the command ``label``: the layer folder its writes go to
        (the command runs on an overlay, the workspace untouched until :meth:`after`), or None
        (it writes to the workspace: its picture was taken)."""

    def after(self) -> CommandChanges:
        """Record what the command changed (pre-images in the journal) and say what."""
