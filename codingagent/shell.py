"""Running one RUN_COMMAND: scrubbed environment, bounded capture, timeout, tree kill.

The command comes from the LLM, so nothing it starts may outlive it: it runs in its own
process group (POSIX), and when it ends or times out the whole group is killed, together with
any process that left the group but still carries this run's tag in its environment (Linux).
Output is read incrementally and only a head and a tail are kept, so a command that prints
gigabytes costs a few kilobytes of memory.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_POSIX = os.name == "posix"
_CHUNK = 65536
_POLL_S = 0.05  # how often the read loop checks whether the shell has exited
_EXIT_GRACE_S = 0.2  # how long to keep reading after the shell exits, for its last output
_TERM_GRACE_S = 1.0  # between SIGTERM and SIGKILL on timeout
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
RUN_TAG = "CODINGAGENT_RUN_ID"


@dataclass(frozen=True)
class ShellResult:
    """What one command did, as far as the LLM needs to know."""

    exit_code: int | None  # None when the command timed out; negative: killed by that signal
    output: str  # stdout and stderr, interleaved as printed, possibly cut in the middle
    timed_out: bool
    duration_s: float
    cut_chars: int  # how much was cut from the middle (counted in bytes, so approximate)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without anything that looks like a credential, so the LLM cannot print it."""
    return {
        name: value
        for name, value in env.items()
        if not name.upper().startswith("AWS_")
        and not any(marker in name.upper() for marker in _SECRET_MARKERS)
    }


class _Capture:
    """The first and the last ``limit // 2`` bytes of a stream, and how many were seen."""

    def __init__(self, limit: int) -> None:
        self._half = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._lock = threading.Lock()  # only contended by the Windows reader thread

    def feed(self, data: bytes) -> None:
        with self._lock:
            self._total += len(data)
            room = self._half - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            self._tail += data
            del self._tail[: max(0, len(self._tail) - self._half)]

    def text(self) -> tuple[str, int]:
        """The decoded output and the number of bytes cut from its middle."""
        with self._lock:
            head, tail = bytes(self._head), bytes(self._tail)
            if self._total == len(head) + len(tail):
                return (head + tail).decode("utf-8", errors="replace"), 0
            # Cut at character boundaries: hold back a split character at the end of the head
            # and skip continuation bytes at the start of the tail.
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            head_text = decoder.decode(head)
            held_back = len(decoder.getstate()[0])
            skip = 0
            while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
                skip += 1
            tail_text = tail[skip:].decode("utf-8", errors="replace")
            cut = self._total - (len(head) - held_back) - (len(tail) - skip)
            return f"{head_text}\n[... {cut} characters cut ...]\n{tail_text}", cut


class Shell:
    """Runs commands with a timeout and bounded output; one instance serves a whole session."""

    def __init__(self, timeout: float = 30.0, max_output: int = 4000) -> None:
        self.timeout = timeout
        self.max_output = max_output

    def run(self, command: str, cwd: Path) -> ShellResult:
        """Run ``command`` in ``cwd`` and return once it and everything it started are gone."""
        started = time.monotonic()
        tag = uuid.uuid4().hex
        proc = _spawn(command, cwd, tag)
        capture = _Capture(self.max_output)
        try:
            pump = _pump_posix if _POSIX else _pump_threaded
            timed_out = pump(proc, capture, started + self.timeout)
        finally:
            _kill_tree(proc, tag)
            if proc.stdout is not None:
                proc.stdout.close()
        output, cut = capture.text()
        return ShellResult(
            exit_code=None if timed_out else proc.returncode,
            output=output,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            cut_chars=cut,
        )


def _spawn(command: str, cwd: Path, tag: str) -> subprocess.Popen[bytes]:
    platform: dict[str, Any]
    if _POSIX:
        argv, platform = ["/bin/sh", "-c", command], {"start_new_session": True}
    else:
        flags = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        argv, platform = ["cmd.exe", "/c", command], {"creationflags": flags}
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=scrub_env(os.environ) | {RUN_TAG: tag},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
        **platform,
    )


def _pump_posix(proc: subprocess.Popen[bytes], capture: _Capture, deadline: float) -> bool:
    """Read output until the shell is done; True if the deadline came first.

    A background child can hold the pipe open long after the shell exited, so EOF is awaited
    only for a short grace after the exit.
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
    # EOF: the shell closed its output but may still be running.
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
    """Wait up to ``timeout`` seconds for the shell to exit; True if it did."""
    try:
        proc.wait(timeout=max(0.0, timeout))
    except subprocess.TimeoutExpired:
        return False
    return True


def _kill_tree(proc: subprocess.Popen[bytes], tag: str) -> None:
    """Kill the shell and everything it started; reaps the shell.

    If the shell is still running it gets SIGTERM and ``_TERM_GRACE_S`` to exit first.
    """
    if not _POSIX:
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        proc.wait()
        return
    if proc.poll() is None:
        _signal_tree(proc.pid, tag, signal.SIGTERM)
        _wait(proc, _TERM_GRACE_S)
    # The group id stays reserved while any member lives, so this reaches only the command's
    # own processes (barring a full wrap-around of the pid space in between).
    _signal_tree(proc.pid, tag, signal.SIGKILL)
    proc.wait()


def _signal_tree(pgid: int, tag: str, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in _tagged_pids(tag):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _tagged_pids(tag: str) -> list[int]:
    """Processes whose environment carries ``tag``: those that left the group with setsid().

    Best effort, Linux only: a process that clears its environment escapes this.
    """
    if not sys.platform.startswith("linux"):
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
