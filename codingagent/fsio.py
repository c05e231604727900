"""The one way this project writes a file: atomically.

Every writer (workspace files, outbox prompts, session state, history) goes through
:func:`atomic_write_at`, usually by way of :func:`atomic_write`, so a reader never sees half a
file and a crash leaves either the old content or the new one.

:func:`atomic_write_at` names the file by an open folder and a bare name, so the sandbox can
write through the folder descriptors it walked (no path is ever looked up again, so no symlink
swapped in meanwhile can redirect the write).  Where the OS has no directory descriptors
(Windows) the folder is a path string instead.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

# A folder as the *at() calls take it: an open descriptor (POSIX) or a path (Windows).
Folder = int | str

_DIR_FDS = os.open in os.supports_dir_fd
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before threads start.
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _read_umask()

# Inside folder_syncs_grouped(): the folders whose fsync waits for the end of the block, each
# as a duplicated descriptor, keyed by (device, inode) so a folder is fsynced once.
_grouped: ContextVar[dict[tuple[int, int], int] | None] = ContextVar("grouped", default=None)
# ... and the files written with ``later=True`` whose data fsync waits for it too.
_files_later: ContextVar[list[int] | None] = ContextVar("files_later", default=None)


def at(folder: Folder, name: str) -> tuple[str, int | None]:
    """``(path, dir_fd)`` arguments for an ``os`` call on ``name`` inside ``folder``."""
    if isinstance(folder, int):
        return name, folder
    return os.path.join(folder, name), None


def open_folder(path: str | Path) -> Folder:
    """A folder to pass to :func:`atomic_write_at`; close it with :func:`close_folder`."""
    if not _DIR_FDS:
        return str(path)
    return os.open(path, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)


def close_folder(folder: Folder) -> None:
    if isinstance(folder, int):
        os.close(folder)


def atomic_write(
    path: Path, data: bytes | str | BinaryIO, mode: int | None = None, later: bool = False
) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename, fsync.

    ``mode`` sets the file's permission bits; by default an existing file keeps its mode and a
    new one gets ``0o666`` minus the umask, like a plain ``open(path, "w")``. ``later``: see
    :func:`atomic_write_at`.
    """
    path = Path(path)
    try:
        folder = open_folder(path.parent)
        try:
            atomic_write_at(folder, path.name, data, mode, later)
        finally:
            close_folder(folder)
    except OSError as e:
        naming(e, path)
        raise


def naming(error: OSError, path: str | Path) -> OSError:
    """``error`` with ``path`` as its file, unless it already names an absolute path: a write
    through a folder descriptor names only a bare or a temp name, a failed write() nothing.
    So a fault's message can say which file (see :mod:`codingagent.faults`)."""
    if not (isinstance(error.filename, str) and os.path.isabs(error.filename)):
        error.filename = str(path)
    return error


