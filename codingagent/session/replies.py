"""Reading a reply's bytes into commands: decoded (UTF-8, BOM, other encodings named),
parsed, capped at ``MAX_COMMANDS``, with a diff pasted bare recognized; the problems with the
reply itself become results the model sees."""

from __future__ import annotations

from collections.abc import Iterable

from codingagent.protocol.commands import Command, ParseError
from codingagent.protocol.reasoning import split_reasoning
from codingagent.protocol.scan import read_commands, unwrapped_diff
from codingagent.state import CommandResult

REPLY_SIZE_CAP = 5 * 1024 * 1024


MAX_COMMANDS = 10_000  # commands of one reply that are run; a flood of them would stall the turn


def read_reply(
    data: bytes, max_reply_bytes: int, size: int | None, rendered: bool = False
) -> tuple[list[Command], list[CommandResult]]:
    """The commands to run (at most ``MAX_COMMANDS``), and the problems with the reply
    itself, which the LLM sees first: then a note for each line that holds a tag but was not
    taken as a command (:mod:`codingagent.protocol.scan`). A leading thinking block is not
    parsed (:mod:`codingagent.protocol.reasoning`). ``rendered``: the reply was read from a
    chat's rendered page; its commands that change files or run outside a code block are
    refused (:mod:`codingagent.protocol.codeblocks`)."""
    text, problem = decode_reply(data, max_reply_bytes, size)
    problems = [problem] if problem else []
    if text is not None:  # a reasoning model's thinking is never parsed
        reasoned = split_reasoning(text)
        text = reasoned.answer
        if reasoned.unclosed is not None:
            problems.append(_problem(reasoned.unclosed))
    scanned = read_commands(text or "", rendered, MAX_COMMANDS)
    commands = scanned.commands
    problems += [note_result(slip.note) for slip in scanned.slips]
    if scanned.unread:
        problems.append(
            _problem(
                f"Your reply had more than {MAX_COMMANDS:,} commands ({scanned.unread:,} more "
                f"command tags after them); only the first {MAX_COMMANDS:,} were run. Send "
                "fewer commands a reply"
            )
        )
    if not commands and text is not None and all(p.success for p in problems):
        problems += filter(None, [_unwrapped_diff(text)])
    return commands, problems


def decode_reply(
    data: bytes, max_bytes: int = REPLY_SIZE_CAP, size: int | None = None
) -> tuple[str | None, CommandResult | None]:
    """The reply's text, or ``None`` when it must not be parsed, and the problem, if any.

    Bad replies never stop the session: the problem becomes a result the LLM sees next turn.
    """

    if len(data) > max_bytes:
        return None, _problem(
            f"Your reply was {size or len(data):,} bytes, over the {max_bytes:,}-byte limit; "
            "nothing in it was run. Send smaller replies."
        )
    if not data.strip():
        return None, _problem("Your reply was empty; nothing was run")
    if b"\0" in data:
        return None, _problem("Your reply contained NUL bytes (binary data); nothing in it was run")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return data.decode("utf-8", errors="replace"), _problem(
            f"Your reply was not valid UTF-8 (first bad byte at offset {e.start}); "
            "it was read with replacement characters"
        )


def _problem(summary: str) -> CommandResult:
    """A problem with the reply itself, as the result the LLM sees first."""
    return CommandResult(command="REPLY", success=False, summary=summary)


def note_result(summary: str) -> CommandResult:
    """A note about the reply that did not stop anything in it, as the LLM sees it first."""
    return CommandResult(command="NOTE", success=True, summary=summary)


def _unwrapped_diff(text: str) -> CommandResult | None:
    """A result telling the LLM to wrap its diff in PATCH, if its reply has a diff and no
    commands (models write ```diff blocks on their own)."""
    line = unwrapped_diff(text)
    if line is None:
        return None
    return _problem(
        f"Your reply has a diff (reply line {line}) but no commands, so nothing was applied; "
        "to apply a diff, put it between a [PATCH] line and a [/PATCH] line"
    )


def unreadable(commands: Iterable[object]) -> bool:
    """Whether a reply had a command the parser could not read, or no command at all."""
    commands = list(commands)
    return not commands or any(isinstance(c, ParseError) for c in commands)
