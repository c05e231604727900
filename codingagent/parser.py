"""Reply text -> commands: the tag grammar of protocol 1.0 plus the tolerances chat UIs need.

``parse`` is pure and total (it never raises on a ``str``) and runs in time linear in the length
of the reply: every line is looked at once, attributes are read by a hand-written loop over
anchored regexes whose adjacent parts cannot overlap, so nothing can backtrack.

Everything the parser knows about a command lives in one row of ``_TAGS``; adding a command is
one new row plus its model in ``commands.py``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from codingagent.commands import (
    Command,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    RunCommand,
)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_TAG_NAME = re.compile(r"\[([A-Za-z_]+)")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_UNQUOTED_VALUE = re.compile(r"[^\s\]]+")
_SPACES = re.compile(r"\s*")
_WHOLE_NUMBER = re.compile(r"[ \t]*[+-]?[0-9]+[ \t]*")
_BOM = "\ufeff"
_CLIP = 60
_UNCLOSED = "no closing [/{name}] tag; this command and the rest of the reply were ignored"


def _file_body(lines: list[str]) -> str:
    """File content is verbatim: every line keeps its indentation and gets its newline back."""
    return "".join(f"{line}\n" for line in lines)


def _command_body(lines: list[str]) -> str:
    """A shell command loses only the blank lines around it; inner lines stay as written."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def _text_body(lines: list[str]) -> str:
    """Messages and summaries are prose: surrounding whitespace carries no meaning."""
    return "\n".join(lines).strip()


class _Body(NamedTuple):
    """How a body command turns its body lines into one model field."""

    field: str
    render: Callable[[list[str]], str]
    closing_optional: bool = False


@dataclass(frozen=True)
class _TagSpec:
    """One row of the tag table: everything the parser needs to know about one command."""

    model: Callable[..., Command]
    required: tuple[str, ...] = ()
    integers: frozenset[str] = frozenset()
    body: _Body | None = None


_TAGS: dict[str, _TagSpec] = {
    "CREATE_FILE": _TagSpec(CreateFile, ("path",), body=_Body("content", _file_body)),
    "EDIT_FILE": _TagSpec(
        EditFile,
        ("path", "start_line", "end_line"),
        integers=frozenset({"start_line", "end_line"}),
        body=_Body("content", _file_body),
    ),
    "DELETE_FILE": _TagSpec(DeleteFile, ("path",)),
    "READ_FILE": _TagSpec(ReadFile, ("path",)),
    "RUN_COMMAND": _TagSpec(RunCommand, body=_Body("command", _command_body)),
    "MESSAGE": _TagSpec(Message, body=_Body("text", _text_body)),
    # LLMs often end a reply with a bare [DONE]; the rest of the reply is then the summary.
    "DONE": _TagSpec(Done, body=_Body("summary", _text_body, closing_optional=True)),
}


class _TagError(Exception):
    """An opening tag that cannot be read; it becomes a ParseError in the command's place."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class _Opening:
    """A line that opens a known command: its canonical name and where the attributes start."""

    name: str
    text: str
    attributes_start: int
    line: int


def parse(text: str) -> list[Command]:
    """Return the commands of an LLM reply, in order; prose and unknown tags are skipped.

    A command that cannot be read becomes a ``ParseError`` in its place. An unclosed body
    command ends the parse: the rest of the reply may have been meant as its body, and
    running it as commands would be worse than asking the LLM again.
    """
    reply = _Reply(_LINE_BREAK.split(text.removeprefix(_BOM)))
    commands: list[Command] = []
    index = 0
    while index < len(reply.lines):
        opening = reply.openings.get(index)
        index += 1
        if opening is not None:
            command, index = _read_command(opening, reply, index)
            commands.append(command)
    return commands


class _Reply:
    """The reply's lines, with every opening and closing tag found in one pass up front.

    Looking the next closing tag up (bisect) instead of scanning for it keeps the parse linear
    even for a reply of 100,000 unclosed tags.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.openings: dict[int, _Opening] = {}
        self.closings: dict[str, list[int]] = {name: [] for name in _TAGS}
        for index, line in enumerate(lines):
            opening = _opening_tag(line, index + 1)
            if opening is not None:
                self.openings[index] = opening
            name = _closing_name(line.strip())
            if name is not None:
                self.closings[name].append(index)
        self.opening_lines = sorted(self.openings)

    def next_closing(self, name: str, start: int) -> int | None:
        """Index of the first ``[/NAME]`` line at or after ``start``."""
        found = self.closings[name]
        at = bisect_left(found, start)
        return found[at] if at < len(found) else None

    def next_opening(self, start: int) -> int:
        """Index of the first line at or after ``start`` that opens a command (or the end)."""
        at = bisect_left(self.opening_lines, start)
        return self.opening_lines[at] if at < len(self.opening_lines) else len(self.lines)


def _closing_name(text: str) -> str | None:
    """``NAME`` if ``text`` is exactly a closing tag ``[/NAME]`` of a known command."""
    if not (text.startswith("[/") and text.endswith("]") and text.isascii()):
        return None
    name = text[2:-1].upper()
    return name if name in _TAGS else None


def _opening_tag(line: str, line_number: int) -> _Opening | None:
    """The opening tag on ``line``, if the trimmed line starts with ``[`` and a known name."""
    text = line.strip()
    match = _TAG_NAME.match(text)
    if match is None:
        return None
    name = match.group(1).upper()
    end = match.end()
    if name not in _TAGS or (end < len(text) and not _ends_name(text[end])):
        return None
    return _Opening(name, text, end, line_number)


def _ends_name(char: str) -> bool:
    return char.isspace() or char in "/]"


