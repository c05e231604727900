"""Measure what keeping a RUN_COMMAND's changes for undo costs (issues 28 and 38, docs/undo.md).

    python benchmarks/commands.py            # 1k and 10k files, 9 runs each (a few minutes)
    python benchmarks/commands.py --smoke    # seconds: 300 files, one run; checks the code runs
    python benchmarks/commands.py --step     # also through `codingagent step`, 10 vs 10k files

On a workspace of N files (2 kB each, 100 to a folder, a .gitignore, and 2,000 files in an
ignored node_modules/), a RUN_COMMAND that rewrites 3 files runs through the dispatch as a turn
runs it, in each sandbox: without the watch (the baseline), with the stat scans (two scans, the
changed files hashed and kept; the only way before issue 38, and still the way without an
overlay), and, under bubblewrap where an overlay can be mounted, on an overlay (the command
writes to a layer that is read and moved in).  The ways are alternated, so that a change in the
machine's load falls on all alike.  The first command of a session is measured apart (the stat
scans read every file into the shadow copy then).  Prints one markdown table of medians; the
"bytes kept" rows compare what a turn keeps with the bytes the command changed.

``--step`` runs ``codingagent step`` as a user does, a reply of one RUN_COMMAND (``true``), on
a 10-file and a 10,000-file workspace (60 lines a file), stepped in turn: the first command of
each session, then the median of 9 later ones each. The issue's own measure, whole processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingagent.execute import execute
from codingagent.fsio import folder_syncs_grouped
from codingagent.protocol.commands import RunCommand
from codingagent.records.history import TurnRecord
from codingagent.sandbox.backends import sandbox_status
from codingagent.sandbox.shell import Shell
from codingagent.transaction.capture import Watch, capture_way
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
    """One workspace and a session folder whose turns run one command each, in one sandbox."""

    def __init__(self, base: Path, files: int, sandbox: str) -> None:
        self.ws_root = base / "ws"
        self.ws_root.mkdir()
        make_workspace(self.ws_root, files)
        self.ws = Workspace(self.ws_root)
        self.session = base / "session"
        self.session.mkdir()
        self.shell = Shell(timeout=60, sandbox=sandbox)
        self.turns = 0
        self.kept: dict[str, int] = {}

    def overlay(self) -> bool:
        return capture_way(self.shell, self.ws_root, self.session) is None

    def run(self, way: str) -> float:
        """Seconds one command takes through the dispatch: ``way`` is "off" (no watch),
        "scan" (stat scans) or "overlay"."""
        self.turns += 1
        self.ws.tree.drop()  # a turn's Workspace walks anew (codingagent/workspace/tree.py)
        record = TurnRecord(self.session / "turns" / f"{self.turns:04d}")
        record.folder.mkdir(parents=True)
        journal = Journal(self.session / "journal.json", record, self.turns, "r.txt")
        watch = None
        if way != "off":  # without the shell, the watch cannot ask for an overlay: scans
            watch = Watch(self.ws, journal, self.shell if way == "overlay" else None)
        started = time.perf_counter()
        with folder_syncs_grouped():  # as in a turn: the journal and the watch lent to it
            outcome = execute(
                [command(self.turns)], self.ws, self.shell, keeper=journal, watch=watch
            )
        elapsed = time.perf_counter() - started
        assert outcome.results[0].success, outcome.results[0].summary
        if way != "off":
            marks = record.preimages().marks
            assert any(
                ("layer" in m) == (way == "overlay") for m in marks if m["kind"] == "command"
            )
        journal.close()
        self.kept[way] = sum(f.stat().st_size for f in record.folder.rglob("*") if f.is_file())
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


Row = tuple[str, float, float, str, str]


def measure(files: int, sandbox: str, runs: int) -> list[Row]:
    """The rows of one workspace size in one sandbox."""
    name = f"{files // 1000}k" if files >= 1000 else str(files)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp), files, sandbox)
        ways = ["scan", "overlay"] if bench.overlay() else ["scan"]
        # The secret-file walk reads each file once per process (docs/secrets.md): the
        # baseline's first run pays that, so that the first commands below show the capture.
        bench.run("off")
        # First commands of the session: the overlay's first (its probe included), then the
        # scan's first, which reads every file into the shadow copy.
        first = {way: bench.run(way) * 1000 for way in reversed(ways)}
        # Alternated, so that a change in the machine's load falls on all alike.
        times: dict[str, list[float]] = {way: [] for way in ["off", *ways]}
        for _ in range(runs):
            for way in times:
                times[way].append(bench.run(way))
        med = {way: statistics.median(t) * 1000 for way, t in times.items()}
        kept = dict(bench.kept)
        if sandbox == "none":
            scan = median_ms(runs, lambda b=bench: timed(b.ws.scan))
            walk = median_ms(runs, lambda b=bench: timed(lambda: bare_scan(b.ws_root)))
            rows.append(
                (
                    f"stat scan of the workspace, {name} files (vs bare lstat walk)",
                    scan,
                    walk,
                    "",
                    "",
                )
            )
    off = med["off"]
    target = f"< {TARGET_MS:g} ms added" if files >= 10_000 else ""
    for way in ways:
        label = {"scan": "stat scans", "overlay": "overlay"}[way]
        met = ("yes" if med[way] - off < TARGET_MS else "no") if target else ""
        rows.append(
            (
                f"RUN_COMMAND changing {CHANGED} files, {name} files, {sandbox}, {label}",
                med[way],
                off,
                target,
                met,
            )
        )
    for way in ways:
        label = {"scan": "stat scans: reads all once", "overlay": "overlay"}[way]
        met = ("yes" if first[way] - off < 1000 else "no") if target else ""
        aim = "< 1000 ms added" if target else ""
        rows.append(
            (
                f"first command of a session, {name} files, {sandbox}, {label}",
                first[way],
                off,
                aim,
                met,
            )
        )
    changed = CHANGED * len(f"v0\n{'x' * 60}\n" * 32)
    for way in ways:
        rows.append(
            (
                f"bytes kept per command turn, {name} files, {sandbox}, {way}",
                kept[way],
                changed,
                "",
                "",
            )
        )
    return rows


class StepSession:
    """A session on ``files`` files of 60 lines under ``root``, stepped through whole
    ``codingagent step`` processes with a reply running ``true``."""

    def __init__(self, root: Path, files: int, sandbox: str) -> None:
        workspace = root / "workspace"
        for i in range(files):
            folder = workspace / f"d{i // 100:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i:05d}.py").write_text("".join(f"x{j} = {i}\n" for j in range(60)))
        self.root = root
        self.env = {**os.environ, "CODINGAGENT_SANDBOX": sandbox, "CODINGAGENT_CLIPBOARD": "false"}
        self.steps = 0
        self._agent("start", "benchmark", "--no-watch")
        self.session = next((root / "sessions").glob("*.json")).stem

    def _agent(self, *args: str) -> float:
        started = time.perf_counter()
        cli = [sys.executable, "-m", "codingagent", *args, "--root", str(self.root)]
        subprocess.run(cli, check=True, capture_output=True, env=self.env, stdin=subprocess.DEVNULL)
        return time.perf_counter() - started

    def step(self) -> float:
        """Seconds of one step (the session's first command on the first call)."""
        reply = self.root / f"r{self.steps}.txt"
        reply.write_text(f"[RUN_COMMAND]\ntrue {self.steps}\n[/RUN_COMMAND]\n")
        self.steps += 1
        return self._agent("step", self.session, str(reply))


def step_rows(later: int) -> list[Row]:
    """The issue's measure: a 10,000-file workspace against a 10-file one, whole processes.
    The two sessions are stepped in turn, so that a change in the machine's speed falls on
    both alike; the later steps are the median of ``later`` each."""
    rows: list[Row] = []
    for sandbox in ("none", "bwrap"):
        if sandbox == "bwrap" and sandbox_status("bwrap")[0] != "bwrap":
            continue
        way = "overlay" if sandbox == "bwrap" else "stat scans"
        with tempfile.TemporaryDirectory() as small_root, tempfile.TemporaryDirectory() as big_root:
            StepSession(Path(small_root) / "warm-up", 10, sandbox).step()  # the machine's caches
            small = StepSession(Path(small_root), 10, sandbox)
            big = StepSession(Path(big_root), 10_000, sandbox)
            first = (small.step(), big.step())
            pairs = [(small.step(), big.step()) for _ in range(later)]
        steady = (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))
        for label, (alone, loaded), target in (
            ("first", first, 1.0),
            ("later", steady, 0.1),
        ):
            rows.append(
                (
                    f"step, {label} command, 10k vs 10 files, {sandbox} ({way})",
                    loaded * 1000,
                    alone * 1000,
                    f"< {target * 1000:.0f} ms added",
                    "yes" if loaded - alone < target else "no",
                )
            )
    return rows


