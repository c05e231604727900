"""A command's overlay layer read as changes to the workspace, then committed into it.

A command run on an overlay (:mod:`codingagent.sandbox.overlay`) leaves the workspace as it
was and its writes in the layer's ``upper`` folder, in overlayfs' format: a file or folder
there is new or replaces the workspace's; a character device 0/0 (a *whiteout*) says the
workspace's entry of that name was removed; a folder with the attribute ``user.overlay.opaque``
(``trusted.overlay.opaque`` when mounted without ``userxattr``) replaces the workspace's folder
of that name whole.  A renamed folder is a new folder and a whiteout of the old name.

:func:`read_layer` walks only the layer (and, below what a command removed or replaced, the
workspace's folders it hid), so its cost follows what the command changed.  It sorts the
changes as the stat scan would (:mod:`.snapshot`, docs/undo.md): tracked files created, changed
(content or mode) and deleted, folders made and removed, ignored folders touched; ``.git``,
the agent's folders and tool caches are committed without being named.  :func:`commit` then
moves the layer's entries into the workspace (renames on one file system), removes what the
whiteouts name, and :func:`discard` removes the layer.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codingagent.fsio import note_folder
from codingagent.workspace.gitignore import Rules, add_rules
from codingagent.workspace.listing import SKIPPED_DIRS
from codingagent.workspace.pathguard import Guard, is_git
from codingagent.workspace.snapshot import CACHES, CommandChanges
from codingagent.workspace.tree import ignore_lines

OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")
_OVERLAY_ATTRS = ("user.overlay.", "trusted.overlay.")  # overlayfs' own marks: not the user's
_CHUNK = 1024 * 1024


@dataclass
class Layer:
    """What a layer changes, and the steps that commit it (in order)."""

    changes: CommandChanges = field(default_factory=CommandChanges)
    dirs_created: list[str] = field(default_factory=list)  # outermost first
    dirs_deleted: list[str] = field(default_factory=list)  # outermost first
    # ("remove", path): the workspace's entry goes; ("move", path): the layer's comes in;
    # ("mode", path): a folder both have takes the layer's mode.
    steps: list[tuple[str, str]] = field(default_factory=list)


def read_layer(guard: Guard, upper: Path) -> Layer:
    """The changes the layer ``upper`` makes to the workspace ``guard`` guards."""
    reader = _Reader(guard, upper)
    root_rules = add_rules(None, "", ignore_lines(str(guard.root), ".git", "info", "exclude"))
    # Iterative, not recursive: a command can nest folders thousands deep.
    pending = [("", add_rules(root_rules, "", ignore_lines(str(guard.root), ".gitignore")), True)]
    while pending:
        reader.merged(*pending.pop(), pending)
    layer, changes = reader.layer, reader.layer.changes
    # A folder replaced whole names its files as deleted and created: those that are in both
    # changed, or not at all when their bytes and mode are the same.
    again = set(changes.created) & set(changes.deleted)
    for path in again:
        old, new = os.path.join(reader.ws, path), os.path.join(reader.upper, path)
        low, info = _lstat(old), _lstat(new)
        if low is None or info is None or _differs(old, new, low, info):
            changes.changed.append(path)
    changes.created = sorted(set(changes.created) - again)
    changes.deleted = sorted(set(changes.deleted) - again)
    changes.changed.sort()
    both = set(layer.dirs_created) & set(layer.dirs_deleted)
    layer.dirs_created = sorted(set(layer.dirs_created) - both, key=lambda p: p.count("/"))
    layer.dirs_deleted = sorted(set(layer.dirs_deleted) - both, key=lambda p: p.count("/"))
    changes.untracked = sorted(set(changes.untracked))
    return layer


class _Reader:
    def __init__(self, guard: Guard, upper: Path) -> None:
        self.guard = guard
        self.ws = str(guard.root)
        self.upper = str(upper)
        self.layer = Layer()

    def merged(
        self,
        rel: str,
        rules: Rules | None,
        tracked: bool,
        pending: list[tuple[str, Rules | None, bool]],
    ) -> None:
        """A folder both the workspace and the layer have (``rel``: '' or ending in '/'); the
        folders in it both have too go on ``pending``."""
        judge = None if rules is None else rules.judge(rel)
        changes = self.layer.changes
        for entry in _entries(os.path.join(self.upper, rel)):
            name, path = entry.name, rel + entry.name
            info = entry.stat(follow_symlinks=False)
            low = _lstat(os.path.join(self.ws, path))
            ignored = name in SKIPPED_DIRS or (judge is not None and judge.ignores_folder(name))
            follow = tracked and not self._fenced(path) and name not in CACHES
            if _whiteout(info):
                self.layer.steps.append(("remove", path))
                if low is not None:
                    self._gone(path, low, rules, follow, ignored)
                continue
            if stat.S_ISDIR(info.st_mode):
                if ignored and follow:
                    changes.untracked.append(path)
                if low is not None and stat.S_ISDIR(low.st_mode) and not _opaque(entry.path):
                    if stat.S_IMODE(low.st_mode) != stat.S_IMODE(info.st_mode):
                        self.layer.steps.append(("mode", path))
                    inner = add_rules(rules, path + "/", self._ignores(self.ws, path))
                    pending.append((path + "/", inner, follow and not ignored))
                    continue
                if low is not None:  # replaced whole (opaque), or a file made a folder
                    self.layer.steps.append(("remove", path))
                    self._gone(path, low, rules, follow, ignored)
                self.layer.steps.append(("move", path))
                if follow and not ignored:
                    self._new(
                        path + "/", add_rules(rules, path + "/", self._ignores(self.upper, path))
                    )
                continue
            if low is not None and stat.S_ISDIR(low.st_mode):  # a folder replaced by a file
                self.layer.steps.append(("remove", path))
                self._gone(path, low, rules, follow, ignored)
                low = None
            self.layer.steps.append(("move", path))
            if not follow:
                continue
            was_file = low is not None and stat.S_ISREG(low.st_mode)
            if stat.S_ISREG(info.st_mode):
                if low is None or not was_file:
                    changes.created.append(path)
                elif _differs(os.path.join(self.ws, path), entry.path, low, info):
                    changes.changed.append(path)
            elif was_file:  # a file replaced by a symlink (not tracked) or a fifo
                changes.deleted.append(path)

    def _gone(
        self, path: str, low: os.stat_result, rules: Rules | None, follow: bool, ignored: bool
    ) -> None:
        """The workspace's entry ``path`` removed (or replaced): what of it was tracked."""
        if not follow:
            return
        if stat.S_ISREG(low.st_mode):
            self.layer.changes.deleted.append(path)
        elif stat.S_ISDIR(low.st_mode):
            if ignored:
                self.layer.changes.untracked.append(path)
                return
            self.layer.dirs_deleted.append(path)
            inner = add_rules(rules, path + "/", self._ignores(self.ws, path))
            self._below(
                self.ws, path + "/", inner, self.layer.changes.deleted, self.layer.dirs_deleted
            )

    def _new(self, rel: str, rules: Rules | None) -> None:
        """A folder of the layer the workspace did not have (``rel`` ends in '/')."""
        self.layer.dirs_created.append(rel[:-1])
        self._below(self.upper, rel, rules, self.layer.changes.created, self.layer.dirs_created)

    def _below(
        self, top: str, rel: str, rules: Rules | None, files: list[str], dirs: list[str]
    ) -> None:
        """Every tracked file and folder below ``top``/``rel`` into ``files`` and ``dirs``;
        ignored folders into the changes' ``untracked``."""
        pending = [(rel, rules)]
        while pending:
            rel, rules = pending.pop()
            judge = None if rules is None else rules.judge(rel)
            for entry in _entries(os.path.join(top, rel)):
                path, name = rel + entry.name, entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    files.append(path)
                elif not stat.S_ISDIR(info.st_mode) or name in CACHES or self._fenced(path):
                    continue
                elif name in SKIPPED_DIRS or (judge is not None and judge.ignores_folder(name)):
                    self.layer.changes.untracked.append(path)
                else:
                    dirs.append(path)
                    pending.append(
                        (path + "/", add_rules(rules, path + "/", self._ignores(top, path)))
                    )

    def _fenced(self, path: str) -> bool:
        return is_git(path.rpartition("/")[2]) or self.guard.is_agent_folder(path)

    @staticmethod
    def _ignores(top: str, path: str) -> list[str]:
        return ignore_lines(os.path.join(top, path), ".gitignore")


