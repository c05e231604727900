"""Reply text -> commands: the tag grammar of protocol 1.1 and the tolerances chat UIs need.

``parse`` is pure and total (it never raises on a ``str``) and runs in time linear in the length
of the reply: every line is looked at once, attributes are read by a hand-written loop over
anchored regexes whose adjacent parts cannot overlap, so nothing can backtrack.

Everything the parser knows about a command lives in one row of ``TAGS``; adding a command is
one new row plus its model in ``commands.py``.

Tolerances (docs/protocol.md §4.3): tags in any letter case, with single, double, curly or no
quotes, spaces around ``=``; CRLF/CR line endings and a BOM; fence lines and prose around
commands (they are just prose); tags wrapped in markdown emphasis or inline code
(``**[DONE]**``) or escaped by a markdown renderer (``\\[CREATE\\_FILE path="a"\\]``). What
a body holds is read by :mod:`codingagent.protocol.bodies` (a code fence wrapping a file body,
SEARCH/REPLACE blocks).
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import NamedTuple

from codingagent.protocol.bodies import (
    BodyError,
    clip,
    command_body,
    file_body,
    patch_body,
    replace_body,
    text_body,
)
from codingagent.protocol.commands import (
    Ask,
    Command,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    Patch,
    ReadFile,
    Replace,
    RunCommand,
    Search,
)

_TAG_NAME = re.compile(r"\[([A-Za-z_]+)")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_UNQUOTED_VALUE = re.compile(r"[^\s\]]+")
_SPACES = re.compile(r"\s*")
_WHOLE_NUMBER = re.compile(r"[ \t]*[+-]?[0-9]+[ \t]*")
_MARKDOWN_ESCAPE = re.compile(r"\\([\[\]_*`])")
_BOM = "\ufeff"
_EMPHASIS = "*_`"
_TAG_STARTS = frozenset("[\\" + _EMPHASIS)  # what a line holding a tag may start with
# Opening quote -> the characters that close it. Chat UIs turn straight quotes into curly ones.
_QUOTES = {
    '"': '"',
    "'": "'",
    "\u201c": '\u201d\u201c"',  # “ ... ”
    "\u201d": '\u201d\u201c"',  # ” ... ”
    "\u201e": '\u201d\u201c"',  # „ ... “
    "\u2018": "\u2019\u2018",  # ‘ ... ’
    "\u2019": "\u2019\u2018",  # ’ ... ’
    "\u201a": "\u2019\u2018",  # ‚ ... ‘
}
_CLOSING_QUOTE = {opening: re.compile(f"[{closers}]") for opening, closers in _QUOTES.items()}
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})
_UNCLOSED = "no closing [/{name}] tag; this command and the rest of the reply were ignored"
# No command takes more than a few attributes, and a model's own (why="...") are a few more: a
# tag with more is not read on (a 10 MB tag of attributes would cost seconds, all to be refused).
MAX_ATTRIBUTES = 64


class TagError(Exception):
    """An opening tag that cannot be read; it becomes a ParseError in the command's place."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class _Body:
    """How a body command turns its body lines (and the reply line of the first one) into
    model fields; it may raise BodyError."""

    render: Callable[[list[str], int], dict[str, object]]
    closing_optional: bool = False


@dataclass(frozen=True)
class _TagSpec:
    """One row of the tag table: everything the parser needs to know about one command."""

    model: Callable[..., Command]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    integers: frozenset[str] = frozenset()
    booleans: frozenset[str] = frozenset()
    body: _Body | None = None


_LINES = frozenset({"start_line", "end_line"})