def print_table(rows: list[Row]) -> None:
    print("| measure | median | baseline | ratio | added | target | met |")
    print("|---|---|---|---|---|---|---|")
    for measure_name, value, baseline, target, met in rows:
        unit = "B" if measure_name.startswith("bytes") else "ms"
        shown = f"{value:,.0f} {unit}" if unit == "B" else f"{value:.1f} ms"
        base = f"{baseline:,.0f} {unit}" if unit == "B" else f"{baseline:.1f} ms"
        added = "" if unit == "B" else f"{value - baseline:+.1f} ms"
        ratio = f"{value / baseline:.2f}"
        print(f"| {measure_name} | {shown} | {base} | {ratio} | {added} | {target} | {met} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, one run")
    parser.add_argument("--step", action="store_true", help="also through `codingagent step`")
    args = parser.parse_args()
    sizes, runs = ((300,), 1) if args.smoke else ((1000, 10_000), 9)
    rows = []
    for files in sizes:
        for sandbox in ("none", "bwrap"):
            if sandbox == "bwrap" and sandbox_status("bwrap")[0] != "bwrap":
                continue
            rows += measure(files, sandbox, runs)
    print_table(rows)
    if args.step:
        print()
        print_table(step_rows(2 if args.smoke else 9))


if __name__ == "__main__":
    main()
