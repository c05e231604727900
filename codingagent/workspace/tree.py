"""One walk of the workspace, shared by every reader of a turn and kept current
(docs/performance.md, 'One walk a turn').

A :class:`Workspace` walks its tree once, when the first reader asks (the secret-file scan
before a RUN_COMMAND, the next prompt's listing, its secret-file note), and keeps the result
for the rest of its life, a turn at most: each write or delete of a file command re-reads
that file's stat data, and a command's overlay layer (:mod:`.layer`) says exactly which paths
it touched.  A command whose changes are found by stat scans, or a rollback, drops the walk:
the next reader walks again.

The walk opens each folder from its parent without following symlinks, like the path guard,
so nothing outside the root is ever seen.  It leaves out the folders in ``skip`` (by name, at
any depth: those no reader wants) and the folders of build output the ignore files ignore,
keeps the stat data of the first ``limit`` files in path order and only the names of the
others, and keeps the ignore rules (:mod:`.gitignore`) in force in each folder, so the
listing (:mod:`.listing`) needs no walk of its own.  Each reader leaves out what it does not
want besides (the listing: ignored files and the agent's folders; the secret scan: build
output), folder by folder.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterable, Iterator

from codingagent.fsio import Folder, at, close_folder
from codingagent.workspace.gitignore import Rules, add_rules
from codingagent.workspace.pathguard import Guard, PathRejected, open_dir, open_file

FileStat = tuple[str, str, os.stat_result]  # (path, posix path in the root, stat)
IGNORE_FILE = ".gitignore"
IGNORE_FILE_MAX = 1024 * 1024  # bytes of an ignore file honoured; a bigger one is cut there
# Folders no reader enters: large, generated, never shown and never holding the user's secrets.
NEVER_READ = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
    | {".pytest_cache", ".ruff_cache"}
)
# Folders of build output and other tools' data: not entered when the ignore files ignore
# them (the listing would not show them, and the secret scan never reads them).
UNREAD_IF_IGNORED = frozenset(
    {"target", ".gradle", ".next", ".cache", ".nox", "site-packages", ".hg", ".svn"}
)
STATED = 50_000  # files whose stat data a walk keeps; of the others only the names

_versions = itertools.count(1)  # unique across trees: a reader may keep what it found by it


class Tree:
    """The regular files under the guard's root outside ``skip``, folder by folder."""

    def __init__(
        self,
        guard: Guard,
        skip: frozenset[str] = NEVER_READ,
        limit: int = STATED,
        skip_if_ignored: frozenset[str] = UNREAD_IF_IGNORED,
    ) -> None:
        self._guard = guard
        self.root = str(guard.root)
        self.skip = skip
        self.limit = limit
        self.skip_if_ignored = skip_if_ignored
        # folder ('' or ending in '/') -> file name -> stat data (None: beyond the limit)
        self.folders: dict[str, dict[str, os.stat_result | None]] = {}
        self.rules: dict[str, Rules | None] = {}  # folder -> the ignore rules in force there
        self.walks = 0  # how often the tree was walked (tests count them)
        self.fresh = False
        self._stated = 0
        self._version = 0

    @property
    def version(self) -> int:
        """A number that changes whenever what the tree holds may have changed (walking
        first if it is not fresh): what a reader found for one version holds for it."""
        self._ensure()
        return self._version

    def walked(self) -> dict[str, dict[str, os.stat_result | None]]:
        """The files folder by folder (walking first if the tree is not fresh): folder ('' or
        ending in '/') -> file name -> stat data (None: beyond the limit)."""
        self._ensure()
        return self.folders

    def stats(self, skip: Iterable[str] = ()) -> Iterator[FileStat]:
        """Each file with its stat data, outside the folders named in ``skip`` too, in no
        particular order."""
        self._ensure()
        skip = frozenset(skip)
        for folder, files in list(self.folders.items()):
            if skip and not skip.isdisjoint(folder.split("/")):
                continue
            base = os.path.join(self.root, folder)
            for name, info in list(files.items()):
                if info is not None:
                    yield base + name, folder + name, info

    def touched(self, paths: Iterable[str]) -> None:
        """These paths (files or folders, posix, in the root) may have changed: look again."""
        paths = list(paths)
        if not self.fresh or not paths:
            return
        self._version = next(_versions)
        if any(rel.rpartition("/")[2] == IGNORE_FILE for rel in paths):
            self.fresh = False  # the rules of every folder below it may change: walk again
            return
        for rel in paths:
            self._forget(rel)
            top = self._new_top(rel)
            parent, _, name = top.rpartition("/")
            if not self.skip.isdisjoint(top.split("/")) or not name:
                continue
            try:
                self._look_at(parent + "/" if parent else "", name)
            except (OSError, PathRejected):
                continue  # gone again, or not reachable without a symlink: not a file here

    def drop(self) -> None:
        """Anything may have changed: the next reader walks again."""
        self.fresh = False

    def _ensure(self) -> None:
        if self.fresh:
            return
        self.folders, self.rules, self._stated = {}, {}, 0
        root = self._guard.open_root()  # (a workspace folder replaced or gone: an error)
        exclude = ignore_lines(root, ".git", "info", "exclude")
        self._walk("", root, add_rules(None, "", exclude))
        self.walks += 1
        self._version = next(_versions)
        self.fresh = True

    def _new_top(self, rel: str) -> str:
        """``rel``, or the highest folder above it the walk has not seen (made since)."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) + "/" not in self.folders:
                return "/".join(parts[:depth])
        return rel

    def _forget(self, rel: str) -> None:
        """Leave out what the tree knew of ``rel`` and, if a folder, of all below it."""
        parent, _, name = rel.rpartition("/")
        files = self.folders.get(parent + "/" if parent else "")
        if files is not None and files.pop(name, None) is not None:
            self._stated -= 1
        prefix = rel + "/"
        for folder in [f for f in self.folders if f.startswith(prefix)]:
            self._stated -= sum(info is not None for info in self.folders.pop(folder).values())
            self.rules.pop(folder, None)

    def _look_at(self, parent: str, name: str) -> None:
        """Add ``name`` in the known folder ``parent``: a file, or a folder walked whole."""
        folder = open_below(self._guard, parent.split("/")[:-1])
        try:
            path, dir_fd = at(folder, name)
            info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
            above = self.rules.get(parent)
            if stat.S_ISREG(info.st_mode):
                self.folders.setdefault(parent, {})[name] = info
                self._stated += 1
            elif stat.S_ISDIR(info.st_mode) and self._enters(parent, name, above):
                self._walk(f"{parent}{name}/", open_dir(folder, name), above)
        finally:
            close_folder(folder)

    def _enters(self, rel: str, name: str, rules: Rules | None) -> bool:
        """Whether the walk enters the folder ``name`` in ``rel``, where ``rules`` hold."""
        if name in self.skip:
            return False
        if name in self.skip_if_ignored and rules is not None:
            return not rules.judge(rel).ignores_folder(name)
        return True

    def _walk(self, rel: str, start: Folder, above: Rules | None) -> None:
        """Walk the folder ``rel`` (open as ``start``; closed here; ``above``: the ignore
        rules in force in the folder it is in) and every folder below it, in path order, so
        that the files stat'ed are the first ``limit`` of them."""
        pending: list[_Pending] = []
        self._list(start, rel, above, pending)
        try:
            while pending:
                parent, name, inner, rules = pending.pop()
                try:
                    folder = open_dir(parent.folder, name)
                except OSError:
                    continue  # replaced or vanished since it was listed
                finally:
                    parent.release()
                self._list(folder, inner, rules, pending)
        finally:
            for each in pending:
                each[0].release()

    def _list(self, folder: Folder, rel: str, above: Rules | None, pending: list[_Pending]) -> None:
        """Note the files in ``folder`` (``rel``); queue its subfolders on ``pending``."""
        files: dict[str, os.stat_result | None] = {}
        self.folders[rel] = files
        subfolders = []
        lines: list[str] = []  # of its .gitignore
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:
            entries = []  # an unreadable folder holds nothing seen
        room = self.limit - self._stated  # files still to be stat'ed
        if len(entries) > room:
            entries.sort(key=_name)  # the first in path order are those stat'ed
        for entry in entries:  # (their stat calls are relative to the folder, still open)
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    name = entry.name
                    if room > 0:
                        files[name] = entry.stat(follow_symlinks=False)
                        room -= 1
                    else:
                        files[name] = None
                    if name == IGNORE_FILE:
                        lines = ignore_lines(folder, IGNORE_FILE)
            except OSError:
                continue  # vanished while we looked
        self._stated = self.limit - room
        rules = self.rules[rel] = add_rules(above, rel, lines)
        subfolders = [name for name in subfolders if self._enters(rel, name, rules)]
        if not subfolders:
            close_folder(folder)
            return
        parent = _Parent(folder, len(subfolders))
        for name in sorted(subfolders, reverse=True):  # the last is taken first: path order
            pending.append((parent, name, f"{rel}{name}/", rules))


