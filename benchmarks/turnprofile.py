"""Where a turn's milliseconds go: the turn latency benchmark's turn (``run.py``'s 20-command
reply on a 1,000-file workspace) applied with ``apply_reply``, its steps timed by wall clock.

    python benchmarks/turnprofile.py            # 25 turns after 5 to warm up
    python benchmarks/turnprofile.py --turns 50

Each step is a function of the turn, wrapped for the run with a timer: the table prints each
one's median milliseconds per turn by the wall clock and in CPU time (the process's, all its
threads), and its share of the whole turn (``apply_reply``) by the wall clock. Steps nest (the
next outbox holds the listing, the listing the walk); a step's time includes the steps inside
it, which follow it with one more dot. The wall clock moves with the disk: where a step's wall
time is well above its CPU time, it waits (an fsync, a file created where the file system must
first read its free-inode map), and that wait is the machine's, the CPU time ours.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session import turn
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import make_tree, turn_reply  # the latency benchmark's tree and reply

# (depth, label, module, attribute): attributes of a class are "Class.method".
STEPS = [
    (0, "the whole turn", "codingagent.session.turn", "apply_reply"),
    (1, "reply decoded", "codingagent.session.seams", "Received.of"),
    (1, "admission (echo, duplicate)", "codingagent.session.admission", "check"),
    (1, "turn opened (history, journal)", "codingagent.session.turn", "_journal"),
    (1, "reply parsed", "codingagent.session.turn", "_parse"),
    (1, "commands executed", "codingagent.session.turn", "_execute"),
    (2, "path guard (locate)", "codingagent.workspace.pathguard", "Guard.locate"),
    (2, "pre-images journaled", "codingagent.transaction.journal", "Journal.record"),
    (2, "pre-images journaled (all)", "codingagent.transaction.journal", "Journal.record_all"),
    (1, "outcome recorded", "codingagent.records.history", "TurnRecord.write_outcome"),
    (1, "next outbox", "codingagent.session.turn", "write_outbox"),
    (2, "listing", "codingagent.workspace", "Workspace.list_files"),
    (3, "tree walk", "codingagent.workspace.tree", "Tree.walked"),
    (2, "project instructions", "codingagent.prompt.compose", "_instructions"),
    (2, "secret files", "codingagent.prompt.compose", "_note_secret_files"),
    (2, "render and fit", "codingagent.prompt.compose", "_fit"),
    (2, "masking", "codingagent.secrecy.masking", "Masker.mask"),
    (2, "outbox written", "codingagent.records.store", "SessionStore.write_outbox"),
    (1, "meta written", "codingagent.records.history", "TurnRecord.write_meta"),
    (1, "grouped fsyncs", "codingagent.session.turn", "folder_syncs_grouped"),
    (1, "state saved (commit)", "codingagent.records.store", "SessionStore.save"),
    (1, "journal closed", "codingagent.transaction.journal", "Journal.close"),
]


Spent = dict[str, list[float]]  # label -> [wall seconds, CPU seconds]


def instrument(spent: Spent) -> list[Callable[[], None]]:
    """Wrap each step with a timer adding to ``spent``; the undo of each wrap."""
    undo = []
    for _, label, module_name, attribute in STEPS:
        module = importlib.import_module(module_name)
        owner: Any = module
        name = attribute
        if "." in attribute:
            cls, name = attribute.split(".")
            owner = getattr(module, cls)
        original = getattr(owner, name)
        if label == "grouped fsyncs":
            wrapped = _timed_context(original, label, spent)
        else:
            wrapped = _timed(original, label, spent)
        setattr(owner, name, wrapped)
        undo.append(functools.partial(setattr, owner, name, original))
    return undo


def _timed(function: Callable[..., Any], label: str, spent: Spent) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = _clocks()
        try:
            return function(*args, **kwargs)
        finally:
            _add(spent[label], began)

    return wrapper


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _add(into: list[float], began: tuple[float, float]) -> None:
    wall, cpu = _clocks()
    into[0] += wall - began[0]
    into[1] += cpu - began[1]


def _timed_context(make: Callable[[], Any], label: str, spent: Spent) -> Any:
    """The grouped block's end (where its fsyncs run) timed; its body is not."""

    class Timed:
        def __enter__(self) -> None:
            self.inner = make()
            self.inner.__enter__()

        def __exit__(self, *exc: Any) -> Any:
            began = _clocks()
            try:
                return self.inner.__exit__(*exc)
            finally:
                _add(spent[label], began)

    return Timed


def profile(
    turns: int, warm: int = 5, files: int = 1000
) -> list[tuple[int, str, float, float, float]]:
    """(depth, label, median wall ms a turn, median CPU ms, wall share of the turn) for each
    step."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        store.ensure_dirs()
        make_tree(store.workspace, files)
        state, _ = start_session(store, "benchmark")
        options = TurnOptions(shell=Shell())
        per_turn: dict[str, list[list[float]]] = defaultdict(list)
        for n in range(warm + turns):
            spent: Spent = defaultdict(lambda: [0.0, 0.0])
            undo = instrument(spent)
            try:
                reply = Reply(turn_reply(n).encode(), f"reply{n}.txt")
                turn.apply_reply(store, state.session_id, reply, options)  # wrapped
            finally:
                for each in undo:
                    each()
            if n >= warm:
                for _, label, _, _ in STEPS:
                    per_turn[label].append(spent[label])
    whole = statistics.median(wall for wall, _ in per_turn["the whole turn"])
    rows = []
    for depth, label, _, _ in STEPS:
        wall = statistics.median(each[0] for each in per_turn[label])
        cpu = statistics.median(each[1] for each in per_turn[label])
        rows.append((depth, label, wall * 1000, cpu * 1000, wall / whole if whole else 0.0))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=25)
    args = parser.parse_args(argv)
    print("| step | wall ms a turn (median) | CPU ms | share (wall) |")
    print("|---|---|---|---|")
    for depth, label, wall, cpu, share in profile(args.turns):
        print(f"| {'· ' * depth}{label} | {wall:.2f} | {cpu:.2f} | {share:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
