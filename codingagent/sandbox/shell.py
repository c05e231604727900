"""Running one RUN_COMMAND: approval, sandbox, limits, scrubbed environment, bounded capture,
timeout, tree kill.

The command comes from the LLM, so nothing it starts may outlive it, and (where bubblewrap
works) it sees the machine read-only, without network, with a private ``/tmp`` and home:

    agent ── [bwrap ──] runner ── /bin/sh -c COMMAND ── ...

(with the environment :mod:`codingagent.sandbox.scrub` lets through), and:

- ``bwrap`` (the sandbox layer, when active; :mod:`codingagent.sandbox.bubblewrap` builds its command
  line): read-only root, the workspace bound writable, size-limited tmpfs on ``/tmp``,
  ``$TMPDIR`` and ``$HOME`` (tool folders found there are bound back read-only, without their
  credential files), no host socket files, no network, own PID, IPC and UTS namespaces, no
  capabilities (root included), a new session, dies with the agent.
- a pids cgroup (:mod:`codingagent.sandbox.cgroup`), where one can be made: the process limit, and
  every process the command started is killed from it at the end, wherever it went.
- ``runner`` (:mod:`codingagent.sandbox.runner`): sets the resource limits, is the child subreaper
  that kills everything the command left behind, and reports how the shell ended.  It runs
  in its own session and process group, which the agent signals on timeout: SIGTERM, a grace
  period, SIGKILL.  If the runner itself was killed (by the command), processes tagged with
  this run's id in their environment are hunted down from /proc as a last resort (without a
cgroup or bubblewrap, a process that also cleared its environment escapes: one reason
bubblewrap is the default).

Output is read incrementally and only a head and a tail are kept, so a command that prints
gigabytes costs a few kilobytes of memory.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from codingagent.sandbox import cgroup as _cgroup
from codingagent.sandbox.bubblewrap import CREDENTIAL_PATTERNS, bwrap_argv, sizes_tmpfs
from codingagent.sandbox.scrub import scrub_env

if TYPE_CHECKING:
    from codingagent.settings import Settings

_POSIX = os.name == "posix"
_LINUX = sys.platform.startswith("linux")
_CHUNK = 65536
_POLL_S = 0.05  # how often the read loop checks whether the command has exited
_EXIT_GRACE_S = 0.2  # how long to keep reading after it exits, for its last output
_TERM_GRACE_S = 1.0  # between SIGTERM and SIGKILL on timeout (the runner's own grace)
_RUNNER_MARGIN_S = 1.0  # how much longer the runner may take to kill and report
_PROBE_TIMEOUT_S = 10.0
RUN_TAG = "CODINGAGENT_RUN_ID"

_SHELL = "/bin/sh"
# The runner needs only the standard library: the real interpreter (not a venv's symlink),
# which stays visible inside the sandbox.
_PYTHON = os.path.realpath(sys.executable)
_RUNNER_SOURCE = Path(__file__).with_name("runner.py").read_text(encoding="utf-8")

Sandbox = Literal["auto", "bwrap", "none"]
SANDBOX_MODES: tuple[Sandbox, ...] = ("auto", "bwrap", "none")


class SandboxUnavailable(Exception):
    """``sandbox="bwrap"`` was asked for where bubblewrap does not work; ``str(e)`` says why."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of every process a command starts (each process has its own)."""

    # CPU seconds; None: the timeout times the number of CPUs, which a command killed at its
    # timeout cannot reach, so it only ends a process that escaped the kill.
    cpu_s: int | None = None
    file_bytes: int | None = 1 << 30  # the largest file a command may write
    memory_bytes: int | None = 4 << 30  # address space of each process (RLIMIT_AS)
    # Processes and threads of the command: a pids cgroup where one can be made, else
    # RLIMIT_NPROC inside bubblewrap's user namespace (not as root, whom it does not bind);
    # elsewhere RLIMIT_NPROC would count the whole user's processes, so it is not set.
    nproc: int | None = 256
    tmp_bytes: int | None = 512 << 20  # size of each private tmpfs (/tmp, $TMPDIR, home)

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        """The limits the settings ask for (0 there: no limit)."""
        return cls(
            memory_bytes=(settings.command_memory_mb << 20) or None,
            nproc=settings.command_processes or None,
            tmp_bytes=(settings.command_tmp_mb << 20) or None,
        )


