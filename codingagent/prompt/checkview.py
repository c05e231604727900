"""The user's check command as the prompts show it (docs/prompts.md, "The check"): its
output with the failing part first, cut to the output limit, and the ``## Check`` section.
Pure: text in, text out.

**The failing part first.** pytest's sections that say what failed (``short test summary
info``, then ``FAILURES``, then ``ERRORS``: each from its ``=== title ===`` rule to the next
rule) come first; without them, the lines that name a failure (``Traceback (most recent call
last)``, ``FAILED``, ``FAIL``, ``ERROR``, ``SomethingError``, ``error:``, ``not ok``,
``panicked at``, ``✗``, ``✕``), each with ``BEFORE`` lines before and ``AFTER`` after. Then a
line ``(the rest of the output:)`` and the other lines in their order. Each part is cut as a
RUN_COMMAND's output is, keeping its head and its tail, the failing part first within the
limit. Output with no such line is only cut.
"""

from __future__ import annotations

import re

from codingagent.state import SessionState

CHECK = "CHECK"  # the result's command name: ``[FAILED] CHECK: 'pytest -q' failed (exit 1)``
HEADING = "## Check"
CAPTURED = 65_536  # characters of the check's output read, to find the failing part in
BEFORE, AFTER = 2, 8  # lines kept around a line that names a failure
REST = "(the rest of the output:)"
ABOUT = (
    "(the user's check command: run before the first prompt and after every reply that "
    "changes files; [DONE] is accepted only while it passes)"
)

_RULE = re.compile(r"^=+ (.+?) =+$")
_FAILING = ("short test summary info", "FAILURES", "ERRORS")  # pytest's, in this order
_MARK = re.compile(
    r"Traceback \(most recent call last\)|\b(?:FAILED|FAILURES|FAIL|ERRORS|ERROR)\b"
    r"|\b\w*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|^\s*not ok\b|panicked at|✗|✕"
)


def failing_first(output: str, limit: int) -> str:
    """``output`` with its failing part first, within about ``limit`` characters."""
    lines = output.rstrip("\n").split("\n")
    failing = _pytest_parts(lines) or _marked(lines)
    if not failing or len(failing) == len(lines):
        return _cut(lines, limit)
    chosen = set(failing)
    first = _cut([lines[i] for i in failing], limit)
    rest = [line for i, line in enumerate(lines) if i not in chosen]
    room = limit - len(first) - len(REST) - 2
    if room < 80:
        return f"{first}\n({len(rest):,} more lines of output not shown)"
    return f"{first}\n{REST}\n{_cut(rest, room)}"


def check_section(state: SessionState, full: bool = False) -> str | None:
    """The ``## Check`` section: the last run's result, its output in the prompt it was run
    for (and after a DONE it refused, and for ``show --full``); else its status line and
    when it ran. None without a check."""
    run = state.check
    if run is None:
        return None
    lines = [ABOUT] if full or state.sequence_number == 1 else []
    if full or run.shown == state.sequence_number:
        lines += run.result.lines()
    else:
        lines.append(
            f"{run.result.headline} (as run for message {run.ran}; not run again: no file "
            "changed since)"
        )
    return "\n".join([HEADING, *lines])


def last_line(output: str) -> str | None:
    """The last line of a passing check's output that says something (``3 passed in 0.1s``)."""
    said = [line.strip(" =") for line in output.splitlines() if line.strip(" =")]
    return said[-1][:200] if said else None


def _pytest_parts(lines: list[str]) -> list[int]:
    """The indices of pytest's failure sections, the summary first."""
    rules = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _RULE.match(line))]
    ends = [i for i, _ in rules[1:]] + [len(lines)] if rules else []
    parts: list[int] = []
    for title in _FAILING:
        for (start, name), end in zip(rules, ends, strict=True):
            if name == title:
                parts += range(start, end)
    return parts


def _marked(lines: list[str]) -> list[int]:
    """The indices of the lines that name a failure, with the lines around them."""
    keep: set[int] = set()
    for index, line in enumerate(lines):
        if _MARK.search(line):
            keep.update(range(max(0, index - BEFORE), min(len(lines), index + AFTER + 1)))
    return sorted(keep)


def _cut(lines: list[str], limit: int) -> str:
    """``lines`` within ``limit`` characters: whole, or their head (two thirds) and tail,
    and a line saying how many were cut between."""
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    head, size = [], 0
    for line in lines:
        if size + len(line) + 1 > limit * 2 // 3:
            break
        head.append(line)
        size += len(line) + 1
    if not head:  # one huge line: its start
        head, size = [lines[0][: limit * 2 // 3]], limit * 2 // 3
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if size + len(line) + 1 > limit - 40:
            break
        tail.insert(0, line)
        size += len(line) + 1
    cut = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[... {cut:,} lines cut ...]", *tail])
