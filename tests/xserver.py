"""A private X server (Xvfb) and its clipboard, for the clipboard loop's tests and benchmark."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MISSING = "needs Xvfb and xclip (apt-get install xvfb xclip)"


def available() -> bool:
    return shutil.which("Xvfb") is not None and shutil.which("xclip") is not None


@contextmanager
def xvfb() -> Iterator[str]:
    """Xvfb on a free display, its name (":5") while it runs. Stopping it ends the xclip
    processes serving its clipboard. It must not reset when its last client leaves (Xvfb does by
    default): that empties the clipboard and fails the connections being made meanwhile."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-noreset"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end) as chosen:
            number = chosen.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait()


def xclip_servers(display: str) -> list[int]:
    """xclip processes on ``display`` still serving something they copied."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() != "xclip":
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"DISPLAY={display}".encode() in environ:
            pids.append(int(proc.name))
    return pids


def copy(text: str, *, reads: int | None = None) -> None:
    """Copy as a chat's Copy button does: xclip serves ``text`` until something else is copied,
    or, with ``reads``, until it has been read that many times (then this returns)."""
    loops = [] if reads is None else ["-loops", str(reads), "-quiet"]
    subprocess.run(
        ["xclip", "-selection", "clipboard", *loops],
        input=text.encode(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )


def clipboard_text() -> str:
    return subprocess.run(
        ["xclip", "-selection", "clipboard", "-o"], capture_output=True, text=True, check=False
    ).stdout
