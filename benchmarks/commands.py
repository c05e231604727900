"""Measure what keeping a RUN_COMMAND's changes for undo costs (issue 28, docs/undo.md).

    python benchmarks/commands.py            # 1k and 10k files, 9 runs each (about a minute)
    python benchmarks/commands.py --smoke    # seconds: 300 files, one run; checks the code runs

On a workspace of N files (2 kB each, 100 to a folder, a .gitignore, and 2,000 files in an
ignored node_modules/), a RUN_COMMAND that rewrites 3 files runs through the dispatch as a turn
runs it: without the watch (the baseline) and with it (two stat scans, the changed files
hashed and kept, the journal's records).  The first command of a session also reads every
file into the shadow copy, once: measured apart.  Prints one markdown table of medians; the
"bytes kept" row compares what the turn keeps with the bytes the command changed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingagent.execute import execute
from codingagent.fsio import folder_syncs_grouped
from codingagent.protocol.commands import RunCommand
from codingagent.sandbox.shell import Shell
from codingagent.transaction.capture import Watch
from codingagent.transaction.history import TurnRecord
from codingagent.transaction.journal import Journal
from codingagent.workspace import Workspace

CHANGED = 3  # files the command rewrites
TARGET_MS = 100.0  # added on 10k files when a command changes a few


def make_workspace(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"v0\n{'x' * 60}\n" * 32)
    modules = root / "node_modules"
    for i in range(2000):
        (modules / f"m{i // 100}").mkdir(parents=True, exist_ok=True)
        (modules / f"m{i // 100}" / f"{i}.js").write_text("module.exports = 1;\n")
    (root / ".gitignore").write_text("build/\n")


def command(run: int) -> RunCommand:
    paths = " ".join(f"d{i:03d}/f{i * 100:05d}.txt" for i in range(CHANGED))
    return RunCommand(line=1, command=f"sed -i 's/^v[0-9]*$/v{run}/' {paths}")


class Bench:
    """One workspace and a session folder whose turns run one command each."""

    def __init__(self, base: Path, files: int) -> None:
        self.ws_root = base / "ws"
        self.ws_root.mkdir()
        make_workspace(self.ws_root, files)
        self.ws = Workspace(self.ws_root)
        self.session = base / "session"
        self.shell = Shell(timeout=60, sandbox="none")
        self.turns = 0
        self.kept = 0

    def run(self, watched: bool) -> float:
        """Seconds one command takes through the dispatch, with or without the watch."""
        self.turns += 1
        record = TurnRecord(self.session / "turns" / f"{self.turns:04d}")
        record.folder.mkdir(parents=True)
        journal = Journal(self.session / "journal.json", record, self.turns, "r.txt")
        self.ws.watch = Watch(self.ws, journal) if watched else None
        self.ws.before_change = journal.record
        started = time.perf_counter()
        with folder_syncs_grouped():  # as in a turn
            outcome = execute([command(self.turns)], self.ws, self.shell)
        elapsed = time.perf_counter() - started
        assert outcome.results[0].success, outcome.results[0].summary
        journal.close()
        self.ws.watch = self.ws.before_change = None
        self.kept = sum(f.stat().st_size for f in record.folder.rglob("*") if f.is_file())
        return elapsed


def bare_scan(root: Path) -> None:
    """The least a stat scan costs: os.walk and an lstat per file, node_modules left out."""
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "node_modules"]
        for name in names:
            os.lstat(os.path.join(folder, name))


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def median_ms(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, one run")
    smoke = parser.parse_args().smoke
    sizes, runs = ((300,), 1) if smoke else ((1000, 10_000), 9)
    rows = []
    for files in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            bench = Bench(Path(tmp), files)
            first = bench.run(watched=True) * 1000  # builds the shadow copy: reads every file
            # Alternated, so that a change in the machine's load falls on both alike.
            pairs = [(bench.run(watched=False), bench.run(watched=True)) for _ in range(runs)]
            off = statistics.median(p[0] for p in pairs) * 1000
            on = statistics.median(p[1] for p in pairs) * 1000
            kept = bench.kept
            scan = median_ms(runs, lambda b=bench: timed(b.ws.scan))
            walk = median_ms(runs, lambda b=bench: timed(lambda: bare_scan(b.ws_root)))
        name = f"{files // 1000}k" if files >= 1000 else str(files)
        rows.append(
            (f"stat scan of the workspace, {name} files (vs bare lstat walk)", scan, walk, "", "")
        )
        target = f"< {TARGET_MS:g} ms added" if files >= 10_000 else ""
        met = ("yes" if on - off < TARGET_MS else "no") if target else ""
        rows += [
            (f"RUN_COMMAND changing {CHANGED} files, {name} files, capture", on, off, target, met),
            (f"first command of a session, {name} files (reads all once)", first, off, "", ""),
        ]
        changed = CHANGED * len(f"v0\n{'x' * 60}\n" * 32)
        rows.append((f"bytes kept per command turn, {name} files", kept, changed, "", ""))
    print("| measure | median | baseline | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for measure, value, baseline, target, met in rows:
        unit = "B" if measure.startswith("bytes") else "ms"
        shown = f"{value:,.0f} {unit}" if unit == "B" else f"{value:.1f} ms"
        base = f"{baseline:,.0f} {unit}" if unit == "B" else f"{baseline:.1f} ms"
        print(f"| {measure} | {shown} | {base} | {value / baseline:.2f} | {target} | {met} |")


if __name__ == "__main__":
    main()
