"""The benchmark script runs from a fresh install and prints its table (times are not asserted:
they belong to docs/performance.md, not to a test on a noisy machine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_benchmark_prints_every_measure():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert table[0] == "| measure | median | baseline | ratio | target | met |"
    measures = "\n".join(table)
    for measure in (
        "turn latency, inotify",
        "turn latency, polling",
        "parser throughput",
        "parser scaling",
        "listing + render, 10,000 files",
        "start-up, codingagent --help",
        "RUN_COMMAND peak RSS",
        "EDIT_FILE on a 100k-line file",
    ):
        assert measure in measures
    assert all(row.count(" | ") == 5 for row in table)
