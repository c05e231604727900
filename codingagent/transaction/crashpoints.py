"""Fault injection for the crash tests: ``CODINGAGENT_CRASH_AT=name:n`` kills this process with
SIGKILL the n-th time (default: the first) it passes the point ``name`` of a turn.

The points a turn passes, in order: ``journal`` (journal written), ``preimage`` (each pre-image
recorded), ``result`` (each command run), ``history``, ``outbox``, ``state`` (the commit point).
Each RUN_COMMAND passes ``snapshot`` (its snapshot taken or its layer made, before it runs),
``ran`` (it ran, nothing of its changes recorded yet), ``preimage`` for each file it changed,
then ``captured``; on an overlay then ``committed`` after each step moving its layer in.
Recovery passes ``restored`` (each file put back) and ``rolled-back`` (journal marked), then the
turn's points as it applies the reply again; a reply held for review (docs/review.md) passes
``review`` once its record is written; undo passes ``undo`` (its journal written),
``restored``, ``rewound`` (the state saved) and ``undone`` (each turn set aside).
"""

from __future__ import annotations

import functools
import os
import signal
from collections import Counter
from collections.abc import Callable

from codingagent.state import CommandResult

CRASH_ENV = "CODINGAGENT_CRASH_AT"

OnResult = Callable[[CommandResult], None]

_passed: Counter[str] = Counter()


@functools.cache
def _wanted() -> str | None:
    """The kill point asked for: read once (a turn passes points thousands of times)."""
    return os.environ.get(CRASH_ENV)


def crash_point(name: str) -> None:
    """Kill this process here if ``CODINGAGENT_CRASH_AT`` names this pass of ``name``."""
    wanted = _wanted()
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point == name:
        _passed[name] += 1
        if _passed[name] == int(count or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def after_each_result(on_result: OnResult | None) -> OnResult:
    """``on_result`` followed by the ``result`` crash point."""

    def after_command(result: CommandResult) -> None:
        if on_result is not None:
            on_result(result)
        crash_point("result")

    return after_command
