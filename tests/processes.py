"""Helpers for tests that check which processes a command left running."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (killed, not yet reaped by its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def gone(pid_file: Path, within: float = 2.0) -> bool:
    """Whether the process whose pid the command wrote to ``pid_file`` is dead (soon)."""
    pid = int(pid_file.read_text())
    end = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True
