"""The code map on a big tree: what it costs in a first prompt and in a continuation.

    python benchmarks/codemap.py            # a 10,000-file tree, 5 runs each
    python benchmarks/codemap.py --smoke    # 300 files, one run: checks the code runs

The tree: Python, TypeScript and Go files in 100 folders (8 : 1 : 1), each defining three
functions or classes and calling three defined elsewhere (a fixed seed), with file times an
hour old, as after a checkout. Measured, each the median of several runs:

- cold: the map with no cache at all (the first map ever made of this tree: every file parsed);
- first prompt: a new session's first map, the tags cached by an earlier one (each run a new
  task, so the ranking is made again);
- continuation: the same map asked again (a prompt written again, ``show --full``): read back;
- baseline: the workspace listing of the same tree, which every prompt already pays (the
  map takes the sizes and times from its stat calls, so the map's own cost is measured).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingagent.codemap.repomap import code_map
from codingagent.codemap.tagcache import cache_file
from codingagent.workspace import Workspace

BUDGET = 8192  # characters: the default map_tokens (2,048) at four characters a token


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


def median_ms(runs: int, action: Callable[[int], object]) -> tuple[float, float]:
    """The median wall time and the median CPU time of this process (ms): on a shared machine
    the CPU time leaves out the time spent waiting for a core."""
    times, cpu = [], []
    for run in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        action(run)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    files, runs = (300, 1) if args.smoke else (10_000, 5)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        paths = make_tree(root, files)
        cache_dir = Path(folder) / "cache"
        ws = Workspace(root)

        def listing(_: int) -> None:
            ws.list_files(limit=200_000, sizes=20_000)

        def cold(run: int) -> None:
            code_map(root, paths, BUDGET, cache=cache_dir / f"cold{run}", focus_text="x")

        cache = cache_file(cache_dir, root)
        code_map(root, paths, BUDGET, cache=cache)  # an earlier session made the tags
        # a prompt hands the map the sizes and times its listing walk stat'ed
        listed = ws.list_files(limit=200_000, sizes=20_000)
        stats = {path: (size, listed.times[path]) for path, size in listed.entries}

        def first(run: int) -> None:
            task = f"fix item_{run * 7} and item_{run * 11} please (task {run})"
            made = code_map(root, paths, BUDGET, cache=cache, focus_text=task, stats=stats)
            assert made.parsed == 0 and made.text

        def continuation(_: int) -> None:
            made = code_map(root, paths, BUDGET, cache=cache, focus_text="same", stats=stats)
            assert made.parsed == 0

        continuation(0)  # the map this continuation reads back
        base, base_cpu = median_ms(runs, listing)
        rows = [
            ("baseline: listing of the tree", (base, base_cpu), ""),
            ("map, cold (nothing cached)", median_ms(runs, cold), ""),
            ("map, first prompt (tags cached)", median_ms(runs, first), "200 ms"),
            ("map, continuation (map cached)", median_ms(runs, continuation), "20 ms"),
        ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"code map on {files:,} files ({runs} runs each; load average {load:.1f})\n")
    print("| measure | median | CPU time, median | ratio to the listing | target |")
    print("|---|---|---|---|---|")
    for name, (ms, cpu), target in rows:
        print(f"| {name} | {ms:,.1f} ms | {cpu:,.1f} ms | {ms / base:.2f} | {target} |")


if __name__ == "__main__":
    main()
