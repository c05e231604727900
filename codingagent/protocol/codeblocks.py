"""Which lines of a reply stand inside a markdown code block, and what that means for a reply
read from a chat's rendered page (docs/protocol.md, "Answers read from a rendered page").

A chat renders its answer as markdown. Text inside a code block is shown as written; the rest
is not: ``__init__.py`` shows as a bold ``init.py``, a ``# comment`` line as a heading, the
stars of ``**kwargs`` vanish, ``&amp;`` shows as ``&``. So an answer taken from the page's
rendered text (a selection copied with Ctrl+C, the extension reading the page) is exact inside
its code blocks and nowhere else. The readers of rendered pages
(``sources/pagetext.py``, the extension's ``pagetext.js``) put each code block back between
fence lines, and :func:`refuse_unfenced` then refuses every command that writes a file or
runs something unless it stands whole inside one code block: such a command, read from
damaged text, could write the wrong file or run the wrong thing.

Fences follow CommonMark: a line of at least three backticks or tildes, indented at most three
spaces (a backtick fence's info string holds no backtick), closed by a line of the same
character, at least as long, with nothing after it but spaces; a block never closed runs to
the end of the reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codingagent.protocol.commands import Command, ParseError
from codingagent.protocol.parser import Span

_OPENING = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_CLOSING = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")

# The commands that change the workspace or run something: refused when they stood outside a
# code block of an answer read from rendered text. The others (READ_FILE, SEARCH, MESSAGE,
# ASK, DONE) only read or talk, and a damaged one does no harm.
CHANGING = frozenset({"CREATE_FILE", "EDIT_FILE", "REPLACE", "PATCH", "DELETE_FILE", "RUN_COMMAND"})

RENDERED_REFUSAL = (
    "not run: this answer was read from the chat's rendered page, where markdown changes text "
    "outside code blocks (__init__.py shows as init.py, **kwargs as kwargs, a '# comment' line "
    "as a heading): put the commands inside a code block (``` on a line before them and after "
    "them; ```` when a file holds ``` lines) and send them again"
)


def code_blocks(lines: Sequence[str]) -> list[int]:
    """For each line, the number (1, 2, ...) of the code block it stands in, or 0 outside any;
    fence lines themselves are 0."""
    found: list[int] = []
    count = 0
    marker = ""  # the open block's fence, "" outside a block
    for line in lines:
        if not marker:
            marker = _fence(line)
            count += bool(marker)
            found.append(0)
            continue
        closing = _CLOSING.fullmatch(line)
        if (
            closing is not None
            and closing.group(1)[0] == marker[0]
            and len(closing.group(1)) >= len(marker)
        ):
            marker = ""
            found.append(0)
        else:
            found.append(count)
    return found


def opens_block(line: str) -> bool:
    """Whether ``line`` would open a code block (a fence line)."""
    return bool(_fence(line))


def _fence(line: str) -> str:
    """The fence ``line`` opens a code block with (```` ``` ````, ``~~~~``), or ""."""
    opening = _OPENING.fullmatch(line)
    if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
        return ""
    return opening.group(1)


def refuse_unfenced(lines: Sequence[str], spans: Sequence[Span]) -> list[Command]:
    """The commands of ``spans``, each one that changes the workspace or runs something
    (read or not) replaced by a refusal unless all its lines stand inside one code block."""
    blocks = code_blocks(lines)
    commands: list[Command] = []
    for command, start, end in spans:
        block = blocks[start] if start < len(blocks) else 0
        fenced = block != 0 and all(blocks[i] == block for i in range(start, end))
        if command.name in CHANGING and not fenced:
            # A command the parser could not read is refused for the same reason: the page
            # may well have damaged it (soft line breaks run a command's lines together).
            command = ParseError(line=command.line, command=command.name, message=RENDERED_REFUSAL)
        commands.append(command)
    return commands
