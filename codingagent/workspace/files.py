"""File operations through the guard: status, read, write, delete.

Each walks to its target once with :meth:`Guard.locate` and acts on the deepest folder's
descriptor and a bare name, so nothing is looked up again between the check and the use.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import BinaryIO

from codingagent.fsio import at, atomic_write_at
from codingagent.workspace.pathguard import (
    HARDLINK,
    Guard,
    PathRejected,
    Spot,
    is_a_directory,
    is_multi_linked,
    lstat,
    not_found,
    open_file,
)
from codingagent.workspace.preimage import PreImage, preimage_at, will_change


def is_file(guard: Guard, rel: str) -> bool:
    """Whether ``rel`` names an existing regular file (symlinks to one count).

    A file with more than one hard link is :class:`PathRejected` rather than False.
    """
    info = _target_status(guard, rel)
    if info is not None and is_multi_linked(info):
        raise PathRejected(HARDLINK)
    return info is not None and stat.S_ISREG(info.st_mode)


def is_dir(guard: Guard, rel: str) -> bool:
    """Whether ``rel`` names an existing folder."""
    info = _target_status(guard, rel)
    return info is not None and stat.S_ISDIR(info.st_mode)


def _target_status(guard: Guard, rel: str) -> os.stat_result | None:
    try:
        with guard.locate(rel, for_write=False) as spot:
            if not spot.tail:
                return os.stat(spot.folder)
            return lstat(spot.folder, spot.tail[0]) if len(spot.tail) == 1 else None
    except OSError:
        return None  # a symlink loop or a file used as a folder: nothing is there


def file_size(guard: Guard, rel: str) -> int:
    """The size of the regular file ``rel`` names, under the same rules as reading it."""
    fd = _open_regular(guard, rel)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def read_bytes(guard: Guard, rel: str, limit: int | None = None) -> bytes:
    """The file's bytes, at most ``limit`` of them; :class:`FileNotFoundError` if it is
    missing or not a regular file."""
    with open_bytes(guard, rel) as f:
        return f.read(-1 if limit is None else limit)


def open_bytes(guard: Guard, rel: str) -> BinaryIO:
    """The regular file ``rel`` open for reading (FileNotFoundError as for read_bytes)."""
    return os.fdopen(_open_regular(guard, rel), "rb")


def _open_regular(guard: Guard, rel: str) -> int:
    with guard.locate(rel, for_write=False) as spot:
        if len(spot.tail) != 1:
            raise not_found(rel)
        return open_file(spot.folder, spot.tail[0], rel)


def write_text(
    guard: Guard, rel: str, text: str, before_change: Callable[[PreImage], None] | None
) -> bool:
    """Write ``text`` atomically, creating parent folders; True if the file is new.

    An existing file keeps its mode.  Refuses a folder, a symlink and a hard-linked file.
    """
    with guard.locate(rel, for_write=True) as spot:
        info = _writable_status(spot, rel)
        will_change(spot, before_change)
        folder, name = spot.make_parents()
        atomic_write_at(folder, name, text, later=True)  # (a turn's: durable at its end)
    return info is None


def exists_for_write(guard: Guard, rel: str) -> bool:
    """Whether the file a write of ``rel`` would replace exists; refused as the write would
    refuse it (a folder, a symlink, a hard-linked file, a path the guard rejects)."""
    with guard.locate(rel, for_write=True) as spot:
        return _writable_status(spot, rel) is not None


def preimage(guard: Guard, rel: str) -> PreImage | None:
    """The pre-image of the file a write of ``rel`` would replace (or of its absence), as the
    write itself would record it; None where the write would be refused (a folder, a
    hard-linked file) or the file is too big to hold in memory."""
    with guard.locate(rel, for_write=True) as spot:
        _writable_status(spot, rel)
        pre = preimage_at(spot)
    if pre.stream is not None:
        pre.stream.close()
        return None
    return pre


def delete(guard: Guard, rel: str, before_change: Callable[[PreImage], None] | None) -> None:
    """Remove one file; folders are refused with :class:`IsADirectoryError`."""
    with guard.locate(rel, for_write=True) as spot:
        info = _writable_status(spot, rel)
        if info is None:
            raise not_found(rel)
        will_change(spot, before_change)
        path, dir_fd = at(spot.folder, spot.tail[0])
        os.unlink(path, dir_fd=dir_fd)


def _writable_status(spot: Spot, rel: str) -> os.stat_result | None:
    """The status of the target a write would replace (None: it does not exist yet)."""
    if not spot.tail:
        raise is_a_directory(rel)
    info = lstat(spot.folder, spot.tail[0]) if len(spot.tail) == 1 else None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise is_a_directory(rel)
    if info is not None and is_multi_linked(info):
        raise PathRejected(HARDLINK)
    return info
