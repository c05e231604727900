"""Measure codingagent's own overhead and compare it with baselines measured in the same run.

    python benchmarks/run.py            # the full run (a few minutes)
    python benchmarks/run.py --quick    # about 90 s; smaller trees and fewer repeats
    python benchmarks/run.py --smoke    # seconds: tiny inputs, one repeat; checks the code runs

Prints one markdown table. Every figure is the median of several runs; "ratio" divides it by a
baseline measured on the same machine in the same run, because absolute times on shared
machines are noise. No network; everything happens in a temporary folder.
"""

from __future__ import annotations

import argparse
import itertools
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from functools import partial
from pathlib import Path

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from codingagent.execute import execute
from codingagent.prompt.outbox import write_outbox
from codingagent.protocol.commands import EditFile, Replace, ReplaceBlock
from codingagent.protocol.parser import parse
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import Reply, TurnReport
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.settings import Settings
from codingagent.sources.inbox import InboxSource
from codingagent.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Scale:
    """How big each benchmark's inputs are and how often each measure is repeated."""

    runs: int  # repeats of a turn
    few: int  # repeats of the parser and listing measures and of a polled turn
    startups: int  # repeats of a process start
    edits: int  # repeats of an edit on the big file
    tree: int  # files in the turn-latency workspace
    mb: int  # bytes of the parser's small input; the big one is ten times that
    listings: tuple[int, ...]  # workspace sizes the listing is measured on
    sessions: int  # sessions `codingagent sessions` lists
    printed: str  # what the RUN_COMMAND of the memory probe prints (head -c)
    lines: int  # lines of the file the edit benchmarks change


SCALES = {
    "full": Scale(15, 5, 11, 7, 1000, 1_000_000, (1_000, 10_000, 100_000), 20, "1G", 100_000),
    "quick": Scale(11, 3, 5, 3, 1000, 1_000_000, (1_000, 10_000), 20, "100M", 100_000),
    "smoke": Scale(1, 1, 1, 1, 50, 10_000, (100,), 3, "1M", 1_000),
}


def count(n: int) -> str:
    """``1k``, ``100k``, ``50``: a size in a measure's name."""
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def size_of(n: int) -> str:
    """``1 MB``, ``10 kB``: bytes in a measure's name."""
    return f"{n // 1_000_000} MB" if n >= 1_000_000 else f"{n // 1000} kB"


@dataclass
class Row:
    measure: str
    value: str
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    met: str = ""


def median_of(runs: int, action: Callable[[], float]) -> float:
    return statistics.median(action() for _ in range(runs))


def paired_medians(
    runs: int, small: Callable[[], float], big: Callable[[], float]
) -> tuple[float, float]:
    """The medians of ``small`` and ``big``, run in turn (small, big, small, big...): a drift in
    the machine's speed during the runs weighs on both alike, not on the ratio."""
    pairs = [(small(), big()) for _ in range(runs)]
    return statistics.median(s for s, _ in pairs), statistics.median(b for _, b in pairs)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


@contextmanager
def scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ca-bench-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- trees and replies -----------------------------------------------------------------------