def commit(
    guard: Guard, upper: Path, layer: Layer, each: Callable[[], None] = lambda: None
) -> None:
    """Make the workspace what the layer says: its steps in order (``each`` after every one).
    Moves are renames, so the layer must be on the workspace's file system."""
    ws, top = str(guard.root), str(upper)
    for kind, path in layer.steps:
        target, source = os.path.join(ws, path), os.path.join(top, path)
        if kind == "remove":
            _remove(target)
        elif kind == "mode":
            os.chmod(target, stat.S_IMODE(os.lstat(source).st_mode))
        else:
            _clean(source)
            os.replace(source, target)
        note_folder(Path(os.path.dirname(target)))  # at the end of the turn's writes
        each()


def discard(folder: Path) -> None:
    """Remove a layer's folder and all in it (overlayfs leaves ``work/work`` with mode 000)."""
    with contextlib.suppress(OSError):
        os.chmod(folder / "work" / "work", 0o700)
    with contextlib.suppress(OSError):
        _remove(str(folder))


def _remove(path: str) -> None:
    """Remove the file or the folder (and all in it) at ``path``, if there is one; without
    recursion (shutil.rmtree recurses, and a command can nest folders thousands deep)."""
    info = _lstat(path)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    stack = [(path, False)]
    while stack:
        folder, emptied = stack.pop()
        if emptied:
            os.rmdir(folder)
            continue
        stack.append((folder, True))
        for entry in _entries(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, False))
            else:
                os.unlink(entry.path)


