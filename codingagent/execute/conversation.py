"""MESSAGE, ASK, DONE and parse errors: what the LLM says rather than does."""

from __future__ import annotations

from typing import NoReturn

from codingagent.execute.context import CommandFailed, Success, Turn
from codingagent.protocol.commands import Ask, Done, Message, ParseError, plural


def message(cmd: Message, turn: Turn) -> Success:
    turn.outcome.messages.append(cmd.text)
    return Success("Shown to the user")


def ask(cmd: Ask, turn: Turn) -> Success:
    """The turn ends here (:func:`dispatch.execute` runs nothing after it)."""
    if not cmd.question:
        raise CommandFailed("the question is empty; write it between [ASK] and [/ASK]")
    turn.outcome.question = cmd.question
    return Success("Asked the user; the answer comes in the next message under Answers")


def done(cmd: Done, turn: Turn) -> Success:
    # A session must not end on results the LLM has not seen yet: DONE comes last, after
    # commands that all worked.
    if turn.remaining:
        raise CommandFailed(
            f"Not accepted: {plural(turn.remaining, 'command')} came after [DONE]; "
            "send [DONE] alone, as the last command, once the work is finished",
        )
    failed = sum(not r.success for r in turn.outcome.results)
    if failed:
        raise CommandFailed(
            f"Not accepted: {failed} command(s) above failed; fix them, then send [DONE] again",
        )
    check = turn.check(turn.outcome) if turn.check is not None else None
    if check is not None and not check.success:  # the user's check command
        raise CommandFailed(
            f"Not accepted: the check fails ({check.summary}; its output is under Check "
            "below); fix what it reports, then send [DONE] again",
        )
    turn.outcome.done = cmd.summary
    return Success("Task marked complete")


def parse_error(cmd: ParseError) -> NoReturn:
    raise CommandFailed(f"reply line {cmd.line}: {cmd.message}")