def make_tree(root: Path, files: int) -> None:
    """``files`` small files in folders of 100, plus ignored build output and a .gitignore."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    for i in range(files):
        folder = root / "src" / f"pkg{i // 100:04d}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i % 100:02d}.py").write_text(f"VALUE = {i}\n")
    build = root / "build"
    build.mkdir(exist_ok=True)
    for i in range(max(10, files // 10)):
        (build / f"out{i}.o").write_bytes(b"\0" * 16)


def turn_reply(n: int) -> str:
    """A realistic 20-command reply (no RUN_COMMAND: that would time the command, not us)."""
    parts = [f"Turn {n}: I will add the helpers, fix the constants and look at the results.\n"]
    for i in range(8):
        body = "".join(f"def f{j}():\n    return {n + j}\n\n" for j in range(10))
        parts.append(f'[CREATE_FILE path="gen/t{n}_{i}.py"]\n{body}[/CREATE_FILE]\n')
    for i in range(6):
        parts.append(
            f'[EDIT_FILE path="src/pkg0000/mod{i:02d}.py" start_line="1" end_line="1"]\n'
            f"VALUE = {n * 100 + i}\n[/EDIT_FILE]\n"
        )
    for i in range(4):
        parts.append(f'[READ_FILE path="src/pkg0001/mod{i:02d}.py"]\n')
    parts.append(f'[DELETE_FILE path="gen/t{n}_0.py"]\n')
    parts.append(f"[MESSAGE]\nturn {n} done\n[/MESSAGE]\n")
    return "".join(parts)


# --- 1. turn latency in watch mode -------------------------------------------------------------


def bare_watchdog_latency(folder: Path, runs: int) -> float:
    """Close of a file -> a bare watchdog handler's on_closed: the floor for any watcher."""
    seen: queue.Queue[float] = queue.Queue()

    class Handler(FileSystemEventHandler):
        def on_closed(self, event):  # type: ignore[no-untyped-def]
            seen.put(time.perf_counter())

    folder.mkdir(parents=True, exist_ok=True)
    observer = Observer()
    observer.schedule(Handler(), str(folder))
    observer.start()
    try:
        time.sleep(0.2)
        samples = []
        for i in range(runs):
            with open(folder / f"r{i}.txt", "w") as f:
                f.write("x" * 2000)
            closed = time.perf_counter()
            samples.append(seen.get(timeout=10) - closed)
            time.sleep(0.05)
        return statistics.median(samples)
    finally:
        observer.stop()
        observer.join()


class _TurnTimes:
    """A silent session-loop listener that notes when each turn is committed."""

    def __init__(self) -> None:
        self.done: queue.Queue[float] = queue.Queue()

    def turn_applied(self, report: TurnReport) -> None:
        assert report.outbox is not None and report.outbox.exists()
        self.done.put(time.perf_counter())

    @contextmanager
    def running(self, command: str) -> Iterator[None]:
        yield

    def approve(self, command: str) -> bool:
        return True

    def answer_question(self, question: str) -> str | None:
        return None

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args: None  # every other event: nothing to show


def watch_latencies(root: Path, runs: int, poll: bool, tree: int) -> list[float]:
    """Reply closed in inbox/ -> turn committed (next outbox renamed into place, state saved)."""
    store = SessionStore(root)
    store.ensure_dirs()
    make_tree(store.workspace, tree)
    state, _ = start_session(store, "benchmark")
    times = _TurnTimes()
    settings = Settings(clipboard=False, poll=poll)
    loop = SessionLoop(store, settings, state.session_id, times, shell=Shell())  # type: ignore[arg-type]
    source = InboxSource(store.inbox, settings.max_reply_bytes, poll=poll)

    def run() -> None:
        with loop, source:
            loop.run(source)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.3)
    samples = []
    try:
        for n in range(runs):
            with open(store.inbox / f"reply{n}.txt", "w") as f:
                f.write(turn_reply(n))
            closed = time.perf_counter()
            samples.append(times.done.get(timeout=30) - closed)
            time.sleep(0.1)
    finally:
        loop.stop()
        thread.join(timeout=10)
    return samples


def bench_turn_latency(scale: Scale) -> list[Row]:
    runs, tree = scale.runs, scale.tree
    with scratch() as tmp:
        bare = bare_watchdog_latency(tmp / "bare", runs)
        inotify = statistics.median(watch_latencies(tmp / "inotify", runs, False, tree))
        polling = statistics.median(watch_latencies(tmp / "polling", scale.few, True, tree))
    return [
        Row(
            f"turn latency, inotify (20 commands, {count(tree)} files)",
            ms(inotify),
            ms(bare),
            f"{inotify / bare:.0f}x",
            "p50 < 40 ms",  # (issue 38; no ratio: a turn writing 15 files is no bare handler)
            verdict(inotify < 0.04),
        ),
        Row("turn latency, polling", ms(polling), ms(bare), f"{polling / bare:.0f}x", "(report)"),
    ]


# --- 2. parser ---------------------------------------------------------------------------------