@dataclass(frozen=True)
class ShellResult:
    """What one command did, as far as the LLM needs to know."""

    exit_code: int | None  # None when it timed out or was not run; negative: killed by a signal
    output: str  # stdout and stderr, interleaved as printed, possibly cut in the middle
    timed_out: bool
    duration_s: float
    cut_chars: int  # characters cut from the middle of the output (UTF-8 characters)
    approved: bool = True  # False: the user refused it and it did not run


def default_approval(layer: str, stdin_is_tty: bool) -> Literal["ask", "allow"]:
    """The ``--commands`` policy when none is configured (SPEC §4): ask only when no OS
    sandbox contains the command and there is a person at the terminal to answer."""
    return "ask" if layer == "none" and stdin_is_tty else "allow"


def sandbox_status(mode: Sandbox = "auto") -> tuple[str, str]:
    """Which layer ``mode`` gives here (``"bwrap"`` or ``"none"``) and, for people, why."""
    if mode not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}")
    if mode == "none":
        return "none", "no OS sandbox (sandbox = none): commands run with your permissions"
    if not _LINUX:
        return "none", "no OS sandbox: bubblewrap needs Linux; commands run with your permissions"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "none", (
            "no OS sandbox: bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap);"
            " commands run with your permissions"
        )
    problem = _probe(bwrap)
    if problem:
        return "none", f"no OS sandbox: bubblewrap does not work here ({problem})"
    return "bwrap", (
        "bubblewrap: read-only system, writable workspace, private /tmp and home, no host"
        " socket files, no network, own process namespace"
    )


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Run the sandbox once, as a command would run (cached for the process): None if it
    works, else the first line of what went wrong."""
    with tempfile.TemporaryDirectory() as folder:
        argv = [*bwrap_argv(bwrap, Path(folder), (), None), _PYTHON, "-I", "-S", "-c", "pass"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, env=scrub_env(os.environ)
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else f"exit code {done.returncode}"


class _Capture:
    """The first and the last ``limit // 2`` bytes of a stream, and how much was seen."""

    def __init__(self, limit: int) -> None:
        self._half = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self._bytes = 0
        self._chars = 0
        self._lock = threading.Lock()  # only contended by the Windows reader thread

    def feed(self, data: bytes) -> None:
        with self._lock:
            self._bytes += len(data)
            self._chars += _count_chars(data)
            room = self._half - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            self._tail += data
            del self._tail[: max(0, len(self._tail) - self._half)]

    def text(self) -> tuple[str, int]:
        """The decoded output and the number of characters cut from its middle."""
        with self._lock:
            head, tail = bytes(self._head), bytes(self._tail)
            if self._bytes == len(head) + len(tail):
                return (head + tail).decode("utf-8", errors="replace"), 0
            # Cut at character boundaries: a character split at the end of the head, or at the
            # start of the tail, is part of what was cut.
            shown_head = head[: len(head) - _split_char_length(head)]
            skip = 0
            while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
                skip += 1
            shown_tail = tail[skip:]
            cut = self._chars - _count_chars(shown_head) - _count_chars(shown_tail)
            head_text = shown_head.decode("utf-8", errors="replace")
            tail_text = shown_tail.decode("utf-8", errors="replace")
            return f"{head_text}\n[... {cut} characters cut ...]\n{tail_text}", cut


_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _count_chars(data: bytes) -> int:
    """UTF-8 characters in ``data``: the bytes that do not continue a character."""
    return len(data.translate(None, _CONTINUATION_BYTES))