class _Parent:
    """An open folder shared by its subfolders still to be walked; closed after the last."""

    def __init__(self, folder: Folder, waiting: int) -> None:
        self.folder = folder
        self._waiting = waiting

    def release(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            close_folder(self.folder)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


_Pending = tuple[_Parent, str, str, Rules | None]  # where it was met, name, its rel, rules above


def ignore_lines(folder: Folder, *path: str) -> list[str]:
    """The lines of the ignore file at ``path`` below ``folder``; none unless it is a regular
    file (reached, like everything the walk opens, without following a symlink)."""
    opened: list[Folder] = []
    try:
        for name in path[:-1]:
            folder = open_dir(folder, name)
            opened.append(folder)
        with os.fdopen(open_file(folder, path[-1], "/".join(path)), "rb") as f:
            data = f.read(IGNORE_FILE_MAX)
    except (OSError, PathRejected):
        return []
    finally:
        for each in opened:
            close_folder(each)
    return os.fsdecode(data).removeprefix("\ufeff").splitlines()


def open_below(guard: Guard, names: list[str]) -> Folder:
    """The folder at ``names`` below the root, each opened from its parent without a symlink."""
    folder = guard.open_root()
    for name in names:
        try:
            inner = open_dir(folder, name)
        finally:
            close_folder(folder)
        folder = inner
    return folder