def atomic_write_at(
    folder: Folder,
    name: str,
    data: bytes | str | BinaryIO,
    mode: int | None = None,
    later: bool = False,
) -> None:
    """:func:`atomic_write` of the file ``name`` in the open ``folder``.

    ``data`` may be an open binary file: it is copied in chunks, so its size never matters,
    and the holes of a sparse file stay holes.

    The temp file is created with ``O_EXCL | O_NOFOLLOW`` and renamed over ``name`` within the
    same folder, so neither step can follow a symlink; a hard link at ``name`` is replaced,
    never written through.

    ``later``, inside a :func:`folder_syncs_grouped` block: the file's data is fsynced when
    the block ends (with every other such file and folder at once), not before the rename. For
    a transaction's writes that its write-ahead journal can undo until the block's end (a
    crash before it rolls them back); outside a block, the same as without.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    if mode is None:
        mode = _current_mode(folder, name)
    tmp, fd = _create_temp(folder, name)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                _copy_keeping_holes(data, f)
            f.flush()
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            waiting = _files_later.get() if later else None
            if waiting is None:
                os.fsync(f.fileno())
            else:
                waiting.append(os.dup(f.fileno()))
        src, src_fd = at(folder, tmp)
        dst, dst_fd = at(folder, name)
        os.replace(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path, dir_fd = at(folder, tmp)
            os.unlink(path, dir_fd=dir_fd)
        raise
    _fsync_folder(folder)


def _copy_keeping_holes(source: BinaryIO, target: BinaryIO) -> None:
    """Copy ``source`` from its start into ``target``; only its data segments are written, so
    a 500 MB sparse file holding a few bytes costs a few bytes (where the OS says where its
    holes are: ``SEEK_DATA``/``SEEK_HOLE``)."""
    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd < 0 or not hasattr(os, "SEEK_DATA") or source.tell() != 0:
        shutil.copyfileobj(source, target, _CHUNK)
        return
    size = os.fstat(fd).st_size
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: only a hole is left
                raise
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        target.seek(start)
        while start < end:
            chunk = os.pread(fd, min(_CHUNK, end - start), start)
            if not chunk:
                break
            target.write(chunk)
            start += len(chunk)
        offset = end
    target.truncate(size)


_CHUNK = 1024 * 1024


def _current_mode(folder: Folder, name: str) -> int:
    """The mode of the regular file ``name``, or what a new file gets (also in place of a
    symlink, which is not followed)."""
    path, dir_fd = at(folder, name)
    try:
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return 0o666 & ~_UMASK
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else 0o666 & ~_UMASK


def temp_names_of(name: str) -> tuple[str, str]:
    """The prefix and suffix of the temp files :func:`atomic_write_at` makes for ``name``: what
    a clean-up after a crash looks for.

    The temp name is the file's name plus 14 characters; a name too long for that (over 200
    bytes: file names stop at 255) is replaced by a short digest of it.
    """
    raw = os.fsencode(name)
    stem = name if len(raw) <= 200 else hashlib.sha256(raw).hexdigest()[:16]
    return f".{stem}.", ".tmp"


def _create_temp(folder: Folder, name: str) -> tuple[str, int]:
    prefix, suffix = temp_names_of(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
    while True:
        tmp = f"{prefix}{secrets.token_hex(4)}{suffix}"
        path, dir_fd = at(folder, tmp)
        try:
            return tmp, os.open(path, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue


@contextlib.contextmanager
def folder_syncs_grouped() -> Iterator[None]:
    """Within this block (in this thread), atomic writes fsync each file's data as always
    (those with ``later=True`` when the block ends), but each folder a file was renamed into is
    fsynced once, when the block ends, not after every rename; those fsyncs are issued at once,
    from a few threads, so that the file system can commit them together.  For a transaction:
    its renames are durable before the code after the block (the commit point) runs; a write
    that must be durable at once belongs outside the block.
    """
    pending: dict[tuple[int, int], int] = {}
    files: list[int] = []
    token, files_token = _grouped.set(pending), _files_later.set(files)
    try:
        yield
        fds = [*files, *pending.values()]
        if len(fds) > 1:  # at once: the file system can commit them together
            list(_syncer().map(os.fsync, fds))
        elif fds:
            os.fsync(fds[0])
    finally:
        _grouped.reset(token)
        _files_later.reset(files_token)
        for fd in [*files, *pending.values()]:
            os.close(fd)


@functools.cache
def _syncer() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="fsync")


def note_folder(path: Path) -> None:
    """Make the entries of the folder ``path`` durable: now, or at the end of the
    :func:`folder_syncs_grouped` block this runs in."""
    folder = open_folder(path)
    try:
        _fsync_folder(folder)
    finally:
        close_folder(folder)


def fsync_folder(path: Path) -> None:
    """Make the entries of the folder ``path`` (files created, renamed, removed) durable now."""
    folder = open_folder(path)
    try:
        if isinstance(folder, int):
            os.fsync(folder)
    finally:
        close_folder(folder)


def _fsync_folder(folder: Folder) -> None:
    # Directories cannot be opened for fsync on Windows; there the rename is already durable.
    if not isinstance(folder, int):
        return
    pending = _grouped.get()
    if pending is None:
        os.fsync(folder)
        return
    info = os.fstat(folder)
    key = (info.st_dev, info.st_ino)
    if key not in pending:
        pending[key] = os.dup(folder)
