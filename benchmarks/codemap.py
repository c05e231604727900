"""The code map on a big tree: what it costs in a first prompt and in a continuation.

    python benchmarks/codemap.py            # a 10,000-file tree, 5 runs each
    python benchmarks/codemap.py --smoke    # 300 files, one run: checks the code runs

The tree: Python, TypeScript and Go files in 100 folders (8 : 1 : 1), each defining three
functions or classes and calling three defined elsewhere (a fixed seed), with file times an
hour old, as after a checkout. Each map is made as a first prompt makes it
(``prompt.mapview.map_section``: the default budget of 2,048 tokens, the parse budget, the
secret masking of definitions). Measured, each the median of several runs, CPU and wall:

- cold first prompt: a tree never seen (no cache) in a new process (the grammars loaded
  again): what the parse budget allows is parsed, and the map says it is partial;
- cached first prompt: a new session's first map, the tree mapped whole by earlier ones and
  unchanged since (each run a new task, so the ranking is made again);
- cached first prompt, a body edited: the same after an edit within a function (that file
  parsed again; the graph kept, with its text);
- cached first prompt, a function added: the same after an edit that adds a name no other
  file calls (that file parsed again, the kept graph's definitions patched);
- continuation: the same map asked again (a prompt written again, ``show --full``): read back;
- baseline: a turn's walk of the same tree and its listing, which every prompt already pays
  (the map takes the sizes and times from its stat calls, so the map's own cost is measured).

Measured 2026-11-26 on 10,000 files, 5 runs each, load average 0.5 on two cores: cold first
prompt 139 ms (395 of 10,000 files read), cached first prompt 78 ms (a body edited 132 ms, a
function added 145 ms), continuation 14 ms, wall; docs/prompts.md has the table.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingagent.codemap.grammars import grammar
from codingagent.prompt.mapview import map_section
from codingagent.state import SessionState
from codingagent.workspace import Listing, Workspace

TOKENS = 2048  # the default map_tokens
Timing = tuple[float, float]  # median wall, median CPU (ms)


def make_tree(root: Path, files: int) -> list[str]:
    rng = random.Random(35)
    names = [f"item_{n}" for n in range(files * 3)]
    paths = []
    for n in range(files):
        folder = f"pkg{n % 100:02d}"
        kind = "py" if n % 10 < 8 else ("ts" if n % 10 == 8 else "go")
        own = names[n * 3 : n * 3 + 3]
        calls = rng.sample(names, 3)
        if kind == "py":
            body = "".join(
                f"def {f}(x):\n    return {c}(x)\n\n\n" for f, c in zip(own, calls, strict=True)
            )
        elif kind == "ts":
            body = "".join(
                f"export function {f}(x: number): number {{\n  return {c}(x);\n}}\n\n"
                for f, c in zip(own, calls, strict=True)
            )
        else:
            body = "package p\n\n" + "".join(
                f"func {f}(x int) int {{\n\treturn {c}(x)\n}}\n\n"
                for f, c in zip(own, calls, strict=True)
            )
        path = f"{folder}/m{n}.{kind}"
        (root / folder).mkdir(exist_ok=True)
        (root / path).write_text(body)
        paths.append(path)
    old = time.time() - 3600
    for path in paths:
        os.utime(root / path, (old, old))
    return sorted(paths)


def median_ms(
    runs: int, action: Callable[[int], object], before: Callable[[int], object] | None = None
) -> Timing:
    """The median wall time and the median CPU time of this process (ms): on a shared machine
    the CPU time leaves out the time spent waiting for a core. ``before`` each run is not
    timed."""
    times, cpu = [], []
    for run in range(runs):
        if before is not None:
            before(run)
        start, start_cpu = time.perf_counter(), time.process_time()
        action(run)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(times), statistics.median(cpu)


def session(task: str, workspace: Path) -> SessionState:
    return SessionState(session_id="0000000a", task=task, workspace=str(workspace))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    files, runs = (300, 1) if args.smoke else (10_000, 5)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        make_tree(root, files)
        caches = Path(folder) / "cache"

        def walked() -> Listing:  # a turn's walk of the tree and its listing
            return Workspace(root).list_files(limit=200_000, sizes=20_000)

        listed: list[Listing] = [walked()]

        def listing(_: int) -> None:
            listed[0] = walked()

        def mapped(task: str, cache: Path) -> str:
            made = map_section(root, listed[0], session(task, root), TOKENS, cache)
            assert made is not None
            return made

        covered: list[str] = []

        def new_process(run: int) -> None:
            grammar.cache_clear()  # a new user's first session: nothing loaded, nothing kept
            shutil.rmtree(caches / f"cold{run}", ignore_errors=True)

        def cold(run: int) -> None:
            made = mapped(f"fix item_{run * 7} please (task {run})", caches / f"cold{run}")
            covered.append(made.split("\n")[2])

        whole = caches / "whole"
        from codingagent.prompt.mapview import folder_map

        folder_map(root, listed[0], session("x", root), ".", whole)  # earlier sessions' maps

        def first(run: int) -> None:
            made = mapped(f"fix item_{run * 7} and item_{run * 11} please (task {run})", whole)
            assert "a first look" not in made

        added, body = root / "pkg01" / "m1.py", root / "pkg02" / "m2.py"

        def add(run: int) -> None:
            added.write_text(added.read_text() + f"\n\ndef added_{run}(x):\n    return x\n")
            listed[0] = walked()

        def edit_body(run: int) -> None:
            body.write_text("\n" + body.read_text())  # every definition a line further down
            listed[0] = walked()

        def with_added(run: int) -> None:
            made = mapped(f"rename added_{run} (task {run})", whole)
            assert "a first look" not in made and f"added_{run}" in made

        def with_body(run: int) -> None:
            made = mapped(f"fix item_6 (task {run})", whole)
            assert "a first look" not in made and f"pkg02/m2.py:\n{run + 2:>4} | def item_6" in made

        def continuation(_: int) -> None:
            mapped("same task", whole)

        base = median_ms(runs, listing)
        rows: list[tuple[str, Timing, float | None]] = [
            ("baseline: listing of the tree", base, None),
            ("cold first prompt (tree never seen)", median_ms(runs, cold, new_process), 200),
            ("cached first prompt (tree unchanged)", median_ms(runs, first), 200),
            ("cached first prompt (a body edited)", median_ms(runs, with_body, edit_body), 200),
            ("cached first prompt (a function added)", median_ms(runs, with_added, add), 200),
        ]
        continuation(0)  # the map this continuation reads back
        rows.append(("continuation (map asked again)", median_ms(runs, continuation), 20))
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(
        f"code map on {files:,} files ({runs} runs each; load average {load[0]:.2f}, "
        f"{load[1]:.2f}, {load[2]:.2f}; {os.cpu_count()} cores)\n"
    )
    print("| measure | wall, median | CPU, median | ratio to the listing (wall) | target | met |")
    print("|---|---|---|---|---|---|")
    for name, (ms, cpu), target in rows:
        goal, met = ("", "") if target is None else (f"< {target:.0f} ms", _met(ms, cpu, target))
        print(f"| {name} | {ms:,.1f} ms | {cpu:,.1f} ms | {ms / base[0]:.2f} | {goal} | {met} |")
    print(f"\ncold first prompt's map: {covered[len(covered) // 2]}")


def _met(wall: float, cpu: float, target: float) -> str:
    if wall < target:
        return "yes"
    return "CPU only" if cpu < target else "no"


if __name__ == "__main__":
    main()
