"""A reasoning model's thinking, told apart from its reply (docs/protocol.md, "Thinking").

Models that think before they answer (qwen3, deepseek-r1, gpt-oss, ...) often start the answer
with a ``<think>`` block (or ``<thinking>``, ``<reasoning>``), drafts of commands included.
:func:`split_reasoning` takes such a block out before the reply is parsed, so nothing in it is
ever run:

* a block that opens at the start of a line before the reply's first command, and closes, is
  thinking (several such blocks in a row too); the reply is what follows it;
* one that never closes is thinking to the end of the reply: nothing runs, and the model is
  told (``unclosed``);
* a closing ``</think>`` at the start of a line with no opening before it (a chat template
  that wrote the opening tag itself) ends the thinking that began the reply, unless it stands
  inside a command's body (a file that holds the tag);
* a ``<think>`` after the reply's first command is content, like any other text.

The thinking's lines are replaced by empty lines, so the reply's line numbers (used in notes
to the model) stay those of the text as received.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codingagent.protocol.parser import TAGS, parse_spans, split_lines

_NAMES = "think|thinking|reasoning"
_OPEN = re.compile(rf"^[ \t]*<({_NAMES})>", re.IGNORECASE | re.MULTILINE)
_ANY_OPEN = re.compile(rf"<({_NAMES})>", re.IGNORECASE)
_ORPHAN_CLOSE = re.compile(rf"^[ \t]*</({_NAMES})>", re.IGNORECASE | re.MULTILINE)
_COMMAND = re.compile(
    r"^[ \t]*\[(?:" + "|".join(sorted(TAGS, key=len, reverse=True)) + r")(?=[\s\]])",
    re.MULTILINE,
)
UNCLOSED_NOTE = (
    "Your reply starts with a <{name}> block that is never closed (no </{name}>), so nothing "
    "in it or after it was run. Close your thinking with </{name}> before your commands, or "
    "send the commands without it"
)


@dataclass(frozen=True)
class Reasoned:
    """A reply with its leading thinking taken out."""

    answer: str  # the reply to parse: the thinking's lines left empty
    thinking: str  # the thinking's text ("" when there is none)
    unclosed: str | None = None  # the name of a block that never closed ("think")


def split_reasoning(text: str) -> Reasoned:
    """``text`` with its leading thinking blocks taken out (see the module doc)."""
    thoughts: list[str] = []
    while True:
        first_command = _first_command(text)
        opened = _OPEN.search(text)
        if opened is None or opened.start() > first_command:
            break
        name = opened.group(1)
        closed = re.compile(rf"</{name}>", re.IGNORECASE).search(text, opened.end())
        if closed is None:
            thoughts.append(text[opened.end() :].strip())
            answer = text[: opened.start()] + _blank(text[opened.start() :])
            return Reasoned(answer, "\n\n".join(thoughts), name.lower())
        thoughts.append(text[opened.end() : closed.start()].strip())
        text = (
            text[: opened.start()]
            + _blank(text[opened.start() : closed.end()])
            + text[closed.end() :]
        )
    if not thoughts:
        orphan = _ORPHAN_CLOSE.search(text)
        if (
            orphan is not None
            and not _ANY_OPEN.search(text, 0, orphan.start())
            and not _in_a_body(text, orphan.start())
        ):
            close = text.index(">", orphan.start()) + 1
            thoughts.append(text[: orphan.start()].strip())
            text = _blank(text[:close]) + text[close:]
    return Reasoned(text, "\n\n".join(t for t in thoughts if t))


def _in_a_body(text: str, position: int) -> bool:
    """Whether ``position`` lies inside a command's body: content, not the end of thinking."""
    line = text.count("\n", 0, position)
    spans = parse_spans(split_lines(text))
    return any(span.start < line < span.end for span in spans)


def _first_command(text: str) -> int:
    found = _COMMAND.search(text)
    return found.start() if found else len(text)


def _blank(text: str) -> str:
    """``text`` as as many empty lines as it had line breaks."""
    return "\n" * text.count("\n")
