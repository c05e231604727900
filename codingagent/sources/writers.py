"""Whether some process still has a file open for writing: a reply is never taken, deleted or
moved while it is (the inbox's rule, :mod:`codingagent.sources.watching`)."""

from __future__ import annotations

import os
from pathlib import Path


def open_for_writing(path: Path) -> bool:
    """Whether a process this one can see has the file ``path`` open for writing.

    Linux only (``/proc/*/fd`` and their ``fdinfo`` flags; without root, other users'
    processes are not seen); elsewhere False.  A reply is never taken, deleted or moved while
    it is open for writing.
    """
    try:
        wanted = os.stat(path, follow_symlinks=False)
        real = os.path.realpath(path)
        pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != real:
                    continue
                info = os.stat(f"/proc/{pid}/fd/{fd}")
                if (info.st_dev, info.st_ino) != (wanted.st_dev, wanted.st_ino):
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
                    flags = next(int(line.split()[1], 8) for line in f if line.startswith("flags"))
            except (OSError, StopIteration, ValueError):
                continue
            if flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
                return True
    return False