# The command table, by tag name: what the parser reads, and what the PROTOCOL text must teach.
TAGS: dict[str, _TagSpec] = {
    "CREATE_FILE": _TagSpec(CreateFile, ("path",), body=_Body(file_body)),
    "EDIT_FILE": _TagSpec(
        EditFile, ("path", "start_line", "end_line"), integers=_LINES, body=_Body(file_body)
    ),
    "REPLACE": _TagSpec(Replace, ("path",), body=_Body(replace_body)),
    "PATCH": _TagSpec(Patch, body=_Body(patch_body)),
    "DELETE_FILE": _TagSpec(DeleteFile, ("path",)),
    "READ_FILE": _TagSpec(
        ReadFile,
        ("path",),
        ("start_line", "end_line", "symbol", "map"),
        integers=_LINES,
        booleans=frozenset({"map"}),
    ),
    "SEARCH": _TagSpec(
        Search,
        ("query",),
        ("glob", "regex", "case_sensitive", "context"),
        integers=frozenset({"context"}),
        booleans=frozenset({"regex", "case_sensitive"}),
    ),
    "RUN_COMMAND": _TagSpec(RunCommand, body=_Body(command_body)),
    "MESSAGE": _TagSpec(Message, body=_Body(text_body("text"))),
    "ASK": _TagSpec(Ask, body=_Body(text_body("question"))),
    # LLMs often end a reply with a bare [DONE]; the rest of the reply is then the summary.
    "DONE": _TagSpec(Done, body=_Body(text_body("summary"), closing_optional=True)),
}


class Opening(NamedTuple):
    """A line that opens a known command: its canonical name and where the attributes start.

    A tuple, not a dataclass: a reply may hold a million of them, and tuples are built in C.
    """

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
    return [span.command for span in parse_spans(split_lines(text))]


class Span(NamedTuple):
    """A command and the reply lines it took: indexes ``start`` (its opening tag) to ``end``
    (excluded)."""

    command: Command
    start: int
    end: int


def split_lines(text: str) -> list[str]:
    """The reply's lines (any line ending: CRLF, CR or LF; a BOM dropped)."""
    text = text.removeprefix(_BOM)
    if "\r" in text:  # str.split is several times faster than a regex split
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def parse_spans(lines: list[str]) -> list[Span]:
    """:func:`parse` on the reply's lines, with the lines each command took."""
    return read_spans(lines)[0]