def _clean(path: str) -> None:
    """Before a layer's entry joins the workspace: no whiteout below it, no overlayfs marks."""
    _strip(path)
    folders = [path] if stat.S_ISDIR(os.lstat(path).st_mode) else []
    while folders:
        for entry in _entries(folders.pop()):
            info = entry.stat(follow_symlinks=False)
            if _whiteout(info):
                os.unlink(entry.path)
                continue
            _strip(entry.path)
            if stat.S_ISDIR(info.st_mode):
                folders.append(entry.path)


def _strip(path: str) -> None:
    with contextlib.suppress(OSError):
        for name in os.listxattr(path, follow_symlinks=False):
            if name.startswith(_OVERLAY_ATTRS):
                os.removexattr(path, name, follow_symlinks=False)


def _entries(folder: str) -> list[os.DirEntry[str]]:
    """The folder's entries, read whole (no descriptor stays open while we go deeper)."""
    try:
        with os.scandir(folder) as found:
            return list(found)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _whiteout(info: os.stat_result) -> bool:
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


def _opaque(path: str) -> bool:
    for name in OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
    return False


def _differs(old: str, new: str, low: os.stat_result, info: os.stat_result) -> bool:
    """Whether the layer's file holds other bytes or another mode than the workspace's."""
    if low.st_size != info.st_size or stat.S_IMODE(low.st_mode) != stat.S_IMODE(info.st_mode):
        return True
    try:
        with open(old, "rb") as a, open(new, "rb") as b:
            while True:
                chunk = a.read(_CHUNK)
                if chunk != b.read(_CHUNK):
                    return True
                if not chunk:
                    return False
    except OSError:
        return True
