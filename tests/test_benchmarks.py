"""The benchmark script runs from a fresh install and prints its table (times are not asserted:
they belong to docs/performance.md, not to a test on a noisy machine). ``--smoke`` runs every
benchmark's code on tiny inputs, once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codingagent.sandbox.shell import Shell

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


@pytest.mark.slow
def test_smoke_benchmark_prints_every_measure():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=100
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
        "parser, adversarial unclosed tags",
        "parser, adversarial one long line",
        "parser, adversarial nested fences",
        "parser, adversarial unclosed DONEs",
        "parser, adversarial curly attributes on one line",
        "turn of a flood: bare [DONE] lines",
        "turn of a flood: 400 READ_FILE ranges",
        "listing + render, 100 files",
        "start-up, codingagent --help",
        "start-up, codingagent sessions",
        "RUN_COMMAND peak RSS",
        "EDIT_FILE on a 1k-line file (big.txt)",
        "REPLACE on a 1k-line file (big.py)",
        "turn of 20 REPLACE commands on one file",
    ):
        assert measure in measures
    assert all(row.count(" | ") == 5 for row in table)


@pytest.mark.slow
def test_the_prompts_benchmark_shows_continuations_under_35_percent_by_default():
    script = SCRIPT.parent / "prompts.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows = {
        row.split(" | ")[0].removeprefix("| "): row.split(" | ")
        for row in done.stdout.splitlines()
        if row.startswith("| protocol = ")
    }
    default = rows["protocol = first (default), stateless requests"]
    assert int(default[3].removesuffix("%")) < 35, done.stdout
    every = rows["protocol = every, stateless requests"]
    # The baseline repeats the PROTOCOL in every continuation (compared with the continuations,
    # not the first prompt, which since issue 35 also carries the code map).
    later = [int(row[2].replace(",", "")) for row in (every, default)]
    assert later[0] > 2 * later[1], "the baseline repeats the PROTOCOL"


@pytest.mark.slow
def test_smoke_command_capture_benchmark_prints_its_rows(tmp_path):
    script = SCRIPT.parent / "commands.py"
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert table[0] == "| measure | median | baseline | ratio | added | target | met |"
    names = [row.split(" | ")[0] for row in table[1:]]
    assert names[:4] == [
        "| stat scan of the workspace, 300 files (vs bare lstat walk)",
        "| RUN_COMMAND changing 3 files, 300 files, none, stat scans",
        "| first command of a session, 300 files, none, stat scans: reads all once",
        "| bytes kept per command turn, 300 files, none, scan",
    ]
    shell = Shell(sandbox="auto")
    if shell.sandbox_layer == "bwrap":  # both ways under bubblewrap, where overlays work
        assert "| RUN_COMMAND changing 3 files, 300 files, bwrap, stat scans" in names
        (tmp_path / "ws").mkdir()
        overlay = shell.layer_problem(tmp_path / "ws", tmp_path / "layer") is None
        assert ("| first command of a session, 300 files, bwrap, overlay" in names) == overlay
