"""A pids cgroup for one command, where this process may make one (root, or a delegated
cgroup v1 ``pids`` hierarchy): the command's process limit, and the net that catches every
process it started, even one that left the session and lost its parent.

RLIMIT_NPROC cannot do either for root, whom the kernel exempts from it, and counts the whole
user's processes outside a user namespace.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time

_PIDS_ROOT = "/sys/fs/cgroup/pids"  # the cgroup v1 pids hierarchy
_PREFIX = "codingagent-"
_KILL_WAIT_S = 2.0
# A cgroup left behind (a killed process whose new parent had not yet reaped it, an agent that
# was killed) is removed by a later command once it is this old and empty.
_STALE_S = 60.0
# Joins the cgroup, then becomes the command: the first process is in it before it forks.
_JOIN = 'echo $$ > "$0" && exec "$@"'


@functools.cache
def pids_root() -> str | None:
    """The pids hierarchy this process may make cgroups in and move commands into (tried once
    with ``true``), or None."""
    procs = os.path.join(_PIDS_ROOT, "cgroup.procs")
    if not os.path.isfile(procs) or not os.access(_PIDS_ROOT, os.W_OK):
        return None
    try:
        group = PidsGroup(_PIDS_ROOT, f"probe-{os.getpid()}", 8)
    except OSError:
        return None
    try:
        done = subprocess.run(group.join_argv(["true"]), capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        group.close()
    return _PIDS_ROOT if done.returncode == 0 else None


class PidsGroup:
    """One command's cgroup: at most ``max_pids`` processes and threads."""

    def __init__(self, root: str, tag: str, max_pids: int) -> None:
        _sweep(root)
        self.path = os.path.join(root, f"{_PREFIX}{tag}")
        os.mkdir(self.path)
        self._write("pids.max", str(max_pids))

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv``, run inside this cgroup."""
        return ["/bin/sh", "-c", _JOIN, os.path.join(self.path, "cgroup.procs"), *argv]

    def close(self) -> bool:
        """Kill whatever is still in the cgroup and remove it; whether the limit was hit."""
        deadline = time.monotonic() + _KILL_WAIT_S
        while (pids := self._pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        events = self._read("pids.events").split()  # "max N": N forks were refused
        hit = len(events) == 2 and events[1] != "0"
        while True:  # busy until the killed processes have fully exited
            try:
                os.rmdir(self.path)
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
            return hit

    def _pids(self) -> list[int]:
        return [int(line) for line in self._read("cgroup.procs").split()]

    def _read(self, name: str) -> str:
        try:
            with open(os.path.join(self.path, name), encoding="ascii") as f:
                return f.read()
        except OSError:
            return ""

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w", encoding="ascii") as f:
            f.write(value)


def _sweep(root: str) -> None:
    """Remove stale, empty cgroups of earlier commands (a busy one refuses: EBUSY)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if entry.name.startswith(_PREFIX):
                with contextlib.suppress(OSError):
                    if now - entry.stat().st_mtime > _STALE_S:
                        os.rmdir(entry.path)
