"""The sandbox the LLM's file commands run in: one path guard, listing, read, write, delete.

Every path the LLM writes is untrusted, and so is everything a RUN_COMMAND left in the
workspace (symlinks, hard links, FIFOs).  :meth:`Workspace._locate` is the single place that
turns such a path into something to act on, in two steps:

1. The text: relative, no drive letter, UNC path, backslash, NUL or other control character,
   no ``:`` (a Windows alternate data stream), no name Windows reserves (``CON``, ``COM1``...),
   no name over 255 bytes and no path over 4096 bytes.
2. The walk (POSIX): one component at a time from an open descriptor of the workspace root.
   Each folder is opened relative to the one before with ``O_NOFOLLOW | O_DIRECTORY``, so the
   kernel never follows a symlink on the guard's behalf.  A symlink met on the way is read and
   its target walked the same way (from the folder holding it, or from the root when it is an
   absolute path inside the root); ``..`` pops the walk's own stack and cannot climb above the
   root.  The operation then acts on the deepest folder's descriptor and a bare name (openat,
   mkdirat, renameat, unlinkat), so a symlink swapped in between the check and the use makes
   the operation fail; it can never redirect it.

Decisions:

- Reads follow a symlink whose target, walked as above, stays inside the workspace (a link
  from ``docs/latest`` to ``docs/v2`` is ordinary).  Writes and deletes never act on a final
  symlink; intermediate ones to folders inside are followed and the real path is recorded.
- A regular file with more than one hard link is refused for reading, writing and deleting:
  its other name may be outside the workspace, and nothing tells where.
- Not covered: a folder renamed out of the workspace (same file system) while an operation
  holds its descriptor.  Only a process running at the same time could do that; commands are
  killed before the next file command runs, and under bubblewrap the workspace is a mount
  point that nothing can be renamed out of.

Where the OS has no directory descriptors (Windows) the same walk runs on paths, without the
race-freedom.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .fsio import (
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    Folder,
    at,
    atomic_write_at,
    close_folder,
    open_folder,
    temp_names_of,
)

PREIMAGE_IN_MEMORY = 1024 * 1024  # bytes of a file's pre-image held in memory; more: a stream

OUTSIDE = "Path is outside workspace"
EMPTY = "Path is empty"
BACKSLASH = "Path contains a backslash; use forward slashes (/)"
NUL = "Path contains a NUL character"
CONTROL = "Path contains a control character"
UNENCODABLE = "Path contains characters no file name can hold"
FOLDER = "Path ends with '/'; name a file"
PROTECTED_GIT = "Path is protected ('.git/')"
PROTECTED_AGENT = "Path is protected (agent folder)"
SYMLINK = "Path is a symlink"
HARDLINK = "Path is a hard link to another file"
TOO_LONG = "Path is too long"
NAME_TOO_LONG = "Path has a name longer than 255 bytes"
STREAM = "Path contains ':' (a drive or an alternate data stream on Windows)"
RESERVED = "Path uses a name reserved on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9)"

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_MAX_LINKS = 40  # symlinks followed in one walk, as Linux allows (MAXSYMLINKS)

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

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x01-\x1f\x7f]")
_RESERVED_NAMES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{n}" for port in ("COM", "LPT") for n in [*"123456789", "¹", "²", "³"]}
)
# What opening or reading a component says when it was swapped after its lstat.
_CHANGED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EINVAL})
_DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
# O_NONBLOCK: opening a FIFO a command left behind must not hang the agent.
_FILE_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | getattr(os, "O_NONBLOCK", 0)


class PathRejected(Exception):
    """A path the LLM may not use; ``str(e)`` is the reason it is shown (after ``REJECTED:``)."""


@dataclass(frozen=True)
class Listing:
    """The workspace's files as the LLM sees them."""

    entries: list[tuple[str, int]]  # (posix path relative to the root, size in bytes), sorted
    omitted: int  # files left out by the cap


