"""An agent process on a real pseudo-terminal, for the tests that watch what a user sees (a line
redrawn in place, a question asked in raw mode) and answer as a user would."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """``codingagent ARGS`` with its output on a terminal (and its input, unless ``stdin`` is
    given), in this environment without colours (or in ``env``): what it printed gathers in
    ``seen`` as it comes. Closing it kills the process if it still runs."""

    def __init__(
        self,
        *args: str,
        stdin: int | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.leader, follower = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "codingagent", *args],
            stdin=follower if stdin is None else stdin,
            stdout=follower,
            stderr=follower,
            cwd=cwd,
            env=env or {**os.environ, "NO_COLOR": "1", "TERM": "xterm", "COLUMNS": "200"},
        )
        os.close(follower)
        self.seen = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.leader, 65536):
                self.seen.extend(chunk)
        except OSError:  # the terminal closed: the process is gone
            pass

    def wait_for(self, what: bytes, timeout: float = 60) -> None:
        """Until the process has printed ``what``; it must not end first."""
        deadline = time.monotonic() + timeout
        while what not in self.seen:
            assert self.process.poll() is None, self.seen.decode(errors="replace")
            assert time.monotonic() < deadline, f"never saw {what!r}: {self.seen.decode()}"
            time.sleep(0.05)

    def send(self, keys: bytes) -> None:
        os.write(self.leader, keys)

    def wait(self, timeout: float = 60) -> int:
        """The process's exit code, once all it printed is in ``seen``."""
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code

    def text(self) -> str:
        """What it printed, without colours or cursor moves, lines ending in ``\\n``."""
        return ANSI.sub("", self.seen.decode(errors="replace").replace("\r\n", "\n"))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)
        os.close(self.leader)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