def _read_command(opening: _Opening, reply: _Reply, index: int) -> tuple[Command, int]:
    """Read the command ``opening`` starts; ``index`` is the line after the tag.

    Returns the command (or its ParseError) and the index of the first line after it.
    """
    spec = _TAGS[opening.name]
    rest: str | None
    try:
        attributes, rest = _scan_attributes(opening.text, opening.attributes_start)
        fields = _fields(spec, attributes)
        error = None
    except _TagError as exc:
        rest, fields, error = None, {}, exc.message
    if spec.body is not None:
        body, index, closed = _read_body(opening, rest, reply, index, spec.body.closing_optional)
        if not closed and not spec.body.closing_optional:
            return _error(opening, _UNCLOSED.format(name=opening.name)), index
        fields[spec.body.field] = spec.body.render(body)
    if error is not None:
        return _error(opening, error), index
    return spec.model(line=opening.line, **fields), index


def _error(opening: _Opening, message: str) -> ParseError:
    return ParseError(line=opening.line, command=opening.name, message=message)


def _scan_attributes(tag: str, pos: int) -> tuple[dict[str, str], str]:
    """Read ``key=value`` pairs up to the tag's ``]`` (an optional ``/`` may precede it).

    Returns the attributes (lower-case names) and the text after the ``]``.
    """
    attributes: dict[str, str] = {}
    while True:
        pos = _skip_spaces(tag, pos)
        if pos == len(tag):
            raise _TagError(f"malformed attributes: {_clip(tag)}")
        if tag[pos] == "]":
            return attributes, tag[pos + 1 :]
        if tag[pos] == "/":
            after = _skip_spaces(tag, pos + 1)
            if after < len(tag) and tag[after] == "]":
                return attributes, tag[after + 1 :]
            raise _malformed(tag, pos)
        key, value, pos = _scan_attribute(tag, pos)
        if key in attributes:
            raise _TagError(f"attribute '{key}' is given twice")
        attributes[key] = value


def _scan_attribute(tag: str, start: int) -> tuple[str, str, int]:
    """Read one ``key=value`` (value double-, single- or un-quoted) starting at ``start``."""
    name = _ATTRIBUTE_NAME.match(tag, start)
    if name is None:
        raise _malformed(tag, start)
    pos = _skip_spaces(tag, name.end())
    if pos == len(tag) or tag[pos] != "=":
        raise _malformed(tag, start)
    pos = _skip_spaces(tag, pos + 1)
    if pos < len(tag) and tag[pos] in "\"'":
        close = tag.find(tag[pos], pos + 1)
        if close < 0:
            raise _malformed(tag, start)
        return name.group().lower(), tag[pos + 1 : close], close + 1
    value = _UNQUOTED_VALUE.match(tag, pos)
    if value is None:
        raise _malformed(tag, start)
    end = value.end()
    if end - pos > 1 and tag[end - 1] == "/" and tag.startswith("]", end):
        end -= 1  # `path=a.txt/]`: the slash closes the tag, it is not part of the value
    return name.group().lower(), tag[pos:end], end


def _skip_spaces(text: str, pos: int) -> int:
    return _SPACES.match(text, pos).end()  # type: ignore[union-attr]  # \s* always matches


def _malformed(tag: str, start: int) -> _TagError:
    """The error for unreadable text at ``start``, quoting it up to the tag's likely end."""
    end = tag.find("]", start)
    return _TagError(f"malformed attributes: {_clip(tag[start : end if end >= 0 else None])}")


def _clip(text: str) -> str:
    """Quote at most ``_CLIP`` characters of the LLM's text back to it."""
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def _fields(spec: _TagSpec, attributes: dict[str, str]) -> dict[str, object]:
    """The model fields from the attributes: required ones present, integers converted."""
    fields: dict[str, object] = {}
    for key in spec.required:
        if key not in attributes:
            raise _TagError(f"missing required attribute '{key}'")
        value = attributes[key]
        fields[key] = _whole_number(key, value) if key in spec.integers else value
    return fields


def _whole_number(key: str, value: str) -> int:
    error = _TagError(f"attribute '{key}' must be a whole number, got '{_clip(value)}'")
    if _WHOLE_NUMBER.fullmatch(value) is None:
        raise error
    try:
        return int(value)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        raise error from None


def _read_body(
    opening: _Opening, rest: str | None, reply: _Reply, index: int, closing_optional: bool
) -> tuple[list[str], int, bool]:
    """Collect the body of a body command up to its closing tag.

    ``rest`` is the text after the tag's ``]``, or None if the tag could not be read (then
    only a closing tag at the end of the tag's own line makes it a single-line command).
    Returns the body lines, the index after the command and whether a closing tag was found.
    Without one, a command whose closing tag is optional (DONE) ends where the next command
    begins; any other runs to the end of the reply.
    """
    closing = f"[/{opening.name}]"
    if rest is None:
        if _ends_with_tag(opening.text, closing):
            return [], index, True
        first: list[str] = []
    else:
        rest = rest.strip()
        if _ends_with_tag(rest, closing):
            inline = rest[: -len(closing)].strip()
            return ([inline] if inline else []), index, True
        first = [rest] if rest else []
    end = reply.next_closing(opening.name, index)
    if end is not None:
        return first + reply.lines[index:end], end + 1, True
    if closing_optional:
        end = reply.next_opening(index)
        return first + reply.lines[index:end], end, False
    return first + reply.lines[index:], len(reply.lines), False


def _ends_with_tag(text: str, tag: str) -> bool:
    return len(text) >= len(tag) and _is_tag(text[len(text) - len(tag) :], tag)


def _is_tag(text: str, tag: str) -> bool:
    """ASCII-only case-insensitive match, so e.g. a dotless ``ı`` never passes for ``I``."""
    return len(text) == len(tag) and text.isascii() and text.upper() == tag
