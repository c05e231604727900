"""What a reply says besides its commands: the prompt it echoes, whether it holds a command
line at all, a diff written outside PATCH, and the slips that would otherwise vanish.

A *slip* is a line that holds a tag yet is no command (docs/admission.md): a second tag on the
line of a command without a body, a tag given inside a line of prose (with attributes, or
ending the line: a tag merely mentioned mid-sentence is prose), a tag-looking line of no
known command, a closing tag that closes nothing. Each becomes a note naming the reply line
and what to write instead, so nothing that looks like a command is dropped in silence. Lines
inside a command's body are its content and are never slips.
"""

from __future__ import annotations

import re
from contextlib import suppress
from typing import NamedTuple

from codingagent.protocol.bodies import clip, fence
from codingagent.protocol.codeblocks import refuse_unfenced
from codingagent.protocol.commands import Command, ParseError
from codingagent.protocol.drafts import ECHO_SESSION, Start, answer_start, draft_note
from codingagent.protocol.parser import (
    TAGS,
    Span,
    TagError,
    closing_name,
    opening_tag,
    parse_spans,
    read_spans,
    scan_attributes,
    split_lines,
    tag_text,
)
from codingagent.protocol.reasoning import split_reasoning

_ECHO_SEQUENCE = re.compile(r"\bSequence[*_]*:[*_`\s]*([0-9]{1,9})\b")
_ECHO_CHARS = 20_000  # how far from the Session line on the session/sequence echo is looked for
_DIFF_INFO = frozenset({"diff", "patch", "udiff"})
# A known tag written as the PROTOCOL writes it (upper case), anywhere in a line.
_KNOWN_TAG = re.compile(r"\[/?(" + "|".join(sorted(TAGS, key=len, reverse=True)) + r")(?=[\s\]/])")
# A line that starts like a tag of a command the PROTOCOL does not have: ``[WRITE_FILE ...]``.
_TAG_LIKE = re.compile(r"\[([A-Z][A-Z_]{2,})(?:\]|\s+[a-z_]+\s*=)")
_WHOLE_TAG = re.compile(r"\[/?[A-Z_]+(?:\s[^\]]*)?\]")
_TRAILING = " \t*_`.!"
MAX_SLIPS = 10  # slips noted one by one; the rest are counted in one more note
COMMANDS = ", ".join(TAGS)


class Slip(NamedTuple):
    """A line of the reply that holds a tag and was not taken as a command: its 1-based
    number and the note the LLM sees."""

    line: int
    note: str


class Scanned(NamedTuple):
    """A reply's commands, its slips and how many opening tags were left unread (over the
    limit :func:`read_commands` was given)."""

    commands: list[Command]
    slips: list[Slip]
    unread: int = 0


def commands_and_slips(text: str, rendered: bool = False) -> tuple[list[Command], list[Slip]]:
    """The reply's commands (as :func:`~codingagent.protocol.parser.parse` reads them) and
    its slips, at most ``MAX_SLIPS`` of them (then one more note counts the rest). A reply
    with a Session line starts there (:mod:`codingagent.protocol.drafts`): the commands before
    it are a draft, not run, and the first slip says so.

    ``rendered``: the text was read from a chat's rendered page, so a command that changes
    the workspace or runs something is refused unless it stood inside a code block
    (:mod:`codingagent.protocol.codeblocks`)."""
    scanned = read_commands(text, rendered)
    return scanned.commands, scanned.slips


def read_commands(text: str, rendered: bool = False, limit: int | None = None) -> Scanned:
    """:func:`commands_and_slips`, reading at most ``limit`` commands: the lines after the
    last one read are not looked at for slips, and the opening tags among them are counted."""
    lines = split_lines(text)
    spans, unread = read_spans(lines, limit)
    return scanned(lines, spans, unread, answer_start(lines, spans), rendered)


def scanned(
    lines: list[str], spans: list[Span], unread: int, start: Start, rendered: bool = False
) -> Scanned:
    """:func:`read_commands` of a reply's ``lines`` already read: its ``spans`` (``unread``
    opening tags after them) and where its answer starts."""
    end = spans[-1].end if unread else len(lines)  # (a flood's unread lines: no slips)
    if start.drafted:
        spans = spans[len(start.drafted) :]
    found = slips(lines, spans, start.line or 0, end)
    if len(found) > MAX_SLIPS:
        rest = len(found) - MAX_SLIPS
        found = [
            *found[:MAX_SLIPS],
            Slip(found[MAX_SLIPS].line, f"and {rest} more lines like these were not run either"),
        ]
    drafted = draft_note(start)
    if drafted is not None and start.line is not None:
        found.insert(0, Slip(start.line + 1, drafted))
    commands = refuse_unfenced(lines, spans) if rendered else [span.command for span in spans]
    return Scanned(commands, found, unread)


