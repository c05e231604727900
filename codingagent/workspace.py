"""The sandbox the LLM's file commands run in: one path guard, listing, read, write, delete.

Every path the LLM writes is untrusted.  :meth:`Workspace.resolve` is the single place that
turns such a path into a real one, so it can later be swapped for a race-free walk with
directory file descriptors and ``O_NOFOLLOW`` without touching any caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .fsio import atomic_write

OUTSIDE = "Path is outside workspace"
EMPTY = "Path is empty"
BACKSLASH = "Path contains a backslash; use forward slashes (/)"
NUL = "Path contains a NUL character"
FOLDER = "Path ends with '/'; name a file"
PROTECTED_GIT = "Path is protected ('.git/')"
PROTECTED_AGENT = "Path is protected (agent folder)"
SYMLINK = "Path is a symlink"

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


def _is_git(name: str) -> bool:
    # Case-insensitive: on macOS and Windows `.GIT` is the same folder as `.git`.
    return name.casefold() == ".git"


def _check_spelling(rel: str) -> None:
    """Reject what must never be joined to the root at all, before touching the file system."""
    if not rel:
        raise PathRejected(EMPTY)
    if "\0" in rel:
        raise PathRejected(NUL)
    if "\\" in rel:  # also every UNC path and Windows-style relative path
        raise PathRejected(BACKSLASH)
    if rel.startswith("/") or _DRIVE.match(rel):
        raise PathRejected(OUTSIDE)


def display_name(name: str) -> str:
    """A file name as text the outbox can hold: undecodable bytes become ``\\xff`` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


class Workspace:
    """The folder the LLM works in, with the agent's own folders fenced off."""

    def __init__(self, root: Path, protected: Iterable[Path] = ()) -> None:
        root = Path(root).resolve(strict=True)
        if not root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Workspace is not a folder", str(root))
        self.root = root
        # Resolved like the paths they are compared with.  A protected folder that contains the
        # root fences off everything, which is the safe reading of a misconfiguration.
        self._protected = tuple(Path(os.path.realpath(p)) for p in protected)
        # Called with the pre-image of every file just before it is written or deleted; the
        # turn journal sets it so that a turn can be rolled back or undone.
        self.before_change: Callable[[PreImage], None] | None = None

    def resolve(self, rel: str, *, for_write: bool = False) -> Path:
        """The real path ``rel`` names inside the root, or :class:`PathRejected`.

        Every component is resolved (symlinks followed) and the result compared as a path with
        the resolved root, never as a string prefix.  ``for_write`` also refuses a final
        component that is a symlink, so a write or delete never goes through one.
        """
        _check_spelling(rel)
        # os.path.realpath, not Path.resolve: on Python 3.11 the latter raises on symlink loops.
        target = Path(os.path.realpath(self.root / rel))
        if not target.is_relative_to(self.root):
            raise PathRejected(OUTSIDE)
        inner = target.relative_to(self.root).parts
        if inner and _is_git(inner[0]):
            raise PathRejected(PROTECTED_GIT)
        if any(target.is_relative_to(p) for p in self._protected):
            raise PathRejected(PROTECTED_AGENT)
        if for_write and rel.endswith("/"):
            raise PathRejected(FOLDER)
        if for_write and os.path.islink(self.root / rel):
            raise PathRejected(SYMLINK)
        return target

    def relpath(self, rel: str) -> str:
        """The posix path, relative to the root, of the file ``rel`` really names."""
        return self.resolve(rel).relative_to(self.root).as_posix()

    def list_files(self, limit: int = 1000) -> Listing:
        """All regular files, sorted, at most ``limit`` of them; symlinks are neither listed
        nor followed, so the listing never shows anything outside the root."""
        entries = sorted(self._walk())
        return Listing(entries=entries[:limit], omitted=max(0, len(entries) - limit))

    def _walk(self) -> Iterator[tuple[str, int]]:
        # Iterative, not recursive: a reply's RUN_COMMAND can nest folders thousands deep.
        pending = [self.root]
        while pending:
            folder = pending.pop()
            try:
                with os.scandir(folder) as it:
                    children = list(it)
            except OSError:
                continue  # an unreadable folder is simply not listed
            for entry in children:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not self._skipped(entry):
                            pending.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        rel = Path(entry.path).relative_to(self.root).as_posix()
                        yield display_name(rel), entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # vanished while we looked

    def _skipped(self, entry: os.DirEntry[str]) -> bool:
        return (
            _is_git(entry.name) or entry.name in SKIPPED_DIRS or Path(entry.path) in self._protected
        )

    def is_file(self, rel: str) -> bool:
        """Whether ``rel`` names an existing regular file (symlinks to one count)."""
        return self.resolve(rel).is_file()

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` names an existing folder."""
        return self.resolve(rel).is_dir()

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """The file's bytes, at most ``limit`` of them; :class:`FileNotFoundError` if it is
        missing or not a file."""
        target = self.resolve(rel)
        if not target.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)
        with open(target, "rb") as f:
            return f.read(-1 if limit is None else limit)

    def write_text(self, rel: str, text: str) -> bool:
        """Write ``text`` atomically, creating parent folders; True if the file is new.

        An existing file keeps its mode; a hard link is replaced, never written through.
        """
        target = self.resolve(rel, for_write=True)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel)
        created = not os.path.lexists(target)
        self._will_change(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
        return created

    def delete(self, rel: str) -> None:
        """Remove one file; folders are refused with :class:`IsADirectoryError`."""
        target = self.resolve(rel, for_write=True)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel)
        if not target.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), rel)
        self._will_change(target)
        target.unlink()

    # --- pre-images: what undo and recovery restore -------------------------------------

    def _will_change(self, target: Path) -> None:
        if self.before_change is not None:
            self.before_change(self._preimage(target))

    def _preimage(self, target: Path) -> PreImage:
        rel = target.relative_to(self.root).as_posix()
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            missing = [p for p in target.parents if not p.exists() and p.is_relative_to(self.root)]
            dirs = tuple(p.relative_to(self.root).as_posix() for p in reversed(missing))
            return PreImage(rel, None, None, dirs)
        return PreImage(rel, target.read_bytes(), stat.S_IMODE(info.st_mode))

    def restore(self, pre: PreImage) -> None:
        """Put a file back as ``pre`` says: its bytes and mode, or absent; and clean up.

        Also removes a temp file an interrupted atomic write may have left beside it, and the
        folders the change created, when they are empty again.
        """
        target = self.resolve(pre.path, for_write=True)
        for stray in target.parent.glob(f".{target.name}.*.tmp"):
            stray.unlink(missing_ok=True)
        if pre.data is None:
            if target.is_file():
                target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, pre.data, mode=pre.mode)
        for folder in reversed(pre.created_dirs):
            with contextlib.suppress(OSError):  # not empty, or already gone: leave it
                (self.root / folder).rmdir()
