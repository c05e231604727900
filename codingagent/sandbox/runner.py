"""The process between the agent and ``/bin/sh``: resource limits, reaping, killing the tree.

Run as ``python -I -S -c SOURCE STATUS_FD CPU_S FILE_BYTES MEMORY_BYTES NPROC SHELL COMMAND``
(``-`` for a limit not set).  The source is passed as text, so it runs the same inside
bubblewrap, where this package's folder may be hidden.  Why a process of its own:

- Resource limits must be set between fork and exec, and the agent is threaded (watcher,
  console), where ``preexec_fn`` is unsafe.  Here there is one thread.
- On Linux it is a child subreaper: everything the command starts stays its descendant, even
  a daemon that called setsid() and forked again (orphans are re-parented to it, not to init),
  so it can find them all in /proc.  When the shell exits, whatever it left running is killed
  at once (``sleep 30 & echo done`` returns at once); on SIGTERM (the agent's timeout) all of
  them get SIGTERM, then SIGKILL after a grace period.  It exits only when they are gone.
  Elsewhere it falls back to killing its process group.
- It writes how the shell ended to STATUS_FD, ``exit N``, ``signal N`` or ``stopped``: bubblewrap
  would report a signal as exit code 128 + N.

Standard library only, and nothing from this package: it runs with ``-I -S``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time

_GRACE_S = 1.0  # between SIGTERM and SIGKILL when the agent stops the command
_KILL_WAIT_S = 2.0  # how long to keep killing newly found descendants before giving up
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PROC = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
_STOPS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
# All handled synchronously (sigtimedwait), so they stay blocked: no handler can interrupt us.
_WATCHED = _STOPS | {signal.SIGCHLD}


def main(argv: list[str]) -> int:
    status_fd, *numbers, shell, command = argv
    status = int(status_fd)
    os.set_inheritable(status, False)
    limits = [_number(n) for n in numbers]
    _become_subreaper()
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    pid = os.fork()
    if pid == 0:
        _exec_shell(shell, command, limits)
    ended = _wait_for(pid)
    if ended is None:
        _signal_descendants(signal.SIGTERM)
        _wait_for_descendants(time.monotonic() + _GRACE_S)
    with contextlib.suppress(OSError):  # the agent is gone: the descendants must still go
        os.write(status, (ended or "stopped").encode())
    _kill_descendants()
    return _exit_code(ended)


def _number(text: str) -> int | None:
    return None if text == "-" else int(text)


def _become_subreaper() -> None:
    """Adopt the command's orphans, and stop the command (SIGTERM) if the agent dies."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: it costs milliseconds to import

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _exec_shell(shell: str, command: str, limits: list[int | None]) -> None:
    """In the forked child: limits, default signal handling, then the shell.  Never returns."""
    try:
        # Python ignores these and ignored signals survive exec: a shell must get the defaults.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        _set_limits(*limits)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        options = ["-o", "pipefail"] if os.path.basename(shell) == "bash" else []
        os.execv(shell, [shell, *options, "-c", command])
    except BaseException as e:  # the child must never return into main()
        os.write(2, f"{shell}: {e}\n".encode())
    finally:
        os._exit(127)


def _set_limits(
    cpu_s: int | None, file_bytes: int | None, memory_bytes: int | None, nproc: int | None
) -> None:
    _limit(resource.RLIMIT_CORE, 0)
    if cpu_s is not None:  # SIGXCPU at the soft limit, SIGKILL a second later
        _limit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    if file_bytes is not None:  # SIGXFSZ for a write past it
        _limit(resource.RLIMIT_FSIZE, file_bytes)
    if memory_bytes is not None:  # allocations past it fail (ENOMEM)
        _limit(resource.RLIMIT_AS, memory_bytes)
    if nproc is not None:  # fork() past it fails (EAGAIN)
        _limit(resource.RLIMIT_NPROC, nproc)


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    """Lower a limit (soft and hard, so the command cannot raise it again); never raise it."""
    hard = soft if hard is None else hard
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        hard = min(hard, current)
    resource.setrlimit(which, (min(soft, hard), hard))


def _wait_for(pid: int) -> str | None:
    """How the shell ended (``exit N`` or ``signal N``), or None if we were told to stop."""
    while True:
        ended = _reap(pid)
        if ended is not None:
            return ended
        if _next_signal(None) in _STOPS:
            return None


def _reap(pid: int) -> str | None:
    """Collect every exited child (orphans included); how ``pid`` ended if it is among them."""
    ended = None
    while True:
        try:
            reaped, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if reaped == 0:
            return ended
        if reaped == pid:
            if os.WIFSIGNALED(status):
                ended = f"signal {os.WTERMSIG(status)}"
            else:
                ended = f"exit {os.waitstatus_to_exitcode(status)}"


def _next_signal(timeout: float | None) -> int | None:
    """The next of the watched signals (they are blocked), or None after ``timeout``."""
    if hasattr(signal, "sigtimedwait"):
        if timeout is None:
            return signal.sigwaitinfo(_WATCHED).si_signo
        info = signal.sigtimedwait(_WATCHED, max(0.0, timeout))
        return None if info is None else info.si_signo
    pending = signal.sigpending() & _WATCHED  # macOS has neither call: poll
    if pending:
        return signal.sigwait(pending)
    time.sleep(0.02 if timeout is None else min(0.02, max(0.0, timeout)))
    return None


def _descendants() -> list[int]:
    """The living processes below this one, from /proc (empty where there is none)."""
    if not _PROC:
        return []
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue  # exited meanwhile
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _signal_descendants(sig: int) -> bool:
    """Send ``sig`` to every descendant; whether there were any."""
    if not _PROC:
        # No way to enumerate them: the process group is what we can reach.  SIGKILL would end
        # this process too, so that comes last, in _kill_descendants.
        if sig != signal.SIGKILL:
            os.killpg(0, sig)
        return False
    found = _descendants()
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return bool(found)


def _wait_for_descendants(deadline: float) -> None:
    while _descendants() and time.monotonic() < deadline:
        _reap(-1)
        _next_signal(min(0.05, deadline - time.monotonic()))


def _kill_descendants() -> None:
    """SIGKILL every descendant, again for those re-parented to us meanwhile, until none is left.

    Without /proc, SIGKILL the process group last: that ends this process too, after the
    status was written.
    """
    deadline = time.monotonic() + _KILL_WAIT_S
    while _signal_descendants(signal.SIGKILL) and time.monotonic() < deadline:
        _reap(-1)
        _next_signal(0.01)
    _reap(-1)
    if not _PROC:
        os.killpg(0, signal.SIGKILL)


def _exit_code(ended: str | None) -> int:
    if ended is None:
        return 128 + signal.SIGTERM
    kind, _, number = ended.partition(" ")
    return int(number) if kind == "exit" else 128 + int(number)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