def slips(
    lines: list[str], spans: list[Span], first: int = 0, end: int | None = None
) -> list[Slip]:
    """Every line from ``first`` on (up to the line index ``end``, by default all) that holds a
    tag outside a command's body and was not run, in line order."""
    found: list[Slip] = []
    outside = first  # the first line not yet looked at
    for span in spans:
        found += _prose_slips(lines, outside, span.start)
        if not isinstance(span.command, ParseError) and TAGS[span.command.kind].body is None:
            found += _second_tag(lines[span.start], span.start + 1)
        outside = span.end
    return found + _prose_slips(lines, outside, len(lines) if end is None else end)


def _prose_slips(lines: list[str], start: int, end: int) -> list[Slip]:
    """The slips among ``lines[start:end]``, lines outside every command."""
    found = []
    for index in range(start, end):
        line = lines[index]
        if "[" not in line:
            continue
        slip = _prose_slip(line, index + 1)
        if slip is not None:
            found.append(slip)
    return found


def _prose_slip(line: str, number: int) -> Slip | None:
    text = tag_text(line)
    name = closing_name(text)
    if name is not None:
        return Slip(
            number,
            f"reply line {number}: [/{name}] closes no open command, so it was ignored; the "
            f"command it should close must start with its own tag at the start of a line",
        )
    like = _TAG_LIKE.match(text)
    if like is not None and like.group(1) not in TAGS:
        return Slip(
            number,
            f"reply line {number}: [{like.group(1)}] is not a command, so the line was "
            f"ignored; the commands are {COMMANDS}",
        )
    tag = _issued_tag(line)
    if tag is None:
        return None
    return Slip(
        number,
        f"reply line {number}: {tag} stands inside a line of prose "
        f"('{clip(line.strip())}'), so it was not taken as a command; to run it, write the tag "
        "at the start of a line of its own",
    )


def _issued_tag(line: str) -> str | None:
    """A tag in a line of prose that reads as a command given, not one mentioned: with
    attributes (``see [READ_FILE path="a.py"]``), or ending the line (``All done. [DONE]``)."""
    for tag in _KNOWN_TAG.finditer(line):
        whole = _WHOLE_TAG.match(line, tag.start())
        if whole is None:
            continue
        after = line[whole.end() :].strip(_TRAILING)
        if "=" in whole.group() or not after or after.upper().startswith("[/"):
            return whole.group()
    return None


def _second_tag(line: str, number: int) -> list[Slip]:
    """A note if the opening line of a command without a body holds another tag after it."""
    opening = opening_tag(tag_text(line), number)
    if opening is None:
        return []
    with suppress(TagError):
        rest = scan_attributes(opening.text, opening.attributes_start)[1]
        tag = _KNOWN_TAG.search(rest)
        if tag is not None:
            return [
                Slip(
                    number,
                    f"reply line {number}: a second tag follows [{opening.name} ...] on the "
                    f"same line ('{clip(rest[tag.start() :].strip())}'), so it was not run; "
                    "put each command at the start of a line of its own",
                )
            ]
    return []


def reply_echo(text: str) -> tuple[str | None, int | None]:
    """The session id and sequence number the reply says it answers (``Session: <id>
    Sequence: <n>``, as the PROTOCOL asks), each None if not given.

    Read from the reply's Session line (:mod:`codingagent.protocol.drafts`: the line its
    answer starts at) on, else from its start, up to its first command: a file body may well
    contain such words; and never from a reasoning model's thinking
    (:mod:`codingagent.protocol.reasoning`) or a draft: a draft may name any prompt.
    """
    lines = split_lines(split_reasoning(text).answer)
    return echo_of(lines, answer_start(lines).line)


def echo_of(lines: list[str], start: int | None) -> tuple[str | None, int | None]:
    """:func:`reply_echo` of a reply's ``lines`` (its thinking left out), read from the line
    ``start`` (its Session line; None: from the first line)."""
    session = sequence = None
    read = 0
    for line in lines[start or 0 :]:
        read += len(line) + 1
        if read > _ECHO_CHARS or opening_tag(tag_text(line), 1) is not None:
            break
        if session is None and (found := ECHO_SESSION.search(line)):
            session = found.group(1).lower()
        if sequence is None and (found := _ECHO_SEQUENCE.search(line)):
            sequence = int(found.group(1))
    return session, sequence


def has_command_line(text: str) -> bool:
    """Whether ``text`` holds a command that reads without error and whose opening tag stands
    alone on its line (``[DONE]``, ``**[READ_FILE path="a"]**``): what a reply has, and prose
    or code that merely mentions a tag ("[DONE] ends a session.") does not."""
    lines = split_lines(text)
    for span in parse_spans(lines):
        if isinstance(span.command, ParseError):
            continue
        opening = opening_tag(tag_text(lines[span.start]), span.start + 1)
        if opening is None:
            continue
        with suppress(TagError):
            if not scan_attributes(opening.text, opening.attributes_start)[1].strip():
                return True
    return False


def unwrapped_diff(text: str) -> int | None:
    """The reply line of a diff written outside any PATCH (a ```` ```diff ```` fence or a
    ``*** Begin Patch`` line), if there is one: for a reply that has no commands."""
    for number, line in enumerate(split_lines(text), 1):
        found = fence(line)
        if (found is not None and found[1].lower() in _DIFF_INFO) or (
            line.strip() == "*** Begin Patch"
        ):
            return number
    return None
