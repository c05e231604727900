"""What noting slips costs (docs/admission.md): a reply read into commands and slips
(``scan.commands_and_slips``, what every turn now does) against the bare parse (``parser.parse``,
the baseline), both measured in the same run on the same reply. Prints a table: medians of
several runs taken in turns, and the median of the per-run ratios.

    python benchmarks/slips.py [--smoke]
"""

from __future__ import annotations

import statistics
import sys
import time

from codingagent.protocol.parser import parse
from codingagent.protocol.scan import commands_and_slips

# Prose that mentions a tag, a file body full of brackets, a command without a body, a slip.
BLOCK = (
    "Some prose about the change, mentioning [DONE] mid-sentence.\n"
    '[CREATE_FILE path="a.py"]\nprint("x")\n' + "x = [1, 2, 3]\n" * 20 + "[/CREATE_FILE]\n"
    '[READ_FILE path="b.py"]\nAll set. [DONE]\n'
)


def seconds(read: object, text: str) -> float:
    started = time.perf_counter()
    read(text)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    smoke = "--smoke" in sys.argv
    size, runs = (10_000, 1) if smoke else (1_000_000, 7)
    text = BLOCK * (size // len(BLOCK))
    print("| reply | parse (baseline) | commands_and_slips | ratio |")
    print("|---|---|---|---|")
    # In turns, so a busy moment of the machine falls on both alike.
    pairs = [(seconds(parse, text), seconds(commands_and_slips, text)) for _ in range(runs)]
    base = statistics.median(p for p, _ in pairs)
    slips = statistics.median(s for _, s in pairs)
    ratio = statistics.median(s / p for p, s in pairs)
    print(f"| {len(text) / 1e6:.2f} MB | {base:.3f} s | {slips:.3f} s | {ratio:.2f} |")


if __name__ == "__main__":
    main()
