"""A reply starts at its Session line (docs/protocol.md, "4.7 Drafts before the Session
line"). Pure: lines in, the line the answer starts at out.

Models that think in plain text, or in a dress :mod:`.reasoning` does not know (Cohere's
``<|START_THINKING|>``, "Here is my thought process: ... Here is my response:"), write drafts
of their commands before their answer, and the answer starts, as the PROTOCOL asks, with the
line ``Session: <id> Sequence: <n>``. So when a reply has such a line, what stands before it is
a draft and never runs; a reply without one (the relay and endpoints bind replies themselves,
and a model may leave the line out) is read whole, as before.

Which line, when a reply has several: a *Session line* is a line outside every command's body
(a file may hold the words) where ``Session: <8 hex digits>`` stands, in a code block or not
(a whole reply is often one code block), whichever session it names (admission judges the
name; a draft is no more an answer for naming another). The answer starts at the last Session
line that a command follows, so a draft that wrote a Session line of its own is still a draft,
and a line repeated after the commands ("Session: ... done") cuts nothing; when no command
follows any, at the last Session line (then nothing runs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from codingagent.protocol.parser import TAGS, Span, parse_spans

ECHO_SESSION = re.compile(r"\bSession(?: ID)?[*_]*:[*_`\s]*([0-9a-fA-F]{8})\b")
_TAG = "|".join(sorted(TAGS, key=len, reverse=True))
_COMMAND_LIKE = re.compile(rf"\[/?(?:{_TAG})\b", re.IGNORECASE)  # a line that may open a command


class Start(NamedTuple):
    """Where a reply's answer starts: the index of its Session line (None: it has none) and
    the commands written before it (spans of the lines it was read from)."""

    line: int | None
    drafted: tuple[Span, ...] = ()


def answer_start(lines: Sequence[str], spans: Sequence[Span] | None = None) -> Start:
    """Where the answer of a reply (its ``lines``, thinking already left out) starts, and the
    commands before it; ``spans``: the reply's commands as :func:`.parser.parse_spans` reads
    them (parsed here when needed and not given)."""
    found = [index for index, line in enumerate(lines) if ECHO_SESSION.search(line)]
    if not found:
        return Start(None)
    if spans is None:
        if len(found) == 1 and not any(_COMMAND_LIKE.search(line) for line in lines[: found[0]]):
            return Start(found[0])  # the usual reply: no command can stand before its line
        spans = parse_spans(list(lines))
    inside = {index for span in spans for index in range(span.start + 1, span.end)}
    candidates = [index for index in found if index not in inside]
    if not candidates:
        return Start(None)
    followed = [index for index in candidates if any(span.start > index for span in spans)]
    start = (followed or candidates)[-1]
    return Start(start, tuple(span for span in spans if span.start < start))


def draft_note(start: Start) -> str | None:
    """The note for the model when commands stood before its reply's Session line."""
    if start.line is None or not start.drafted:
        return None
    count = len(start.drafted)
    named = ", ".join(f"{span.command.name} (line {span.start + 1})" for span in start.drafted)
    return (
        f"{count} command{'s' if count > 1 else ''} before your reply's Session line (reply "
        f"line {start.line + 1}) {'were' if count > 1 else 'was'} not run: {named}. What comes "
        "before the Session line is read as a draft; start your reply with the Session line "
        "and put every command you mean after it"
    )