def read_spans(lines: list[str], limit: int | None = None) -> tuple[list[Span], int]:
    """:func:`parse_spans`, reading at most ``limit`` commands; and how many opening tags
    stand after the last command read (0 unless the limit stopped the read). A flood of a
    million commands then costs one look at each line, not a million commands made."""
    with _no_cyclic_gc():
        reply = _Reply(lines)
        spans: list[Span] = []
        index = reply.next_opening(0)
        while index < len(reply.lines):
            if len(spans) == limit:
                unread = len(reply.opening_lines) - bisect_left(reply.opening_lines, index)
                return spans, unread
            command, end = _read_command(reply.openings[index], reply, index + 1)
            spans.append(Span(command, index, end))
            index = reply.next_opening(end)
        return spans, 0


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Keep the cyclic garbage collector off while a reply is parsed.

    A big reply makes millions of small objects, yet every 700 allocations the collector
    would walk them, and its full passes over an ever larger heap made the parse of 10 MB take
    13x as long as that of 1 MB. None of them is in a reference cycle, so reference counting
    frees them all the same (keep it so, or garbage piles up until the parse ends). It is
    turned back on afterwards only if it was on before, so a caller that keeps it off (or a
    parse inside a parse) finds it as it left it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _Reply:
    """The reply's lines, with every opening and closing tag found in one pass up front.

    Looking the next closing tag up (bisect) instead of scanning for it keeps the parse linear
    even for a reply of 100,000 unclosed tags.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.openings: dict[int, Opening] = {}
        self.closings: dict[str, list[int]] = {name: [] for name in TAGS}
        for index in _tag_candidates(lines):
            text = tag_text(lines[index])
            if not text.startswith("["):
                continue  # neither an opening nor a closing tag
            opening = opening_tag(text, index + 1)
            if opening is not None:
                self.openings[index] = opening
            name = closing_name(text)
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


def _tag_candidates(lines: list[str]) -> list[int]:
    """The indexes of the lines that may hold a tag: their first character that is not
    white space is one a tag may start with (see :func:`tag_text`). One cheap test a line, so
    the lines of a long body cost next to nothing."""
    starts = _TAG_STARTS
    return [
        index
        for index, line in enumerate(lines)
        if (first := line[:1]) in starts or (first.isspace() and line.lstrip()[:1] in starts)
    ]


def tag_text(line: str) -> str:
    r"""The trimmed line, with what chat UIs put around a tag undone.

    ``**[DONE]**`` and `` `[READ_FILE path="a"]` `` lose the emphasis or inline-code marks
    (at most three, and only when a ``[`` follows them); ``\[CREATE\_FILE path="a"\]``, as
    some UIs escape markdown, loses its backslashes. Other lines come back just trimmed.
    """
    text = line.strip()
    if not text or text[0] not in "*_`\\":
        return text
    marks = len(text) - len(text.lstrip(_EMPHASIS))
    if 0 < marks <= 3 and text.startswith(("[", "\\["), marks):
        lead = text[:marks]
        text = text[marks:].removesuffix(lead[::-1]).rstrip()
    if text.startswith("\\["):
        text = _MARKDOWN_ESCAPE.sub(r"\1", text)
    return text


def closing_name(text: str) -> str | None:
    """``NAME`` if ``text`` is exactly a closing tag ``[/NAME]`` of a known command."""
    if not (text.startswith("[/") and text.endswith("]") and text.isascii()):
        return None
    name = text[2:-1].upper()
    return name if name in TAGS else None


def opening_tag(text: str, line_number: int) -> Opening | None:
    """The opening tag ``text`` (a line as :func:`tag_text` left it) starts, if it starts with
    ``[`` and a known name."""
    match = _TAG_NAME.match(text)
    if match is None:
        return None
    name = match.group(1).upper()
    end = match.end()
    if name not in TAGS or (end < len(text) and not _ends_name(text[end])):
        return None
    return Opening(name, text, end, line_number)


def _ends_name(char: str) -> bool:
    return char.isspace() or char in "/]"


def _read_command(opening: Opening, reply: _Reply, index: int) -> tuple[Command, int]:
    """Read the command ``opening`` starts; ``index`` is the line after the tag.

    Returns the command (or its ParseError) and the index of the first line after it.
    """
    spec = TAGS[opening.name]
    rest: str | None
    try:
        attributes, rest = scan_attributes(opening.text, opening.attributes_start)
        fields = _fields(spec, attributes)
        error = None
    except TagError as exc:
        rest, fields, error = None, {}, exc.message
    if spec.body is not None:
        body, first_line, index, closed = _read_body(
            opening, rest, reply, index, spec.body.closing_optional
        )
        if not closed and not spec.body.closing_optional:
            return _error(opening, _UNCLOSED.format(name=opening.name)), index
        if error is None:
            try:
                fields |= spec.body.render(body, first_line)
            except BodyError as exc:
                error = exc.message
    if error is not None:
        return _error(opening, error), index
    return spec.model(line=opening.line, **fields), index


def _error(opening: Opening, message: str) -> ParseError:
    return ParseError(line=opening.line, command=opening.name, message=message)


def scan_attributes(tag: str, pos: int) -> tuple[dict[str, str], str]:
    """Read ``key=value`` pairs up to the tag's ``]`` (an optional ``/`` may precede it).

    Returns the attributes (lower-case names) and the text after the ``]``.
    """
    attributes: dict[str, str] = {}
    while True:
        pos = _skip_spaces(tag, pos)
        if pos == len(tag):
            raise TagError(f"malformed attributes: {clip(tag)}")
        if tag[pos] == "]":
            return attributes, tag[pos + 1 :]
        if tag[pos] == "/":
            after = _skip_spaces(tag, pos + 1)
            if after < len(tag) and tag[after] == "]":
                return attributes, tag[after + 1 :]
            raise _malformed(tag, pos)
        if len(attributes) == MAX_ATTRIBUTES:
            raise TagError(f"more than {MAX_ATTRIBUTES} attributes; a command takes a few")
        key, value, pos = _scan_attribute(tag, pos)
        if key in attributes:
            raise TagError(f"attribute '{key}' is given twice")
        attributes[key] = value


def _scan_attribute(tag: str, start: int) -> tuple[str, str, int]:
    """Read one ``key=value`` (value quoted in any way _QUOTES knows, or unquoted)."""
    name = _ATTRIBUTE_NAME.match(tag, start)
    if name is None:
        raise _malformed(tag, start)
    pos = _skip_spaces(tag, name.end())
    if pos == len(tag) or tag[pos] != "=":
        raise _malformed(tag, start)
    pos = _skip_spaces(tag, pos + 1)
    closers = _CLOSING_QUOTE.get(tag[pos]) if pos < len(tag) else None
    if closers is not None:
        # The first closer of any kind, found in one pass: one find per kind would each run
        # to the end of the line when that kind is absent (quadratic on many attributes).
        found = closers.search(tag, pos + 1)
        if found is None:
            raise _malformed(tag, start)
        close = found.start()
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


def _malformed(tag: str, start: int) -> TagError:
    """The error for unreadable text at ``start``, quoting it up to the tag's likely end."""
    end = tag.find("]", start)
    return TagError(f"malformed attributes: {clip(tag[start : end if end >= 0 else None])}")


def _fields(spec: _TagSpec, attributes: dict[str, str]) -> dict[str, object]:
    """The model fields from the attributes: required ones present, values converted.

    Attributes the table does not know are ignored: LLMs add their own (``why="..."``).
    """
    fields: dict[str, object] = {}
    for key in spec.required:
        if key not in attributes:
            raise TagError(f"missing required attribute '{key}'")
    for key in (*spec.required, *spec.optional):
        if key in attributes:
            fields[key] = _convert(spec, key, attributes[key])
    return fields


def _convert(spec: _TagSpec, key: str, value: str) -> object:
    if key in spec.integers:
        return _whole_number(key, value)
    if key in spec.booleans:
        return _boolean(key, value)
    return value


def _whole_number(key: str, value: str) -> int:
    # No local holds the error: its traceback would hold this frame, a reference cycle, and
    # parse() keeps the cyclic collector off.
    if _WHOLE_NUMBER.fullmatch(value) is not None:
        with suppress(ValueError):  # more digits than int() converts (get_int_max_str_digits)
            return int(value)
    raise TagError(f"attribute '{key}' must be a whole number, got '{clip(value)}'")


def _boolean(key: str, value: str) -> bool:
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise TagError(f"attribute '{key}' must be true or false, got '{clip(value)}'")


def _read_body(
    opening: Opening, rest: str | None, reply: _Reply, index: int, closing_optional: bool
) -> tuple[list[str], int, int, bool]:
    """Collect the body of a body command up to its closing tag.

    ``rest`` is the text after the tag's ``]``, or None if the tag could not be read (then
    only a closing tag at the end of the tag's own line makes it a single-line command).
    Returns the body lines, the reply line number of the first of them, the index after the
    command and whether a closing tag was found. Without one, a command whose closing tag is
    optional (DONE) ends where the next command begins; any other runs to the end of the reply.
    """
    closing = f"[/{opening.name}]"
    if rest is None:
        if _ends_with_tag(opening.text, closing):
            return [], opening.line, index, True
        first: list[str] = []
    else:
        rest = rest.strip()
        if _ends_with_tag(rest, closing):
            inline = rest[: -len(closing)].strip()
            return ([inline] if inline else []), opening.line, index, True
        first = [rest] if rest else []
    first_line = opening.line if first else opening.line + 1
    end = reply.next_closing(opening.name, index)
    if end is not None:
        return first + reply.lines[index:end], first_line, end + 1, True
    if closing_optional:
        end = reply.next_opening(index)
        return first + reply.lines[index:end], first_line, end, False
    return first + reply.lines[index:], first_line, len(reply.lines), False


def _ends_with_tag(text: str, tag: str) -> bool:
    return len(text) >= len(tag) and _is_tag(text[len(text) - len(tag) :], tag)


def _is_tag(text: str, tag: str) -> bool:
    """ASCII-only case-insensitive match, so e.g. a dotless ``ı`` never passes for ``I``."""
    return len(text) == len(tag) and text.isascii() and text.upper() == tag