@dataclass(frozen=True)
class PreImage:
    """A file as it was before a change: what undo and crash recovery put back.

    ``data is None`` means the file did not exist; ``created_dirs`` are the folders the change
    was about to create (outermost first), removed again on restore if they are empty.
    """

    path: str  # posix, relative to the root
    data: bytes | None
    mode: int | None
    created_dirs: tuple[str, ...] = ()
    # A file over PREIMAGE_IN_MEMORY bytes comes as an open stream instead of ``data``: open
    # only while ``before_change`` runs (or, for ``restore``, while the caller holds it).
    stream: BinaryIO | None = field(default=None, compare=False)

    @property
    def existed(self) -> bool:
        return self.data is not None or self.stream is not None


def display_name(name: str) -> str:
    """A file name as text the outbox can hold: undecodable bytes become ``\\xff`` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def _is_git(name: str) -> bool:
    # Case-insensitive: on macOS and Windows `.GIT` is the same folder as `.git`.
    return name.casefold() == ".git"


def _check_spelling(rel: str) -> list[str]:
    """Reject what must never be looked up at all; the path's components otherwise."""
    if not rel:
        raise PathRejected(EMPTY)
    if "\0" in rel:
        raise PathRejected(NUL)
    if _CONTROL.search(rel):
        raise PathRejected(CONTROL)
    if rel.startswith("/") or _DRIVE.match(rel):
        raise PathRejected(OUTSIDE)
    if "\\" in rel:  # also every UNC path and Windows-style relative path
        raise PathRejected(BACKSLASH)
    try:
        size = len(os.fsencode(rel))
    except UnicodeEncodeError:
        raise PathRejected(UNENCODABLE) from None
    if size > MAX_PATH_BYTES:
        raise PathRejected(TOO_LONG)
    parts = _components(rel)
    for part in parts:
        _check_name(part)
    return parts


def _components(rel: str) -> list[str]:
    return [part for part in rel.split("/") if part not in ("", ".")]


def _check_name(name: str) -> None:
    if ":" in name:
        raise PathRejected(STREAM)
    # Windows ignores the extension and trailing spaces: `con.txt` and `NUL ` are devices too.
    if name.split(".")[0].rstrip(" ").upper() in _RESERVED_NAMES:
        raise PathRejected(RESERVED)
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        raise PathRejected(NAME_TOO_LONG)


def _open_dir(parent: Folder, name: str) -> Folder:
    """The folder ``name`` inside ``parent``, never through a symlink."""
    if isinstance(parent, int):
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    path = os.path.join(parent, name)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path


def _lstat(folder: Folder, name: str) -> os.stat_result | None:
    """``name``'s own status (a symlink is not followed), or None if it does not exist."""
    path, dir_fd = at(folder, name)
    try:
        return os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _is_multi_linked(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def _not_found(rel: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)


def _is_a_directory(rel: str) -> IsADirectoryError:
    return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel)


class _Spot:
    """Where a path leads, held open: the folders walked from the root down (the deepest is
    ``folder``), their real names, and ``tail``: the names below ``folder`` not opened.

    The last name of ``tail`` is the target (it may or may not exist); any before it are
    folders that do not exist yet.  An empty ``tail`` means the path names ``folder`` itself.
    """

    def __init__(self, root: Folder) -> None:
        self._stack = [root]
        self.names: list[str] = []
        self.tail: list[str] = []

    def __enter__(self) -> _Spot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def folder(self) -> Folder:
        return self._stack[-1]

    @property
    def real(self) -> list[str]:
        """The target's real path, as components relative to the root."""
        return self.names + self.tail

    def down(self, name: str) -> None:
        self._stack.append(_open_dir(self.folder, name))
        self.names.append(name)

    def up(self) -> None:
        close_folder(self._stack.pop())
        self.names.pop()

    def to_root(self) -> None:
        while self.names:
            self.up()
        self.tail.clear()

    def make_parents(self) -> tuple[Folder, str]:
        """Create the missing folders of ``tail``; the folder and name of the target."""
        for name in self.tail[:-1]:
            path, dir_fd = at(self.folder, name)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, dir_fd=dir_fd)
            # Not a folder (a file in the way, or a symlink raced in): NotADirectoryError.
            self.down(name)
        del self.tail[:-1]
        return self.folder, self.tail[0]

    def close(self) -> None:
        for folder in self._stack:
            close_folder(folder)
        self._stack.clear()


