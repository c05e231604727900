"""Whether fitting requests to a model's window changes anything for an endpoint with a large
window: the scripted six-turn session of benchmarks/prompts.py (an OpenAI-compatible server on
127.0.0.1 that lists no window: 128,000 tokens are assumed), its prompt and request sizes and
its wall time, and what fitting one large request costs.

    python benchmarks/windows.py [--repeats 5]
    PYTHONPATH=/path/to/older/checkout python benchmarks/windows.py   # the same, before

Prints two markdown tables: per configuration of the session, the characters of all prompts,
of all requests and of the largest request, and the median wall time of the whole session (a
``codingagent start --model`` subprocess, start-up included) over the repeats; then the median
time of :func:`codingagent.prompt.fitting.fit` on a 60,000-character request that fits (the
cost every request pays) and on one that must be cut to 8,192 tokens, when this checkout has
it. Timings on a shared machine are noise beyond a few percent: compare medians of the same run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prompts import CONFIGURATIONS, session  # the same scripted session


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    scratch = Path(tempfile.mkdtemp(prefix="ca-windows-"))
    print(
        "| configuration | prompts, characters | requests, characters | largest request | "
        "session, median s |"
    )
    print("|---|---|---|---|---|")
    try:
        for n, (name, options) in enumerate(CONFIGURATIONS):
            times = []
            for r in range(repeats):
                started = time.perf_counter()
                prompts, requests = session(scratch / f"{n}-{r}", **options)
                times.append(time.perf_counter() - started)
            totals = [total for total, _ in requests]
            print(
                f"| {name} | {sum(map(len, prompts)):,} | {sum(totals):,} | {max(totals):,} | "
                f"{statistics.median(times):.2f} |"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    fitting()
    return 0


def fitting() -> None:
    try:
        from codingagent.prompt.fitting import fit
    except ImportError:
        print("\n(this checkout has no codingagent.prompt.fitting)")
        return
    lines = "\n".join(
        f"{i:>5} | value_{i} = compute(argument={i}, other='{'x' * 30}')" for i in range(900)
    )
    prompt = (
        "=== HEADER ===\nSession: 0123abcd\nSequence: 2\nTask: t\nProtocol: 1.2\n\n"
        "=== PROTOCOL ===\n(the short form)\n\n=== CONTEXT ===\n"
        "## Workspace Files\na.py (1 bytes)\n\n"
        f"## Requested File Contents\n--- big.py ---\n{lines}\n--- end big.py ---\n\n"
        "=== PROMPT ===\nContinue.\n"
    )
    print(f"\n| fit() on a request of {len(prompt):,} characters | median ms |")
    print("|---|---|")
    for label, budget in (("fits a 128,000-token window", 96_000), ("cut to 8,192 tokens", 6144)):
        times = []
        for _ in range(20):
            started = time.perf_counter()
            fit("system " * 1000, [], prompt, budget)
            times.append(time.perf_counter() - started)
        print(f"| {label} | {statistics.median(times) * 1000:.2f} |")


if __name__ == "__main__":
    raise SystemExit(main())
