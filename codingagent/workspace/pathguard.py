"""The path guard: the one place an untrusted path becomes something to act on.

Every path the LLM writes is untrusted, and so is everything a RUN_COMMAND left in the
workspace (symlinks, hard links, FIFOs).  :meth:`Guard.locate` is the single place that
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
from collections import deque
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from codingagent.fsio import (
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    Folder,
    at,
    close_folder,
    open_folder,
)

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


def is_git(name: str) -> bool:
    # Case-insensitive: on macOS and Windows `.GIT` is the same folder as `.git`.
    return name.casefold() == ".git"


def _check_spelling(rel: str, root: Path | None = None) -> list[str]:
    """Reject what must never be looked up at all; the path's components otherwise. An
    absolute path into ``root`` (or ``/workspace/``) is refused naming the relative path."""
    if not rel:
        raise PathRejected(EMPTY)
    if "\0" in rel:
        raise PathRejected(NUL)
    if _CONTROL.search(rel):
        raise PathRejected(CONTROL)
    if rel.startswith("/") or _DRIVE.match(rel):
        raise PathRejected(_absolute(rel, root))
    if "\\" in rel:  # also every UNC path and Windows-style relative path
        raise PathRejected(BACKSLASH)
    try:
        size = len(os.fsencode(rel))
    except UnicodeEncodeError:
        raise PathRejected(UNENCODABLE) from None
    if size > MAX_PATH_BYTES:
        raise PathRejected(TOO_LONG)
    parts = components(rel)
    for part in parts:
        _check_name(part)
    return parts


def _absolute(rel: str, root: Path | None) -> str:
    """Why an absolute path is refused; for one that names the workspace itself (its real
    prefix, or ``/workspace/`` as models guess it), with the relative path to write."""
    for prefix in ([f"{root.as_posix().rstrip('/')}/"] if root is not None else []) + [
        "/workspace/"
    ]:
        inside = rel[len(prefix) :].lstrip("/")
        if rel.startswith(prefix) and inside:
            return (
                f"{OUTSIDE} ('{rel}' is absolute); paths are relative to the workspace "
                f"folder: write '{inside}'"
            )
    return OUTSIDE


def components(rel: str) -> list[str]:
    return [part for part in rel.split("/") if part not in ("", ".")]


def _check_name(name: str) -> None:
    if ":" in name:
        raise PathRejected(STREAM)
    # Windows ignores the extension and trailing spaces: `con.txt` and `NUL ` are devices too.
    if name.split(".")[0].rstrip(" ").upper() in _RESERVED_NAMES:
        raise PathRejected(RESERVED)
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        raise PathRejected(NAME_TOO_LONG)


def open_dir(parent: Folder, name: str) -> Folder:
    """The folder ``name`` inside ``parent``, never through a symlink."""
    if isinstance(parent, int):
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    path = os.path.join(parent, name)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path


def lstat(folder: Folder, name: str) -> os.stat_result | None:
    """``name``'s own status (a symlink is not followed), or None if it does not exist."""
    path, dir_fd = at(folder, name)
    try:
        return os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_multi_linked(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def not_found(rel: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)


def is_a_directory(rel: str) -> IsADirectoryError:
    return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel)


class Spot:
    """Where a path leads, held open: the folders walked from the root down (the deepest is
    ``folder``), their real names, and ``tail``: the names below ``folder`` not opened.

    The last name of ``tail`` is the target (it may or may not exist); any before it are
    folders that do not exist yet.  An empty ``tail`` means the path names ``folder`` itself.
    """

    def __init__(self, root: Folder) -> None:
        self._stack = [root]
        self.names: list[str] = []
        self.tail: list[str] = []

    def __enter__(self) -> Spot:
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
        self._stack.append(open_dir(self.folder, name))
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


class Guard:
    """The workspace root and its fenced-off folders, and the walk every path goes through."""

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

    def resolve(self, rel: str, *, for_write: bool = False) -> Path:
        """The real path ``rel`` names inside the root, or :class:`PathRejected`.

        For showing and comparing paths only: act on files through the spot :meth:`locate`
        returns, which is not looked up again.  ``for_write`` applies the write rules (no
        final symlink, no trailing ``/``).  A symlink loop raises :class:`OSError` (``ELOOP``).
        """
        with self.locate(rel, for_write=for_write) as spot:
            return self.root.joinpath(*spot.real)

    def relpath(self, rel: str) -> str:
        """The posix path, relative to the root, of the file ``rel`` really names."""
        return self.resolve(rel).relative_to(self.root).as_posix()

    def open_root(self) -> Folder:
        """A descriptor of the root, checked to be the folder the workspace was made with."""
        folder = open_folder(self.root)
        if isinstance(folder, int):
            info = os.fstat(folder)
            if (info.st_dev, info.st_ino) != self._root_id:
                os.close(folder)
                raise OSError(errno.ESTALE, "The workspace folder was replaced", str(self.root))
        return folder

    def locate(self, rel: str, *, for_write: bool, recorded: bool = False) -> Spot:
        """Walk to what ``rel`` names; the caller closes the returned spot.

        Reading follows a final symlink; writing refuses it, with the reason its target gives
        if that is outside or protected.  A ``recorded`` path is a real path the agent wrote
        down itself (a pre-image's): it is walked the same way, but the spelling rules for
        what the LLM may write do not apply (a symlink's target may have led there).
        """
        parts = components(rel) if recorded else _check_spelling(rel, self.root)
        spot = Spot(self.open_root())
        try:
            self._walk_to(spot, parts, rel, follow_last=not for_write)
            self._check_protected(spot.real)
            if for_write and rel.endswith("/"):
                raise PathRejected(FOLDER)
            if for_write and len(spot.tail) == 1:
                info = lstat(spot.folder, spot.tail[0])
                if info is not None and stat.S_ISLNK(info.st_mode):
                    raise PathRejected(self._symlink_reason(rel))
        except BaseException:
            spot.close()
            raise
        return spot

    def _walk_to(self, spot: Spot, parts: list[str], rel: str, *, follow_last: bool) -> None:
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
            mode = getattr(lstat(spot.folder, part), "st_mode", 0)
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

    def _link_parts(self, spot: Spot, name: str) -> list[str]:
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
        if any(map(is_git, real)):  # at any depth: a nested repository's config runs code
            raise PathRejected(PROTECTED_GIT)
        folded = tuple(part.casefold() for part in real)
        if self._fenced or any(folded[: len(p)] == p for p in self._protected):
            raise PathRejected(PROTECTED_AGENT)

    def _symlink_reason(self, rel: str) -> str:
        """Why a final symlink may not be written: its target's reason if it has one (outside,
        protected), else that it is a symlink."""
        with contextlib.suppress(OSError), self.locate(rel, for_write=False):
            pass
        return SYMLINK

    def is_agent_folder(self, rel: str) -> bool:
        """Whether the real path ``rel`` is one of the agent's fenced-off folders."""
        return tuple(part.casefold() for part in rel.split("/")) in self._protected


def open_file(folder: Folder, name: str, rel: str) -> int:
    """A read descriptor of the regular file ``name``: FileNotFoundError for anything else,
    :class:`PathRejected` for a file with more than one hard link."""
    path, dir_fd = at(folder, name)
    try:
        fd = os.open(path, _FILE_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        raise not_found(rel) from None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    if stat.S_ISREG(info.st_mode):
        raise PathRejected(HARDLINK)
    raise not_found(rel)