def _split_char_length(data: bytes) -> int:
    """How many bytes at the end of ``data`` are an incomplete UTF-8 character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead byte (or ASCII): does its character fit?
            needed = 1 if byte < 0xC0 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if needed > back else 0
    return 0


class Shell:
    """Runs commands with approval, a sandbox, limits, a timeout and bounded output; one
    instance serves a whole session.

    ``sandbox="bwrap"`` raises :class:`SandboxUnavailable` here when bubblewrap does not work;
    ``"auto"`` falls back to no OS sandbox.  ``approve`` sees each command before it runs.
    ``read_only`` folders (the agent's own, inside the workspace) stay read-only under bwrap;
    the ``hide`` paths (and every home folder, see :func:`hidden_paths`) are not seen there.
    """

    def __init__(
        self,
        timeout: float = 30.0,
        max_output: int = 4000,
        sandbox: Sandbox = "none",
        approve: Callable[[str], bool] | None = None,
        limits: Limits = Limits(),  # frozen, so one shared default is safe
        read_only: Iterable[Path] = (),
        hide: Iterable[str] = (),
    ) -> None:
        self.timeout = timeout
        self.max_output = max_output
        self.approve = approve
        self.limits = limits
        self.read_only = tuple(Path(os.path.realpath(p)) for p in read_only)
        self.hide = tuple(hide)
        self.sandbox_layer, self.sandbox_reason = sandbox_status(sandbox)
        if sandbox == "bwrap" and self.sandbox_layer != "bwrap":
            raise SandboxUnavailable(self.sandbox_reason)

    def run(self, command: str, cwd: Path) -> ShellResult:
        """Run ``command`` in ``cwd`` and return once it and everything it started are gone."""
        if self.approve is not None and not self.approve(command):
            return ShellResult(
                None, "", timed_out=False, duration_s=0.0, cut_chars=0, approved=False
            )
        started = time.monotonic()
        capture = _Capture(self.max_output)
        group = self._pids_group()
        process = _Process(functools.partial(self._argv, command, Path(cwd), group), Path(cwd))
        try:
            timed_out = process.pump(capture, started + self.timeout)
        finally:  # also when the agent is interrupted: nothing the command started outlives it
            exit_code = process.finish()
            process.close()
            too_many = group is not None and group.close()
        output, cut = capture.text()
        if not timed_out:
            output += self._limit_note(exit_code, output, too_many)
        return ShellResult(
            exit_code=None if timed_out else exit_code,
            output=output,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            cut_chars=cut,
        )

    def _argv(
        self, command: str, cwd: Path, group: _cgroup.PidsGroup | None, status_fd: int
    ) -> list[str]:
        """The command line that runs ``command``; the runner reports to ``status_fd``."""
        if not _POSIX:
            return ["cmd.exe", "/c", command]
        cpu_s = self.limits.cpu_s or math.ceil(self.timeout) * (os.cpu_count() or 1)
        nproc = self.limits.nproc if self._process_limit() == "rlimit" else None
        limits = [cpu_s, self.limits.file_bytes, self.limits.memory_bytes, nproc]
        argv = [_PYTHON, "-I", "-S", "-c", _RUNNER_SOURCE, str(status_fd)]
        argv += ["-" if n is None else str(n) for n in limits] + [_SHELL, command]
        if self.sandbox_layer == "bwrap":
            bwrap = shutil.which("bwrap") or "bwrap"
            argv = (
                bwrap_argv(bwrap, cwd.resolve(), self.read_only, self.limits.tmp_bytes, self.hide)
                + argv
            )
        return argv if group is None else group.join_argv(argv)

    def _process_limit(self) -> Literal["cgroup", "rlimit", "none"]:
        """How the process limit is enforced here (see :class:`Limits`)."""
        if self.limits.nproc is None or not _LINUX:
            return "none"
        if _cgroup.pids_root() is not None:
            return "cgroup"
        return "rlimit" if self.sandbox_layer == "bwrap" and os.geteuid() != 0 else "none"

    def _pids_group(self) -> _cgroup.PidsGroup | None:
        root = _cgroup.pids_root()
        if root is None or self._process_limit() != "cgroup" or self.limits.nproc is None:
            return None
        try:
            return _cgroup.PidsGroup(root, uuid.uuid4().hex, self.limits.nproc)
        except OSError:
            return None  # the hierarchy is there but refuses us: the rlimits still apply

    def _limit_note(self, exit_code: int | None, output: str, too_many: bool) -> str:
        """A line saying which limit a failed command ran into, or ``""``."""
        if exit_code == 0 and not too_many:
            return ""
        limits = self.limits
        if exit_code == -signal.SIGXCPU:
            return "\n[limit reached: CPU time]"
        if exit_code == -signal.SIGXFSZ:
            return f"\n[limit reached: file size, {_mib(limits.file_bytes)} per file]"
        if too_many or (self._process_limit() == "rlimit" and _FORK_FAILED.search(output)):
            return f"\n[limit reached: {limits.nproc} processes and threads]"
        if limits.memory_bytes is not None and _NO_MEMORY.search(output):
            return f"\n[limit reached: memory, {_mib(limits.memory_bytes)} per process]"
        if limits.tmp_bytes is not None and self.sandbox_layer == "bwrap" and _NO_SPACE in output:
            return f"\n[limit reached: {_mib(limits.tmp_bytes)} in /tmp (or the disk is full)]"
        return ""


_FORK_FAILED = re.compile(
    r"fork.*(Resource temporarily unavailable|failed|retry)|can't fork|Cannot fork"
    r"|BlockingIOError|pthread_create|Resource temporarily unavailable",
    re.IGNORECASE,
)
_NO_MEMORY = re.compile(
    r"Cannot allocate memory|MemoryError|out of memory|bad_alloc|memory allocation|"
    r"allocation failed|memory exhausted",
    re.IGNORECASE,
)
_NO_SPACE = "No space left on device"


def _mib(size: int | None) -> str:
    return f"{(size or 0) >> 20} MiB"


def protections(settings: Settings) -> list[tuple[str, str]]:
    """Each protection of RUN_COMMAND and whether it is active here, for ``doctor``."""
    layer, _ = sandbox_status(settings.sandbox)
    bwrap = layer == "bwrap"
    shell = Shell(sandbox="bwrap" if bwrap else "none", limits=Limits.of(settings))
    limits = shell.limits

    def only_bwrap(what: str) -> str:
        return f"active: {what}" if bwrap else "off: needs bubblewrap"

    def limit(size: int | None, what: str) -> str:
        return "off (setting)" if size is None else f"active: {_mib(size)} {what}"

    process_limit = {
        "cgroup": f"active: {limits.nproc} per command (pids cgroup)",
        "rlimit": f"active: {limits.nproc} per command (RLIMIT_NPROC in a user namespace)",
        "none": "off: no pids cgroup can be made here"
        + (", and RLIMIT_NPROC does not bind root" if _POSIX and os.geteuid() == 0 else ""),
    }[shell._process_limit()]
    tmp_limit = limit(limits.tmp_bytes, "per tmpfs")
    if not bwrap:
        tmp_limit = "off: no private /tmp"
    elif not sizes_tmpfs(shutil.which("bwrap") or "bwrap"):
        tmp_limit = "off: this bubblewrap has no --size (0.5 and later)"
    escape = "pids cgroup" if _cgroup.pids_root() else "bubblewrap PID namespace"
    return [
        ("environment scrub", "active: allow-list, secret names, secret values"),
        ("read-only system", only_bwrap("only the workspace is writable")),
        ("no network", only_bwrap("own network namespace")),
        ("no host socket files", only_bwrap("fresh /run, socket files covered")),
        ("private /tmp and home", only_bwrap("fresh tmpfs")),
        (
            "tool credential files",
            only_bwrap("hidden: " + ", ".join(CREDENTIAL_PATTERNS[:4]) + ", ..."),
        ),
        ("memory limit", limit(limits.memory_bytes, "address space per process")),
        ("process limit", process_limit if limits.nproc is not None else "off (setting)"),
        ("/tmp size limit", tmp_limit),
        ("file size limit", limit(limits.file_bytes, "per file")),
        ("CPU time limit", "active: the timeout times the CPUs"),
        (
            "no escaping processes",
            f"active: {escape}"
            if bwrap or _cgroup.pids_root()
            else "partial: a process that leaves the session and clears its environment"
            " escapes after killing the runner",
        ),
    ]


class _Process:
    """One started command: its process, output pipe and status pipe."""

    def __init__(self, argv_for: Callable[[int], list[str]], cwd: Path) -> None:
        """Start ``argv_for(status_fd)``."""
        self.tag = uuid.uuid4().hex
        self._status_r = self._status_w = -1
        platform: dict[str, Any]
        if _POSIX:
            self._status_r, self._status_w = os.pipe()
            platform = {"start_new_session": True, "pass_fds": (self._status_w,)}
        else:
            platform = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
        try:
            self.proc = subprocess.Popen(
                argv_for(self._status_w),
                cwd=cwd,
                env=scrub_env(os.environ) | {RUN_TAG: self.tag},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                bufsize=0,
                **platform,
            )
        except OSError as e:
            self.close()
            # The command is an argument of the shell: it is the shell that could not take it.
            raise OSError(e.errno, e.strerror, _SHELL) from e
        finally:
            if self._status_w >= 0:
                os.close(self._status_w)
                self._status_w = -1

    def pump(self, capture: _Capture, deadline: float) -> bool:
        """Read output until the command is done; True if the deadline came first."""
        pump = _pump_posix if _POSIX else _pump_threaded
        return pump(self.proc, capture, deadline)

    def finish(self) -> int | None:
        """Make sure everything is gone; the exit code (negative: killed by that signal)."""
        if not _POSIX:
            subprocess.run(
                ["taskkill", "/F", "/T", "/PID", str(self.proc.pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            return self.proc.wait()
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            _wait(self.proc, _TERM_GRACE_S + _RUNNER_MARGIN_S)
        # Whatever is left of the group if the runner did not finish the job.  The group id
        # stays reserved while any member lives, so this reaches only the command's processes.
        self._signal_group(signal.SIGKILL)
        self.proc.wait()
        ended = self._read_status()
        if ended is None:  # the runner was killed before it could clean up: hunt by tag
            for pid in _tagged_pids(self.tag):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            return self.proc.returncode
        kind, _, number = ended.partition(" ")
        if kind == "exit":
            return int(number)
        return -int(number) if kind == "signal" else None  # "stopped": it timed out

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _read_status(self) -> str | None:
        os.set_blocking(self._status_r, False)
        try:
            return os.read(self._status_r, 64).decode() or None
        except BlockingIOError:
            return None  # a process the runner failed to kill still holds the pipe

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._status_r >= 0:
            os.close(self._status_r)
            self._status_r = -1


def _pump_posix(proc: subprocess.Popen[bytes], capture: _Capture, deadline: float) -> bool:
    """Read output until the process is done; True if the deadline came first.

    A process that escaped can hold the pipe open long after the runner exited, so EOF is
    awaited only for a short grace after the exit.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    grace_end: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now >= deadline:
                return True
            if grace_end is None and proc.poll() is not None:
                grace_end = now + _EXIT_GRACE_S
            if grace_end is not None and now >= grace_end:
                return False
            wait = min(_POLL_S, deadline - now)
            if grace_end is not None:
                wait = min(wait, grace_end - now)
            if not selector.select(wait):
                continue
            data = os.read(fd, _CHUNK)
            if not data:
                break
            capture.feed(data)
    # EOF: everything closed its output, but the process may still be running.
    return not _wait(proc, deadline - time.monotonic())


def _pump_threaded(proc: subprocess.Popen[bytes], capture: _Capture, deadline: float) -> bool:
    """Windows has no select() on pipes: a reader thread feeds the capture instead."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()

    def drain() -> None:
        while data := os.read(fd, _CHUNK):
            capture.feed(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    if not _wait(proc, deadline - time.monotonic()):
        return True
    reader.join(_EXIT_GRACE_S)
    return False


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the process to exit; True if it did."""
    try:
        proc.wait(timeout=max(0.0, timeout))
    except subprocess.TimeoutExpired:
        return False
    return True


def _tagged_pids(tag: str) -> list[int]:
    """Processes whose environment carries ``tag``: what a killed runner left behind.

    Best effort, Linux only: a process that clears its environment escapes this.
    """
    if not _LINUX:
        return []
    needle = f"{RUN_TAG}={tag}".encode()
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids
