"""Running one RUN_COMMAND: approval, sandbox, limits, scrubbed environment, bounded capture,
timeout, tree kill.

The command comes from the LLM, so nothing it starts may outlive it, and (where an OS sandbox
works) it sees the machine read-only, without network, with a private ``/tmp`` and home:

    agent ── [sandbox ──] runner ── /bin/sh -c COMMAND ── ...

(with the environment :mod:`codingagent.sandbox.scrub` lets through), and:

- the sandbox backend (:mod:`codingagent.sandbox.backends` picks it: bubblewrap on Linux, or
  none), which wraps the command line;
- a pids cgroup (:mod:`codingagent.sandbox.cgroup`), where one can be made: the process limit,
  and every process the command started is killed from it at the end, wherever it went;
- ``runner`` (:mod:`codingagent.sandbox.runner`): sets the resource limits, is the child
  subreaper that kills everything the command left behind, and reports how the shell ended
  (:mod:`codingagent.sandbox.process` starts it, reads its output and kills what is left).

Output is read incrementally and only a head and a tail are kept, so a command that prints
gigabytes costs a few kilobytes of memory.
"""

from __future__ import annotations

import functools
import math
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from codingagent.sandbox import cgroup
from codingagent.sandbox.backends import Job, choose
from codingagent.sandbox.process import LINUX, POSIX, SHELL, Capture, Process

if TYPE_CHECKING:
    from codingagent.settings import Settings

# The runner needs only the standard library: the real interpreter (not a venv's symlink),
# which stays visible inside the sandbox.
_PYTHON = os.path.realpath(sys.executable)
_RUNNER_SOURCE = Path(__file__).with_name("runner.py").read_text(encoding="utf-8")
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


class Shell:
    """Runs commands with approval, a sandbox, limits, a timeout and bounded output; one
    instance serves a whole session.

    ``sandbox`` is a value of the ``sandbox`` setting: a backend named there that does not
    work here raises :class:`~codingagent.sandbox.backends.SandboxUnavailable`; ``"auto"``
    falls back to no OS sandbox. ``approve`` sees each command before it runs. ``read_only``
    folders (the agent's own, inside the workspace) stay read-only in the sandbox; the
    ``hide`` paths (and every home folder) are not seen there. ``secret_files_allow`` names
    the workspace's secret files commands may read (the caller finds the others and passes
    them to :meth:`run`: docs/secrets.md).
    """

    def __init__(
        self,
        timeout: float = 30.0,
        max_output: int = 4000,
        sandbox: str = "none",
        approve: Callable[[str], bool] | None = None,
        limits: Limits = Limits(),  # frozen, so one shared default is safe
        read_only: Iterable[Path] = (),
        hide: Iterable[str] = (),
        secret_files_allow: Iterable[str] = (),
    ) -> None:
        self.timeout = timeout
        self.max_output = max_output
        self.approve = approve
        self.limits = limits
        self.read_only = tuple(Path(os.path.realpath(p)) for p in read_only)
        self.hide = tuple(hide)
        self.secret_files_allow = tuple(secret_files_allow)
        self.backend, self.sandbox_reason = choose(sandbox)

    @property
    def sandbox_layer(self) -> str:
        """The name of the sandbox backend in use (``"none"`` without one), for people."""
        return self.backend.name

    @property
    def isolated(self) -> bool:
        """Whether an OS sandbox contains the commands."""
        return self.backend.isolated

    def hidden_paths(self) -> list[str]:
        """What commands do not see (empty without an OS sandbox)."""
        return self.backend.hidden_paths(self.hide)

    @property
    def hides_files(self) -> bool:
        """Whether commands read the secret files given to :meth:`run` as empty files."""
        return self.backend.hides_files

    def layer_problem(self, workspace: Path, layer: Path) -> str | None:
        """None when commands can write to a layer over ``workspace`` kept in ``layer`` (then
        :meth:`run` takes it), else why not (the backend's word: docs/undo.md)."""
        return self.backend.layer_problem(workspace, layer)

    def run(
        self,
        command: str,
        cwd: Path,
        secret_files: Iterable[str] = (),
        layer: Path | None = None,
    ) -> ShellResult:
        """Run ``command`` in ``cwd`` and return once it and everything it started are gone;
        ``secret_files`` (absolute paths) read as empty files where the sandbox can hide them;
        with ``layer`` (:meth:`layer_problem` said None), its writes go to ``layer/upper``."""
        if self.approve is not None and not self.approve(command):
            return ShellResult(
                None, "", timed_out=False, duration_s=0.0, cut_chars=0, approved=False
            )
        started = time.monotonic()
        capture = Capture(self.max_output)
        group = self._pids_group()
        hidden = tuple(secret_files)
        argv = functools.partial(self._argv, command, Path(cwd), group, hidden, layer)
        process = Process(argv, Path(cwd))
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
        self,
        command: str,
        cwd: Path,
        group: cgroup.PidsGroup | None,
        secret_files: tuple[str, ...],
        layer: Path | None,
        status_fd: int,
    ) -> list[str]:
        """The command line that runs ``command``; the runner reports to ``status_fd``."""
        if not POSIX:
            return ["cmd.exe", "/c", command]
        cpu_s = self.limits.cpu_s or math.ceil(self.timeout) * (os.cpu_count() or 1)
        nproc = self.limits.nproc if self.process_limit() == "rlimit" else None
        limits = [cpu_s, self.limits.file_bytes, self.limits.memory_bytes, nproc]
        argv = [_PYTHON, "-I", "-S", "-c", _RUNNER_SOURCE, str(status_fd)]
        argv += ["-" if n is None else str(n) for n in limits] + [SHELL, command]
        tmp_bytes = self.limits.tmp_bytes
        job = Job(cwd.resolve(), self.read_only, tmp_bytes, self.hide, secret_files, layer)
        argv = self.backend.wrap(argv, job)
        return argv if group is None else group.join_argv(argv)

    def process_limit(self) -> Literal["cgroup", "rlimit", "none"]:
        """How the process limit is enforced here (see :class:`Limits`)."""
        if self.limits.nproc is None or not LINUX:
            return "none"
        if cgroup.pids_root() is not None:
            return "cgroup"
        alone = self.backend.user_namespace and os.geteuid() != 0
        return "rlimit" if alone else "none"

    def _pids_group(self) -> cgroup.PidsGroup | None:
        root = cgroup.pids_root()
        if root is None or self.process_limit() != "cgroup" or self.limits.nproc is None:
            return None
        try:
            return cgroup.PidsGroup(root, uuid.uuid4().hex, self.limits.nproc)
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
            return f"\n[limit reached: file size, {mib(limits.file_bytes)} per file]"
        if too_many or (self.process_limit() == "rlimit" and _FORK_FAILED.search(output)):
            return f"\n[limit reached: {limits.nproc} processes and threads]"
        if limits.memory_bytes is not None and _NO_MEMORY.search(output):
            return f"\n[limit reached: memory, {mib(limits.memory_bytes)} per process]"
        return self.backend.limit_note(output, limits.tmp_bytes)


def mib(size: int | None) -> str:
    return f"{(size or 0) >> 20} MiB"
