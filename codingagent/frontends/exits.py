"""The exit codes of the command line: one table, which the code exits with and every help text
prints from. docs/admission.md (its exit-codes table) and the README say the same in words;
tests/test_exits.py checks that they, ``codingagent --help`` and ``start --help`` agree with it.
"""

from __future__ import annotations

import inspect
from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    PROBLEM = 1
    USAGE = 2
    TURN_LIMIT = 3
    NO_COMMANDS = 4
    REFUSED = 5
    ENDPOINT_FAILED = 6
    QUESTION = 7
    QUEUE_INCOMPLETE = 8
    INTERRUPTED = 130


# What each code means, as the help texts say it (short) and as the docs' table says it.
SHORT: dict[Exit, str] = {
    Exit.OK: "ok",
    Exit.PROBLEM: "a problem to fix (the message says which)",
    Exit.USAGE: "wrong usage",
    Exit.TURN_LIMIT: "turn limit",
    Exit.NO_COMMANDS: "no commands",
    Exit.REFUSED: "refused replies",
    Exit.ENDPOINT_FAILED: "endpoint failed",
    Exit.QUESTION: "a question or a review for the user",
    Exit.QUEUE_INCOMPLETE: "a queue ended with a task not completed",
    Exit.INTERRUPTED: "stopped with Ctrl-C",
}

# A model run (--model) that stops without DONE exits by cause (docs/admission.md); the keys
# are the values of codingagent.session.seams.StopReason.
MODEL_STOP: dict[str, Exit] = {
    "turn limit": Exit.TURN_LIMIT,
    "no commands": Exit.NO_COMMANDS,
    "refused": Exit.REFUSED,
    "source ended": Exit.ENDPOINT_FAILED,
    "question": Exit.QUESTION,
    "review": Exit.QUESTION,
}

_MODEL_RUN = (Exit.TURN_LIMIT, Exit.NO_COMMANDS, Exit.REFUSED, Exit.ENDPOINT_FAILED, Exit.QUESTION)


def summary() -> str:
    """Every code in one sentence, for ``codingagent --help``."""
    model = ", ".join(f"{int(code)} {SHORT[code]}" for code in _MODEL_RUN)
    return (
        f"Exit codes: {int(Exit.OK)} {SHORT[Exit.OK]}, {int(Exit.PROBLEM)} {SHORT[Exit.PROBLEM]}, "
        f"{int(Exit.USAGE)} {SHORT[Exit.USAGE]}, {int(_MODEL_RUN[0])}-{int(_MODEL_RUN[-1])} a "
        f"model run that stopped without DONE ({model}), {int(Exit.QUEUE_INCOMPLETE)} "
        f"{SHORT[Exit.QUEUE_INCOMPLETE]}, {int(Exit.INTERRUPTED)} {SHORT[Exit.INTERRUPTED]}."
    )


def queue_summary() -> str:
    """How a queue run exits, for ``start --help``."""
    return (
        f"A queue exits {int(Exit.OK)} when every task completed, "
        f"{int(Exit.QUEUE_INCOMPLETE)} when one stopped or was skipped, "
        f"{int(Exit.INTERRUPTED)} when Ctrl-C stopped it."
    )


def appended(help_text: str | None, paragraph: str) -> str:
    """A command's help (its docstring, as click keeps it) with ``paragraph`` after it."""
    return f"{inspect.cleandoc(help_text or '')}\n\n{paragraph}"
