"""The one way this project writes a file: atomically.

Every writer (workspace files, outbox prompts, session state, history) goes through
:func:`atomic_write`, so a reader never sees half a file and a crash leaves either the old
content or the new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before threads start.
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _read_umask()


def _fsync_dir(folder: Path) -> None:
    # Directories cannot be opened for fsync on Windows; there the rename is already durable.
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename, fsync.

    ``mode`` sets the file's permission bits; by default an existing file keeps its mode and a
    new one gets ``0o666`` minus the umask, like a plain ``open(path, "w")``.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
