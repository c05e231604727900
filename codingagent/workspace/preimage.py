"""Pre-images: a file as it was before a change, taken just before it, and put back on undo.

What keeps a turn whole (a :class:`Keeper`: the turn's journal, lent to the executor for the
turn's commands) receives the pre-image of every file a write or delete is about to change
(:func:`will_change`), so that a turn can be rolled back or undone (:func:`restore`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from codingagent.fsio import O_CLOEXEC, O_NOFOLLOW, Folder, at, atomic_write_at, temp_names_of
from codingagent.workspace.pathguard import (
    Guard,
    PathRejected,
    Spot,
    is_a_directory,
    lstat,
    open_file,
)

PREIMAGE_IN_MEMORY = 1024 * 1024  # bytes of a file's pre-image held in memory; more: a stream
_CHUNK = 1024 * 1024


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
    by: str = ""  # what changed the file, when not the file command itself (a RUN_COMMAND)

    @property
    def existed(self) -> bool:
        return self.data is not None or self.stream is not None


class Keeper(Protocol):
    """What keeps a turn whole, as the workspace's writes see it (the turn's journal,
    ``codingagent.transaction.journal``): handed each file's pre-image before it changes.
    :meth:`codingagent.workspace.Workspace.kept` lends it to the writes of one block."""

    def record(self, pre: PreImage) -> None:
        """Keep ``pre`` durably: its file is about to be written or deleted."""

    def record_all(self, pres: list[PreImage]) -> None:
        """Keep ``pres`` durably, in one go, before the first of their files changes."""


def will_change(spot: Spot, before_change: Callable[[PreImage], None] | None) -> None:
    """Hand ``before_change`` the pre-image of the file ``spot`` leads to, if it is set."""
    if before_change is not None:
        pre = preimage_at(spot)
        try:
            before_change(pre)
        finally:
            if pre.stream is not None:
                pre.stream.close()


def preimage_at(spot: Spot) -> PreImage:
    """The pre-image of the file ``spot`` leads to (a big one as an open stream)."""
    rel = "/".join(spot.real)
    if len(spot.tail) > 1:
        dirs = ["/".join(spot.names + spot.tail[:n]) for n in range(1, len(spot.tail))]
        return PreImage(rel, None, None, tuple(dirs))
    try:
        fd = open_file(spot.folder, spot.tail[0], rel)
    except FileNotFoundError:  # absent, or not a regular file: restoring removes it
        return PreImage(rel, None, None)
    f = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_size > PREIMAGE_IN_MEMORY:  # a 100 GB file must not be read into memory
        return PreImage(rel, None, mode, stream=f)
    with f:
        return PreImage(rel, f.read(), mode)


def restore(guard: Guard, pre: PreImage) -> None:
    """Put a file back as ``pre`` says: its bytes and mode, or absent; and clean up.

    Also removes a temp file an interrupted atomic write may have left beside it, and the
    folders the change created, when they are empty again.  A hard link now in its place is
    replaced, not written through.  A file already as ``pre`` says is not written again, so
    rolling back a turn on a full or read-only disk does not fail on a file it never changed.
    """
    with guard.locate(pre.path, for_write=True, recorded=True) as spot:
        if not spot.tail:
            raise is_a_directory(pre.path)
        if len(spot.tail) == 1:
            _remove_temp_files(spot.folder, spot.tail[0])
        if pre.existed:
            if len(spot.tail) > 1 or not _holds(spot.folder, spot.tail[0], pre):
                _write_back(*spot.make_parents(), pre)
        elif len(spot.tail) == 1:
            info = lstat(spot.folder, spot.tail[0])
            if info is not None and stat.S_ISREG(info.st_mode):
                path, dir_fd = at(spot.folder, spot.tail[0])
                os.unlink(path, dir_fd=dir_fd)
    for folder in reversed(pre.created_dirs):
        with contextlib.suppress(OSError, PathRejected):  # not empty, or gone: leave it
            _rmdir(guard, folder)


def _write_back(folder: Folder, name: str, pre: PreImage) -> None:
    """Write the saved content back atomically; on a full disk, over the file in place.

    In place needs no room for a second copy, and it is safe here: the pre-image stays in the
    journal until every file is back, so a crash midway is finished by recovery.
    """
    content = pre.data if pre.data is not None else pre.stream
    try:
        atomic_write_at(folder, name, content, mode=pre.mode)  # type: ignore[arg-type]
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT) or not _rewrite(folder, name, pre):
            raise


def _rewrite(folder: Folder, name: str, pre: PreImage) -> bool:
    """Overwrite the regular, singly linked file ``name`` with ``pre``'s content; False when
    ``name`` is no such file (nothing was written)."""
    path, dir_fd = at(folder, name)
    try:
        fd = os.open(path, os.O_RDWR | O_NOFOLLOW | O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    with os.fdopen(fd, "r+b") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return False
        f.truncate(0)
        if pre.data is not None:
            f.write(pre.data)
        else:
            assert pre.stream is not None
            pre.stream.seek(0)
            shutil.copyfileobj(pre.stream, f, _CHUNK)
        f.flush()
        if pre.mode is not None:
            os.fchmod(fd, pre.mode)
        os.fsync(fd)
    return True


def _holds(folder: Folder, name: str, pre: PreImage) -> bool:
    """Whether the file ``name`` is already as ``pre`` says: a regular file, not hard-linked,
    with its mode and bytes.  A stream is compared in chunks and left at its start."""
    try:
        fd = open_file(folder, name, name)
    except (OSError, PathRejected):
        return False
    with os.fdopen(fd, "rb") as f:
        if stat.S_IMODE(os.fstat(fd).st_mode) != pre.mode:
            return False
        if pre.data is not None:
            return f.read(len(pre.data) + 1) == pre.data
        stream = pre.stream
        assert stream is not None
        start = stream.tell()
        try:
            while chunk := stream.read(_CHUNK):
                if f.read(len(chunk)) != chunk:
                    return False
            return not f.read(1)
        finally:
            stream.seek(start)


def _rmdir(guard: Guard, rel: str) -> None:
    with guard.locate(rel, for_write=True, recorded=True) as spot:
        if len(spot.tail) == 1:
            path, dir_fd = at(spot.folder, spot.tail[0])
            os.rmdir(path, dir_fd=dir_fd)


def _remove_temp_files(folder: Folder, name: str) -> None:
    prefix, suffix = temp_names_of(name)
    for entry in os.listdir(folder):
        if entry.startswith(prefix) and entry.endswith(suffix):
            path, dir_fd = at(folder, entry)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path, dir_fd=dir_fd)
