"""A reply decoded once: its bytes, its text (UTF-8, a BOM kept, other encodings named), its
reasoning split off (:mod:`.reasoning`), whether it was read raw or from a rendered page, the
Session line its answer starts at (:mod:`.drafts`) and the echo that line gives. Pure.

:func:`decode` makes the one :class:`DecodedReply` a turn works with: admission reads its
echo and digest, review and the turn its commands (:meth:`DecodedReply.read`: parsed, capped at
``MAX_COMMANDS``, a diff pasted bare recognized), and nothing decodes or splits it again. The
problems with the reply itself become results the model sees first."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from codingagent.protocol.commands import Command, ParseError
from codingagent.protocol.drafts import Start, answer_start
from codingagent.protocol.parser import Span, read_spans, split_lines
from codingagent.protocol.reasoning import Reasoned, split_reasoning
from codingagent.protocol.scan import Scanned, echo_of, scanned, unwrapped_diff
from codingagent.state import CommandResult

REPLY_SIZE_CAP = 5 * 1024 * 1024
MAX_COMMANDS = 10_000  # commands of one reply that are run; a flood of them would stall the turn


@dataclass(frozen=True)
class DecodedReply:
    """One reply, decoded: ``text`` is "" when its bytes are over the cap (not read at all);
    ``problem`` says what is wrong with it (over the cap, empty, binary, not UTF-8); its
    commands are read only when ``parsed`` (not over the cap, not empty, not binary).
    ``rendered``: read from a chat's rendered page, where commands that change files or run
    outside a code block are refused (:mod:`.codeblocks`)."""

    data: bytes
    text: str
    problem: CommandResult | None = None
    parsed: bool = True
    rendered: bool = False
    over_cap: bool = False  # its bytes are over the cap: nothing of it was read

    @functools.cached_property
    def reasoned(self) -> Reasoned:
        """The text with a reasoning model's thinking told apart: never parsed, never run."""
        return split_reasoning(self.text)

    @functools.cached_property
    def _lines(self) -> list[str]:
        return split_lines(self.reasoned.answer)

    @functools.cached_property
    def _spans(self) -> tuple[list[Span], int]:
        return read_spans(self._lines, MAX_COMMANDS)

    @functools.cached_property
    def start(self) -> Start:
        """Where its answer starts: its Session line, and the commands drafted before it."""
        return answer_start(self._lines, self._spans[0])

    @property
    def echo(self) -> tuple[str | None, int | None]:
        """The session id and prompt it says it answers (``Session: <id> Sequence: <n>``),
        read from its Session line on (:func:`.scan.reply_echo`); each None if not given."""
        return echo_of(self._lines, self.start.line)

    @functools.cached_property
    def digest(self) -> str:
        """:func:`reply_digest` of its bytes: what admission knows an applied reply by."""
        return reply_digest(self.data)

    def read(self) -> tuple[list[Command], list[CommandResult]]:
        """The commands to run (at most ``MAX_COMMANDS``), and the problems with the reply
        itself, which the LLM sees first: then a note for each line that holds a tag but was
        not taken as a command (:mod:`.scan`). Read once (a held review reads it before the
        turn does); each call gets lists of its own."""
        commands, problems = self._read
        return list(commands), list(problems)

    @functools.cached_property
    def _read(self) -> tuple[list[Command], list[CommandResult]]:
        problems = [self.problem] if self.problem else []
        if not self.parsed:
            return [], problems
        if self.reasoned.unclosed is not None:
            problems.append(_problem(self.reasoned.unclosed))
        spans, unread = self._spans
        found: Scanned = scanned(self._lines, spans, unread, self.start, self.rendered)
        problems += [note_result(slip.note) for slip in found.slips]
        if found.unread:
            problems.append(
                _problem(
                    f"Your reply had more than {MAX_COMMANDS:,} commands ({found.unread:,} "
                    f"more command tags after them); only the first {MAX_COMMANDS:,} were run. "
                    "Send fewer commands a reply"
                )
            )
        if not found.commands and all(p.success for p in problems):
            problems += filter(None, [_unwrapped_diff(self.reasoned.answer)])
        return found.commands, problems


def decode(
    data: bytes, max_bytes: int = REPLY_SIZE_CAP, size: int | None = None, rendered: bool = False
) -> DecodedReply:
    """``data`` decoded once; ``size``: its real size when ``data`` holds only its first bytes
    (a file over ``max_bytes`` is read no further).

    Bad replies never stop the session: the problem becomes a result the LLM sees next turn.
    """
    if len(data) > max_bytes:
        return DecodedReply(
            data,
            "",
            _problem(
                f"Your reply was {size or len(data):,} bytes, over the {max_bytes:,}-byte limit; "
                "nothing in it was run. Send smaller replies."
            ),
            parsed=False,
            rendered=rendered,
            over_cap=True,
        )
    if not data.strip():
        empty = _problem("Your reply was empty; nothing was run")
        return DecodedReply(data, data.decode("utf-8", errors="replace"), empty, False, rendered)
    if b"\0" in data:
        binary = "Your reply contained NUL bytes (binary data); nothing in it was run"
        text = data.decode("utf-8", errors="replace")
        return DecodedReply(data, text, _problem(binary), False, rendered)
    try:
        return DecodedReply(data, data.decode("utf-8"), rendered=rendered)
    except UnicodeDecodeError as e:
        problem = _problem(
            f"Your reply was not valid UTF-8 (first bad byte at offset {e.start}); "
            "it was read with replacement characters"
        )
        return DecodedReply(
            data, data.decode("utf-8", errors="replace"), problem, rendered=rendered
        )


def read_reply(
    data: bytes, max_reply_bytes: int, size: int | None, rendered: bool = False
) -> tuple[list[Command], list[CommandResult]]:
    """The commands of the reply ``data`` and its problems: :meth:`DecodedReply.read` of
    :func:`decode`."""
    return decode(data, max_reply_bytes, size, rendered).read()


def reply_digest(data: bytes) -> str:
    """sha256 of the reply without BOM, line-ending differences, trailing spaces and tabs at
    line ends and final blank lines: a re-saved or re-pasted copy matches."""
    normal = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    normal = _TRAILING_BLANKS.sub(b"\n", normal).rstrip(b" \t\n")
    return hashlib.sha256(normal).hexdigest()


_TRAILING_BLANKS = re.compile(rb"[ \t]+\n")


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