class Workspace:
    """The folder the LLM works in, with the agent's own folders fenced off."""

    def __init__(self, root: Path, protected: Iterable[Path] = ()) -> None:
        root = Path(root).resolve(strict=True)
        if not root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Workspace is not a folder", str(root))
        self.root = root
        info = os.stat(root)
        self._root_id = (info.st_dev, info.st_ino)
        # Compared, case-insensitively, with the real path a walk arrives at.  A protected folder
        # that contains the root fences off everything, the safe reading of a misconfiguration.
        real = [Path(os.path.realpath(p)) for p in protected]
        self._fenced = any(root.is_relative_to(p) for p in real)
        self._protected = [
            tuple(part.casefold() for part in p.relative_to(root).parts)
            for p in real
            if p.is_relative_to(root) and p != root
        ]
        # Called with the pre-image of every file just before it is written or deleted; the
        # turn journal sets it so that a turn can be rolled back or undone.
        self.before_change: Callable[[PreImage], None] | None = None

    # --- the guard ------------------------------------------------------------------------

    def resolve(self, rel: str, *, for_write: bool = False) -> Path:
        """The real path ``rel`` names inside the root, or :class:`PathRejected`.

        For showing and comparing paths only: act on files through the methods below, which do
        not look the path up again.  ``for_write`` applies the write rules (no final symlink, no
        trailing ``/``).  A symlink loop raises :class:`OSError` (``ELOOP``).
        """
        with self._locate(rel, for_write=for_write) as spot:
            return self.root.joinpath(*spot.real)

    def relpath(self, rel: str) -> str:
        """The posix path, relative to the root, of the file ``rel`` really names."""
        return self.resolve(rel).relative_to(self.root).as_posix()

    def _open_root(self) -> Folder:
        folder = open_folder(self.root)
        if isinstance(folder, int):
            info = os.fstat(folder)
            if (info.st_dev, info.st_ino) != self._root_id:
                os.close(folder)
                raise OSError(errno.ESTALE, "The workspace folder was replaced", str(self.root))
        return folder

    def _locate(self, rel: str, *, for_write: bool, recorded: bool = False) -> _Spot:
        """Walk to what ``rel`` names; the caller closes the returned spot.

        Reading follows a final symlink; writing refuses it, with the reason its target gives
        if that is outside or protected.  A ``recorded`` path is a real path the agent wrote
        down itself (a pre-image's): it is walked the same way, but the spelling rules for
        what the LLM may write do not apply (a symlink's target may have led there).
        """
        parts = _components(rel) if recorded else _check_spelling(rel)
        spot = _Spot(self._open_root())
        try:
            self._walk_to(spot, parts, rel, follow_last=not for_write)
            self._check_protected(spot.real)
            if for_write and rel.endswith("/"):
                raise PathRejected(FOLDER)
            if for_write and len(spot.tail) == 1:
                info = _lstat(spot.folder, spot.tail[0])
                if info is not None and stat.S_ISLNK(info.st_mode):
                    raise PathRejected(self._symlink_reason(rel))
        except BaseException:
            spot.close()
            raise
        return spot

    def _walk_to(self, spot: _Spot, parts: list[str], rel: str, *, follow_last: bool) -> None:
        pending = deque(parts)
        budget = _MAX_LINKS  # symlinks followed plus folders that changed while we looked
        while pending:
            part = pending.popleft()
            if part == "..":
                if spot.tail:
                    spot.tail.pop()
                elif spot.names:
                    spot.up()
                else:
                    raise PathRejected(OUTSIDE)
                continue
            if spot.tail:  # below a folder that does not exist: nothing to look up
                spot.tail.append(part)
                continue
            mode = getattr(_lstat(spot.folder, part), "st_mode", 0)
            link = stat.S_ISLNK(mode) and bool(pending or follow_last)
            if not link and not (stat.S_ISDIR(mode) and pending):
                # Missing, not a folder (so nothing below it exists), or the target itself.
                spot.tail.append(part)
                continue
            budget -= 1  # a symlink followed, or a component that changed since the lstat
            if budget < 0:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), rel)
            try:
                if link:
                    pending.extendleft(reversed(self._link_parts(spot, part)))
                else:
                    spot.down(part)
                    budget += 1  # an ordinary step after all
            except OSError as e:
                if e.errno not in _CHANGED:
                    raise
                pending.appendleft(part)  # it changed since the lstat: look again

    def _link_parts(self, spot: _Spot, name: str) -> list[str]:
        """The components to walk instead of the symlink ``name`` in ``spot.folder``."""
        path, dir_fd = at(spot.folder, name)
        target = PurePosixPath(os.readlink(path, dir_fd=dir_fd))
        if target.is_absolute():
            if not target.is_relative_to(self.root):
                raise PathRejected(OUTSIDE)
            spot.to_root()
            target = target.relative_to(self.root)
        return [part for part in target.parts if part != "."]

    def _check_protected(self, real: list[str]) -> None:
        if real and _is_git(real[0]):
            raise PathRejected(PROTECTED_GIT)
        folded = tuple(part.casefold() for part in real)
        if self._fenced or any(folded[: len(p)] == p for p in self._protected):
            raise PathRejected(PROTECTED_AGENT)

    def _symlink_reason(self, rel: str) -> str:
        """Why a final symlink may not be written: its target's reason if it has one (outside,
        protected), else that it is a symlink."""
        with contextlib.suppress(OSError), self._locate(rel, for_write=False):
            pass
        return SYMLINK

    # --- listing ----------------------------------------------------------------------------

    def list_files(self, limit: int = 1000) -> Listing:
        """The regular files the LLM is shown: sorted, at most ``limit`` of them.

        Symlinks are neither listed nor followed, so the listing never shows anything outside
        the root.  Left out: ``.git``, the agent's folders and SKIPPED_DIRS at any depth, and
        what the ``.gitignore`` files (nested ones too) and ``.git/info/exclude`` ignore; a
        folder left out is not even entered.  ``omitted`` counts only the files the listing
        would show but for the cap: ignored and skipped files are not counted.

        Only the files that can still be among the first ``limit`` are stat'ed for their
        sizes, which keeps a 100k-file tree within a few times a bare ``os.walk``.
        """
        shown = _Shown(limit)
        self._walk(shown)
        return shown.listing()

    def _walk(self, shown: _Shown) -> None:
        # Iterative, not recursive: a reply's RUN_COMMAND can nest folders thousands deep.
        # Each folder is opened from its parent without following symlinks, like the guard.
        root = self._open_root()
        pending: list[_Pending] = []
        try:
            rules = _add_rules(None, "", _ignore_lines(root, ".git", "info", "exclude"))
            self._scan(root, "", "", rules, pending, shown)
            while pending:
                where = pending.pop()
                try:
                    folder = _open_dir(where.parent.folder, where.name)
                except OSError:
                    continue  # replaced or vanished since it was listed
                finally:
                    where.parent.release()
                self._scan(folder, where.rel, where.shown_as, where.rules, pending, shown)
        finally:
            for where in pending:
                where.parent.release()

    def _scan(
        self,
        folder: Folder,
        rel: str,
        shown_as: str,
        rules: _Rules | None,
        pending: list[_Pending],
        shown: _Shown,
    ) -> None:
        """Hand the files in ``folder`` to ``shown``; queue its subfolders on ``pending``.

        ``rel`` is the folder's real path ('' or ending in '/'), ``shown_as`` that path as the
        listing shows it, ``rules`` the ignore rules in force above it.  Entries are judged by
        their names and types alone (no stat): the loop costs little more than a bare walk.
        """
        rules = _add_rules(rules, rel, _ignore_lines(folder, ".gitignore"))
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
            if not self._skipped(rel + name)
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

    def _skipped(self, rel: str) -> bool:
        name = rel.rpartition("/")[2]
        folded = tuple(part.casefold() for part in rel.split("/"))
        return _is_git(name) or name in SKIPPED_DIRS or folded in self._protected

    # --- reading ------------------------------------------------------------------------------

    def is_file(self, rel: str) -> bool:
        """Whether ``rel`` names an existing regular file (symlinks to one count).

        A file with more than one hard link is :class:`PathRejected` rather than False.
        """
        info = self._target_status(rel)
        if info is not None and _is_multi_linked(info):
            raise PathRejected(HARDLINK)
        return info is not None and stat.S_ISREG(info.st_mode)

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` names an existing folder."""
        info = self._target_status(rel)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def _target_status(self, rel: str) -> os.stat_result | None:
        try:
            with self._locate(rel, for_write=False) as spot:
                if not spot.tail:
                    return os.stat(spot.folder)
                return _lstat(spot.folder, spot.tail[0]) if len(spot.tail) == 1 else None
        except OSError:
            return None  # a symlink loop or a file used as a folder: nothing is there

    def file_size(self, rel: str) -> int:
        """The size of the regular file ``rel`` names, under the same rules as reading it."""
        fd = self._open_regular(rel)
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """The file's bytes, at most ``limit`` of them; :class:`FileNotFoundError` if it is
        missing or not a regular file."""
        with os.fdopen(self._open_regular(rel), "rb") as f:
            return f.read(-1 if limit is None else limit)

    def _open_regular(self, rel: str) -> int:
        with self._locate(rel, for_write=False) as spot:
            if len(spot.tail) != 1:
                raise _not_found(rel)
            return _open_file(spot.folder, spot.tail[0], rel)

    # --- writing ------------------------------------------------------------------------------

    def write_text(self, rel: str, text: str) -> bool:
        """Write ``text`` atomically, creating parent folders; True if the file is new.

        An existing file keeps its mode.  Refuses a folder, a symlink and a hard-linked file.
        """
        with self._locate(rel, for_write=True) as spot:
            info = self._writable_status(spot, rel)
            self._will_change(spot)
            folder, name = spot.make_parents()
            atomic_write_at(folder, name, text)
        return info is None

    def delete(self, rel: str) -> None:
        """Remove one file; folders are refused with :class:`IsADirectoryError`."""
        with self._locate(rel, for_write=True) as spot:
            info = self._writable_status(spot, rel)
            if info is None:
                raise _not_found(rel)
            self._will_change(spot)
            path, dir_fd = at(spot.folder, spot.tail[0])
            os.unlink(path, dir_fd=dir_fd)

    @staticmethod
    def _writable_status(spot: _Spot, rel: str) -> os.stat_result | None:
        """The status of the target a write would replace (None: it does not exist yet)."""
        if not spot.tail:
            raise _is_a_directory(rel)
        info = _lstat(spot.folder, spot.tail[0]) if len(spot.tail) == 1 else None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise _is_a_directory(rel)
        if info is not None and _is_multi_linked(info):
            raise PathRejected(HARDLINK)
        return info

    # --- pre-images: what undo and recovery restore -------------------------------------

    def _will_change(self, spot: _Spot) -> None:
        if self.before_change is not None:
            pre = self._preimage(spot)
            try:
                self.before_change(pre)
            finally:
                if pre.stream is not None:
                    pre.stream.close()

    def _preimage(self, spot: _Spot) -> PreImage:
        rel = "/".join(spot.real)
        if len(spot.tail) > 1:
            dirs = ["/".join(spot.names + spot.tail[:n]) for n in range(1, len(spot.tail))]
            return PreImage(rel, None, None, tuple(dirs))
        try:
            fd = _open_file(spot.folder, spot.tail[0], rel)
        except FileNotFoundError:  # absent, or not a regular file: restoring removes it
            return PreImage(rel, None, None)
        f = os.fdopen(fd, "rb")
        info = os.fstat(fd)
        mode = stat.S_IMODE(info.st_mode)
        if info.st_size > PREIMAGE_IN_MEMORY:  # a 100 GB file must not be read into memory
            return PreImage(rel, None, mode, stream=f)
        with f:
            return PreImage(rel, f.read(), mode)

    def restore(self, pre: PreImage) -> None:
        """Put a file back as ``pre`` says: its bytes and mode, or absent; and clean up.

        Also removes a temp file an interrupted atomic write may have left beside it, and the
        folders the change created, when they are empty again.  A hard link now in its place is
        replaced, not written through.
        """
        with self._locate(pre.path, for_write=True, recorded=True) as spot:
            if not spot.tail:
                raise _is_a_directory(pre.path)
            if len(spot.tail) == 1:
                _remove_temp_files(spot.folder, spot.tail[0])
            if pre.existed:
                folder, name = spot.make_parents()
                content = pre.data if pre.data is not None else pre.stream
                atomic_write_at(folder, name, content, mode=pre.mode)  # type: ignore[arg-type]
            elif len(spot.tail) == 1:
                info = _lstat(spot.folder, spot.tail[0])
                if info is not None and stat.S_ISREG(info.st_mode):
                    path, dir_fd = at(spot.folder, spot.tail[0])
                    os.unlink(path, dir_fd=dir_fd)
        for folder in reversed(pre.created_dirs):
            with contextlib.suppress(OSError, PathRejected):  # not empty, or gone: leave it
                self._rmdir(folder)

    def _rmdir(self, rel: str) -> None:
        with self._locate(rel, for_write=True, recorded=True) as spot:
            if len(spot.tail) == 1:
                path, dir_fd = at(spot.folder, spot.tail[0])
                os.rmdir(path, dir_fd=dir_fd)


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
    rules: _Rules | None  # the ignore rules in force above it


class _Shown:
    """The first ``limit`` files in path order, with their sizes, and how many there are.

    Files arrive in any order.  One that sorts after ``limit`` files already found cannot be
    shown: it is counted but not stat'ed.  As the walk takes folders in name order, that is
    nearly every file after the first ``limit``.
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(0, limit)
        self._kept: list[tuple[str, int]] = []
        self._trim_at = self._limit
        self._bound: str | None = None if limit > 0 else ""  # paths after it cannot be shown
        self._count = 0

    def add(self, path: str, entry: os.DirEntry[str]) -> None:
        """Count the regular file ``entry``; keep it with its size if it may be shown."""
        self._count += 1
        if self._bound is not None and path > self._bound:
            return
        try:  # relative to its folder, still open: no path is looked up again
            info = entry.stat(follow_symlinks=False)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):  # vanished or replaced meanwhile
            self._count -= 1
            return
        self._kept.append((path, info.st_size))
        if len(self._kept) >= self._trim_at:
            self._kept.sort()
            del self._kept[self._limit :]
            self._bound = self._kept[-1][0]
            self._trim_at = 2 * self._limit

    def listing(self) -> Listing:
        entries = sorted(self._kept)[: self._limit]
        return Listing(entries=entries, omitted=self._count - len(entries))


_IGNORE_FILE_MAX = 1024 * 1024  # bytes of an ignore file honoured; a bigger one is cut there

# An exclude line tested without a regex: an optional '**/', then a literal name or '*' and a
# literal suffix, then an optional '/' (folders only).  Others: the regex pathspec makes.
_PLAIN = re.compile(r"(?:\*\*/)?(?P<star>\*?)(?P<text>[^\s!#*?\[\]\\/][^*?\[\]\\/]*)(?P<folder>/?)")


@dataclass(frozen=True)
class _Rules:
    """The ignore rules in force in one folder: ``.git/info/exclude`` and each ``.gitignore``
    from the root down to the folder, in rising precedence, as git ranks them.

    Each entry is judged by itself, as git does: what is inside an ignored folder is never
    looked at, and a pattern matching a parent folder says nothing about the entry.  The sets
    and patterns besides ``levels`` only tell quickly that no exclude pattern can match, the
    answer for nearly every file: a name pattern is tested on the name alone, a path pattern
    only at the depth it can match.  Negations only re-include: an entry no exclude pattern
    matches is kept.
    """

    levels: tuple[tuple[str, tuple[_Pattern, ...]], ...] = ()  # (folder: '' or '.../', lines)
    names: frozenset[str] = frozenset()  # a file or folder with such a name may be ignored
    folder_names: frozenset[str] = frozenset()  # a folder (with those of 'name/' lines)
    suffixes: tuple[str, ...] = ()  # from '*.log' lines
    folder_suffixes: tuple[str, ...] = ()
    name_patterns: tuple[re.Pattern[str], ...] = ()  # other name patterns that exclude
    path_patterns: tuple[tuple[int, _Pattern], ...] = ()  # (where its folder's path ends, ...)

    def judge(self, rel: str) -> _Judge:
        """These rules as they apply in the folder ``rel`` ('' or ending in '/')."""
        here = tuple(
            (start, pattern)
            for start, pattern in self.path_patterns
            if pattern.depth in (0, rel.count("/", start) + 1)
        )
        return _Judge(self, rel, here)

    def decide(self, rel: str, name: str) -> bool:
        """Whether the entry ``name`` ('/'-terminated for a folder) in ``rel`` is ignored: the
        last line that matches it, in the deepest ignore file with one, says."""
        for base, patterns in reversed(self.levels):
            path = rel[len(base) :] + name
            for pattern in reversed(patterns):
                if pattern.matches(name, path):
                    return pattern.ignores
        return False

    def below(self, base: str, lines: list[str]) -> _Rules:
        """These rules with those of the ignore file ``lines`` in the folder ``base`` added."""
        patterns = [pattern for pattern in map(_Pattern.read, lines) if pattern is not None]
        if not patterns:
            return self
        names, folder_names = set(self.names), set(self.folder_names)
        suffixes, folder_suffixes = list(self.suffixes), list(self.folder_suffixes)
        name_patterns, path_patterns = list(self.name_patterns), list(self.path_patterns)
        for pattern in patterns:
            plain = _PLAIN.fullmatch(pattern.line) if pattern.ignores else None
            if plain is not None:
                text, folder_only = plain["text"], bool(plain["folder"])
                if plain["star"]:
                    folder_suffixes.append(text)
                    if not folder_only:
                        suffixes.append(text)
                else:
                    folder_names.add(text)
                    if not folder_only:
                        names.add(text)
            elif pattern.ignores and pattern.on_name:
                name_patterns.append(pattern.regex)
            elif pattern.ignores:
                path_patterns.append((len(base), pattern))
        return _Rules(
            levels=(*self.levels, (base, tuple(patterns))),
            names=frozenset(names),
            folder_names=frozenset(folder_names),
            suffixes=tuple(suffixes),
            folder_suffixes=tuple(folder_suffixes),
            name_patterns=tuple(name_patterns),
            path_patterns=tuple(path_patterns),
        )


@dataclass(frozen=True, slots=True)
class _Pattern:
    """One line of an ignore file, with the regex pathspec translates it to.

    pathspec's regexes also match everything below what the line names (a flat matcher's
    way of ignoring a folder's contents).  The listing never enters an ignored folder, so it
    wants the entry itself: a match must end where the path ends.
    """

    line: str  # without trailing blanks, as pathspec reads it
    regex: re.Pattern[str]
    ignores: bool  # False for a negation ('!keep.log')
    on_name: bool  # no '/' but a trailing one: it matches a name, at any depth
    inside: bool  # ends in '/**': it matches what is in a folder, not the folder
    folders: bool  # ends in '/': it matches folders only
    depth: int  # how many names below the ignore file's folder it can match; 0: any number

    @staticmethod
    def read(line: str) -> _Pattern | None:
        """The line as pathspec reads it; None for a blank line, a comment, or a line pathspec
        cannot read: git skips those too."""
        from pathspec import GitIgnoreSpec  # imported here: slow, and only needed for these

        try:
            with warnings.catch_warnings():  # "possible nested set" for a '[[:alpha:]]'
                warnings.simplefilter("ignore")
                parsed = GitIgnoreSpec.from_lines([line]).patterns
        except (ValueError, re.error):  # a lone '!', a trailing '\\', a '[z-a]'
            return None
        if len(parsed) != 1 or parsed[0].include is None or parsed[0].regex is None:
            return None
        line = line.rstrip()
        text = line.removeprefix("!").removesuffix("/")
        on_name = not any(mark in text.removeprefix("**/") for mark in "/\\")
        return _Pattern(
            line,
            parsed[0].regex,
            ignores=parsed[0].include,
            on_name=on_name,
            inside=text.endswith("/**"),
            folders=line.endswith("/"),
            depth=0 if on_name else _depth(text),
        )

    def matches(self, name: str, path: str) -> bool:
        """Whether the line matches the entry ``name``, at ``path`` below the ignore file's
        folder (both '/'-terminated for a folder), itself rather than a folder above it."""
        if self.on_name:  # a name holds no parent folder to match
            return self.regex.search(name) is not None
        if not self.inside:  # a match of the whole path, not of a prefix: not a parent's
            return self.regex.fullmatch(path) is not None
        if not path.endswith("/"):  # a file: anything below the folder is
            return not self.folders and self.regex.search(path) is not None
        # A folder below the line's folder, but not that folder itself (which ends the path).
        return self.regex.search(path, 0, len(path) - 1) is not None


@dataclass(frozen=True, slots=True)
class _Judge:
    """The ignore rules applied to the entries of one folder, ``rel`` ('' or ending in '/')."""

    rules: _Rules
    rel: str
    path_patterns: tuple[tuple[int, _Pattern], ...]  # those that can match here

    def ignores_file(self, name: str) -> bool:
        """Whether the file ``name`` is ignored."""
        rules = self.rules
        if name in rules.names or name.endswith(rules.suffixes) or self._matched(name):
            return rules.decide(self.rel, name)
        return False

    def ignores_folder(self, name: str) -> bool:
        """Whether the folder ``name`` is ignored, and so not entered."""
        rules = self.rules
        maybe = name in rules.folder_names or name.endswith(rules.folder_suffixes)
        if maybe or self._matched(name + "/"):
            return rules.decide(self.rel, name + "/")
        return False

    def _matched(self, name: str) -> bool:
        """Whether an exclude pattern kept as a regex matches ``name`` (or its path) here."""
        if not (self.rules.name_patterns or self.path_patterns):  # the usual case: cheap
            return False
        for regex in self.rules.name_patterns:
            if regex.search(name):
                return True
        path = self.rel + name
        return any(pattern.matches(name, path[start:]) for start, pattern in self.path_patterns)


def _depth(text: str) -> int:
    """How many names below its ignore file's folder a path pattern matches (0: any number)."""
    text = text.removeprefix("/")
    if any(mark in f"/{text}/" for mark in ("**", "[", "\\", "//", "/./", "/../")):
        return 0
    return text.count("/") + 1


def _add_rules(rules: _Rules | None, base: str, lines: list[str]) -> _Rules | None:
    """``rules`` with those of an ignore file in the folder ``base``; None: nothing is ignored."""
    if not lines:
        return rules
    added = (rules or _Rules()).below(base, lines)
    return added if added.levels else None


def _ignore_lines(folder: Folder, *path: str) -> list[str]:
    """The lines of the ignore file at ``path`` below ``folder``; none unless it is a regular
    file (reached, like everything the listing opens, without following a symlink)."""
    opened: list[Folder] = []
    try:
        for name in path[:-1]:
            folder = _open_dir(folder, name)
            opened.append(folder)
        with os.fdopen(_open_file(folder, path[-1], "/".join(path)), "rb") as f:
            data = f.read(_IGNORE_FILE_MAX)
    except (OSError, PathRejected):
        return []
    finally:
        for each in opened:
            close_folder(each)
    return os.fsdecode(data).removeprefix("\ufeff").splitlines()


def _open_file(folder: Folder, name: str, rel: str) -> int:
    """A read descriptor of the regular file ``name``: FileNotFoundError for anything else,
    :class:`PathRejected` for a file with more than one hard link."""
    path, dir_fd = at(folder, name)
    try:
        fd = os.open(path, _FILE_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        raise _not_found(rel) from None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    if stat.S_ISREG(info.st_mode):
        raise PathRejected(HARDLINK)
    raise _not_found(rel)


def _remove_temp_files(folder: Folder, name: str) -> None:
    prefix, suffix = temp_names_of(name)
    for entry in os.listdir(folder):
        if entry.startswith(prefix) and entry.endswith(suffix):
            path, dir_fd = at(folder, entry)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path, dir_fd=dir_fd)