REALISTIC = (
    "Let me look at the failing test first, then fix the parser.\n\n```text\n"
    + "".join(
        f'[CREATE_FILE path="src/m{i}.py"]\n'
        + "".join(
            f"    line {j} of module {i} = compute({j}, [x for x in range({j})])\n"
            for j in range(30)
        )
        + "[/CREATE_FILE]\n\nNow the edit:\n"
        f'[EDIT_FILE path="src/m{i}.py" start_line="3" end_line="4"]\nfixed = True\n[/EDIT_FILE]\n'
        "[RUN_COMMAND]\npython -m pytest -q tests/\n[/RUN_COMMAND]\n"
        for i in range(5)
    )
    + "```\n[DONE]\nAll green.\n[/DONE]\n"
)


def sized(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


def parse_time(text: str) -> float:
    return timed(lambda: parse(text))


def bench_parser(scale: Scale) -> list[Row]:
    runs = max(scale.few, 5)  # (a ratio of two medians of 3 moved by 2 with the machine here)
    mb = scale.mb
    one = sized(REALISTIC, mb)
    ten = sized(REALISTIC, 10 * mb)
    # (cheap, so repeated more: at 1 MB a run of 20 ms moves by a third with the machine)
    t1, t10 = paired_medians(2 * runs, partial(parse_time, one), partial(parse_time, ten))
    rows = [
        Row(
            "parser throughput, realistic reply",
            f"{10 * mb / 1e6 / t10:.0f} MB/s",
            "",
            "",
            ">= 20 MB/s",
            verdict(10 * mb / 1e6 / t10 >= 20),
        ),
        Row(
            f"parser scaling, {size_of(10 * mb)} / {size_of(mb)}",
            f"{t10 / t1:.1f}",
            "",
            "",
            "< 12",
            verdict(t10 / t1 < 12),
        ),
    ]
    adversarial = {
        "unclosed tags": lambda n: '[CREATE_FILE path="x"\n' * (n // 22),
        "one long line": lambda n: '[CREATE_FILE path="' + "a" * n,
        "nested fences": lambda n: "```\n" * (n // 8) + "[DONE]\nx\n" + "```\n" * (n // 8),
        "unclosed DONEs": lambda n: "[DONE]\n" * (n // 7),
        "curly attributes on one line": lambda n: (
            "[READ_FILE path=\u201ca\u201d "
            + " ".join(f"x{i}=\u201cv\u201d" for i in range(n // 12))
            + "]\n"
        ),
    }
    for name, make in adversarial.items():
        small, big = make(mb), make(10 * mb)
        s, b = paired_medians(runs, partial(parse_time, small), partial(parse_time, big))
        rows.append(
            Row(
                f"parser, adversarial {name}: {size_of(10 * mb)}",
                ms(b),
                ms(s) + f" ({size_of(mb)})",
                f"{b / s:.1f}",
                "< 12",
                verdict(b / s < 12),
            )
        )
    return rows


# --- 3. listing and render ---------------------------------------------------------------------


def bare_walk(root: Path) -> int:
    count = 0
    for _, _, files in os.walk(root):
        count += len(files)
    return count


def bench_listing(scale: Scale) -> list[Row]:
    runs = scale.few
    rows = []
    with scratch() as tmp:
        for size in scale.listings:
            store = SessionStore(tmp / f"t{size}")
            store.ensure_dirs()
            make_tree(store.workspace, size)
            state, _ = start_session(store, "benchmark")
            walk = median_of(runs, lambda ws=store.workspace: timed(lambda: bare_walk(ws)))
            ours = median_of(runs, lambda s=store, st=state: timed(lambda: write_outbox(s, st)))
            target, ok = (
                ("<= 3x the walk", verdict(ours / walk <= 3)) if size == 100_000 else ("", "")
            )
            rows.append(
                Row(
                    f"listing + render, {size:,} files",
                    ms(ours),
                    ms(walk) + " (os.walk)",
                    f"{ours / walk:.1f}x",
                    target,
                    ok,
                )
            )
    return rows


# --- 4. start-up -------------------------------------------------------------------------------


def run_process(args: list[str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def bench_startup(scale: Scale) -> list[Row]:
    runs = scale.startups
    python = [sys.executable, "-c", "pass"]
    agent = [sys.executable, "-m", "codingagent"]
    with scratch() as tmp:
        store = SessionStore(tmp)
        store.ensure_dirs()
        for i in range(scale.sessions):
            start_session(store, f"task {i}")
        base = median_of(runs, lambda: run_process(python))
        helped = median_of(runs, lambda: run_process([*agent, "--help"]))
        listed = median_of(runs, lambda: run_process([*agent, "sessions", "--root", str(tmp)]))
        many = scale.sessions * 50
        copy_sessions(store, many - scale.sessions)
        listed_many = median_of(runs, lambda: run_process([*agent, "sessions", "--root", str(tmp)]))
    return [
        Row(
            "start-up, codingagent --help",
            ms(helped),
            ms(base) + " (python -c pass)",
            f"{helped / base:.1f}x",
            "< 250 ms",
            verdict(helped < 0.25),
        ),
        Row(
            f"start-up, codingagent sessions ({scale.sessions})",
            ms(listed),
            ms(base),
            f"{listed / base:.1f}x",
            "< 150 ms",
            verdict(listed < 0.15),
        ),
        Row(
            f"start-up, codingagent sessions ({many:,})",
            ms(listed_many),
            ms(base),
            f"{listed_many / base:.1f}x",
            "< 1 s",
            verdict(listed_many < 1.0),
        ),
    ]


def copy_sessions(store: SessionStore, n: int) -> None:
    """``n`` more sessions: copies of the first one's state file under new ids."""
    first = store.state_path(store.ids()[0]).read_text(encoding="utf-8")
    old_id = store.ids()[0]
    for _ in range(n):
        new_id = store.new_id()
        store.state_path(new_id).write_text(first.replace(old_id, new_id), encoding="utf-8")


# --- 5. RUN_COMMAND memory ---------------------------------------------------------------------

_MEMORY_PROBE = """
import sys
from pathlib import Path
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply

def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would include the parent's, pre-exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

store = SessionStore(Path.cwd())
state, _ = start_session(store, "memory")
before = peak_mb()
reply = f"[RUN_COMMAND]\\n{sys.argv[1]}\\n[/RUN_COMMAND]\\n".encode()
apply_reply(store, state.session_id, Reply(reply, "r"), TurnOptions(shell=Shell(timeout=300)))
print(before, peak_mb())
"""


def bench_memory(scale: Scale) -> list[Row]:
    size = scale.printed
    with scratch() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, f"yes | head -c {size}"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    before, after = float(out[0]), float(out[1])
    return [
        Row(
            f"RUN_COMMAND peak RSS, command prints {size}B",
            f"{after:.0f} MB",
            f"{before:.0f} MB (before the command)",
            f"+{after - before:.0f} MB",
            "< 100 MB",
            verdict(after < 100),
        )
    ]


# --- 6. edits on a big file --------------------------------------------------------------------


def numbered_lines(n: int) -> str:
    return "".join(f"x_{i} = {i}\n" for i in range(n))


def bench_edits(scale: Scale) -> list[Row]:
    runs = scale.edits
    lines = scale.lines
    rows = []
    with scratch() as tmp:
        ws, shell = Workspace(tmp), Shell()
        for name in ("big.txt", "big.py"):
            (tmp / name).write_text(numbered_lines(lines))
            half, later = lines // 2, lines * 7 // 10
            edit = EditFile(
                line=1, path=name, start_line=half, end_line=half + 1, content="y = 1\nz = 2\n"
            )
            block = ReplaceBlock(line=2, search=f"x_{later} = {later}\n", replace="w = 0\n")
            replace = Replace(line=1, path=name, blocks=(block,))
            for label, command in (("EDIT_FILE", edit), ("REPLACE", replace)):
                # Each run restores the file, so REPLACE finds its SEARCH text every time.
                def once(command=command, name=name) -> float:
                    (tmp / name).write_text(numbered_lines(lines))
                    return timed(lambda: execute([command], ws, shell))

                took = median_of(runs, once)
                rows.append(
                    Row(
                        f"{label} on a {count(lines)}-line file ({name})",
                        ms(took),
                        "",
                        "",
                        "< 100 ms",
                        verdict(took < 0.1),
                    )
                )
    return rows


# --- 7. many REPLACE commands or one with many blocks --------------------------------------------


def replace_reply(blocks: int, one_command: bool) -> str:
    """``blocks`` SEARCH/REPLACE blocks on ``f.py``, each its own REPLACE or all in one."""
    parts = [
        f"<<<<<<< SEARCH\nx_{i * 10} = {i * 10}\n=======\nx_{i * 10} = -{i * 10}\n>>>>>>> REPLACE\n"
        for i in range(blocks)
    ]
    if one_command:
        return '[REPLACE path="f.py"]\n' + "".join(parts) + "[/REPLACE]\n"
    return "".join(f'[REPLACE path="f.py"]\n{part}[/REPLACE]\n' for part in parts)


def bench_replace_blocks(scale: Scale) -> list[Row]:
    """A whole turn (apply_reply: journal, history, outbox, state) of 20 REPLACE commands on one
    file, against the same 20 blocks in one REPLACE command."""
    runs = scale.runs
    with scratch() as tmp:
        store = SessionStore(tmp)
        store.ensure_dirs()
        make_tree(store.workspace, scale.tree)
        state, _ = start_session(store, "benchmark")
        shell = Shell()

        runs_so_far = itertools.count()

        def turn(text: str) -> float:
            (store.workspace / "f.py").write_text(numbered_lines(1000))
            data = f"Run {next(runs_so_far)}.\n{text}".encode()  # never a skipped duplicate
            return timed(
                lambda: apply_reply(
                    store, state.session_id, Reply(data, "r"), TurnOptions(shell=shell)
                )
            )

        many = median_of(runs, lambda: turn(replace_reply(20, one_command=False)))
        one = median_of(runs, lambda: turn(replace_reply(20, one_command=True)))
    return [
        Row(
            f"turn of 20 REPLACE commands on one file ({count(scale.tree)} files)",
            ms(many),
            ms(one) + " (1 REPLACE, 20 blocks)",
            f"{many / one:.1f}x",
            "(report)",
        )
    ]


def bench_floods(scale: Scale) -> list[Row]:
    """Whole turns (apply_reply) of replies built to stall the agent: a flood of bare [DONE]
    lines, and 400 READ_FILEs of distinct ranges of one 5,000-line file. The turn stays within
    seconds and the next prompt within the token budget."""
    with scratch() as tmp:
        store = SessionStore(tmp)
        store.ensure_dirs()
        lines = max(50, scale.lines // 20)
        (store.workspace / "big.txt").write_text(numbered_lines(lines))
        shell = Shell()
        floods = {
            f"bare [DONE] lines, {size_of(5 * scale.mb)}": "[DONE]\n" * (5 * scale.mb // 7),
            f"400 READ_FILE ranges of a {count(lines)}-line file": "".join(
                f'[READ_FILE path="big.txt" start_line="{i * lines // 400 + 1}" '
                f'end_line="{i * lines // 400 + 400}"]\n'
                for i in range(400)
            ),
        }
        rows = []
        for name, text in floods.items():
            state, _ = start_session(store, "benchmark")
            seconds = timed(
                lambda text=text, sid=state.session_id: apply_reply(
                    store,
                    sid,
                    Reply(text.encode(), "r"),
                    TurnOptions(shell=shell, max_reply_bytes=10**8),
                )
            )
            outbox = store.outbox_path(state.session_id, 2).stat().st_size
            rows.append(
                Row(
                    f"turn of a flood: {name}",
                    ms(seconds),
                    f"outbox {outbox:,} bytes",
                    "",
                    "< 10 s, outbox < 500 kB",
                    verdict(seconds < 10 and outbox < 500_000),
                )
            )
    return rows


BENCHMARKS = {
    "latency": bench_turn_latency,
    "parser": bench_parser,
    "listing": bench_listing,
    "startup": bench_startup,
    "memory": bench_memory,
    "edits": bench_edits,
    "replace": bench_replace_blocks,
    "floods": bench_floods,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="about 90 s, smaller inputs")
    sizes.add_argument("--smoke", action="store_true", help="seconds: tiny inputs, one repeat")
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append", help="run one")
    args = parser.parse_args(argv)
    scale = SCALES["smoke" if args.smoke else "quick" if args.quick else "full"]
    rows: list[Row] = []
    for name in args.only or BENCHMARKS:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.extend(BENCHMARKS[name](scale))
    print(f"\nmachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}")
    print()
    print("| measure | median | baseline | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(astuple(row)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
