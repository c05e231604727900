"""One started command: its process, its output pipe (read into a bounded capture) and the
runner's status pipe; killing what is left of it.

The runner (:mod:`codingagent.sandbox.runner`) runs in its own session and process group,
which is signalled on timeout: SIGTERM, a grace period, SIGKILL. If the runner itself was
killed (by the command), processes tagged with this run's id in their environment are hunted
down from /proc as a last resort.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codingagent.sandbox.scrub import scrub_env

POSIX = os.name == "posix"
LINUX = sys.platform.startswith("linux")
# What runs a RUN_COMMAND: bash where it is installed, so the runner can set ``pipefail`` (a
# pipeline fails when any stage fails: ``pytest | tail`` must not read green); else /bin/sh.
SHELL = next((p for p in ("/bin/bash", "/usr/bin/bash") if os.access(p, os.X_OK)), "/bin/sh")
RUN_TAG = "CODINGAGENT_RUN_ID"
_CHUNK = 65536
_POLL_S = 0.05  # how often the read loop checks whether the command has exited
_EXIT_GRACE_S = 0.2  # how long to keep reading after it exits, for its last output
_TERM_GRACE_S = 1.0  # between SIGTERM and SIGKILL on timeout (the runner's own grace)
_RUNNER_MARGIN_S = 1.0  # how much longer the runner may take to kill and report


class Capture:
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


class Process:
    """One started command: its process, output pipe and status pipe."""

    def __init__(self, argv_for: Callable[[int], list[str]], cwd: Path) -> None:
        """Start ``argv_for(status_fd)``."""
        self.tag = uuid.uuid4().hex
        self._status_r = self._status_w = -1
        platform: dict[str, Any]
        if POSIX:
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
            raise OSError(e.errno, e.strerror, SHELL) from e
        finally:
            if self._status_w >= 0:
                os.close(self._status_w)
                self._status_w = -1

    def pump(self, capture: Capture, deadline: float) -> bool:
        """Read output until the command is done; True if the deadline came first."""
        pump = _pump_posix if POSIX else _pump_threaded
        return pump(self.proc, capture, deadline)

    def finish(self) -> int | None:
        """Make sure everything is gone; the exit code (negative: killed by that signal)."""
        if not POSIX:
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


def _pump_posix(proc: subprocess.Popen[bytes], capture: Capture, deadline: float) -> bool:
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


def _pump_threaded(proc: subprocess.Popen[bytes], capture: Capture, deadline: float) -> bool:
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
    if not LINUX:
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
