"""A reasoning model's thinking, told apart from its reply (docs/protocol.md, "4.4 Thinking").

Models that think before they answer write their thinking, drafts of commands included, in a
dress of their own (``DRESSES``: ``<think>``, Magistral's ``[THINK]``, Kimi's ``◁think▷``,
gpt-oss's harmony channels, ...). A server with the model's reasoning parser takes it out of
the text; one without it (or a raw completion) hands it on. :func:`split_reasoning` takes it
out before the reply is parsed, so nothing in it is ever run:

* a block that opens at the start of a line before the reply's first command, and closes, is
  thinking (several such blocks in a row too); the reply is what follows it;
* one that never closes is thinking to the end of the reply: nothing runs, and the model is
  told (``unclosed``: the note it sees);
* a closing tag at the start of a line with no opening before it (a chat template that wrote
  the opening itself) ends the thinking that began the reply, unless it stands inside a
  command's body (a file that holds the tag); so does harmony's
  ``<|channel|>final<|message|>`` with no ``<|channel|>`` before it;
* an opening after the reply's first command is content, like any other text.

Harmony (a line that starts with ``<|channel|>`` or ``<|start|>``) is read by
:mod:`codingagent.protocol.harmony`: its final channel is the answer, its other channels are
thinking, and a reply that never reaches the final channel runs nothing. Harmony whose server
dropped the special tokens (``analysisWe need ...assistantfinal[DONE]``) is read too: all
before ``assistantfinal`` is thinking.

The thinking's lines are replaced by empty lines (and markers on an answer's line left out), so
the reply's line numbers (used in notes to the model) stay those of the text as received. Every
search moves forward only: linear in the length of the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codingagent.protocol.harmony import blank, read_channels
from codingagent.protocol.parser import TAGS, parse_spans, split_lines


@dataclass(frozen=True)
class Dress:
    """One way models mark their thinking."""

    opening: str  # as models write it (any letter case is read, except harmony's)
    closing: str
    models: str  # who writes it (docs/models.md has the table)


DRESSES = (
    Dress("<think>", "</think>", "Qwen3, QwQ, DeepSeek-R1, GLM, MiniMax, ..."),
    Dress("<thinking>", "</thinking>", "models prompted to think in tags (Claude's habit)"),
    Dress("<reasoning>", "</reasoning>", "models prompted to reason in tags"),
    Dress("<seed:think>", "</seed:think>", "ByteDance Seed-OSS"),
    Dress("[THINK]", "[/THINK]", "Mistral's Magistral"),
    Dress("◁think▷", "◁/think▷", "Moonshot's Kimi thinking models"),
    Dress("<|begin_of_thought|>", "<|end_of_thought|>", "Sky-T1 and models trained in its format"),
)
# gpt-oss's harmony: every channel but the final one is thinking (codingagent/protocol/harmony.py)
HARMONY = Dress("<|channel|>analysis<|message|>", "<|channel|>final<|message|>", "gpt-oss")
# ... and harmony whose server dropped its special tokens from the text (skipped as special):
# only the channel and role words stay, ``analysisWe need...assistantfinal[DONE]``.
BARE_HARMONY = Dress("analysis", "assistantfinal", "gpt-oss, its special tokens dropped")

_BY_OPENING = {dress.opening.lower(): dress for dress in DRESSES}
_CLOSING = {
    dress.opening.lower(): re.compile(re.escape(dress.closing), re.IGNORECASE) for dress in DRESSES
}
_OPENINGS = "|".join(re.escape(dress.opening) for dress in DRESSES)
_HARMONY_HEAD = r"(?-i:<\|channel\|>|<\|start\|>)"  # special tokens: as written
_OPENER = rf"({_OPENINGS}|{_HARMONY_HEAD})"
_OPEN = re.compile(rf"^[ \t\ufeff]*{_OPENER}", re.IGNORECASE | re.MULTILINE)
_OPEN_HERE = re.compile(rf"[ \t]*{_OPENER}", re.IGNORECASE)  # right after a closing tag
_ANY_OPEN = re.compile(rf"{_OPENINGS}|(?-i:<\|channel\|>)", re.IGNORECASE)
_CLOSINGS = "|".join(re.escape(dress.closing) for dress in DRESSES)
_ORPHAN_CLOSE = re.compile(rf"^[ \t\ufeff]*({_CLOSINGS})", re.IGNORECASE | re.MULTILINE)
_HARMONY_ANSWER = re.compile(re.escape(HARMONY.closing))
_TAG = "|".join(sorted(TAGS, key=len, reverse=True))
_COMMAND = re.compile(rf"^[ \t]*\[(?:{_TAG})(?=[\s\]])", re.MULTILINE)
_COMMAND_HERE = re.compile(rf"[ \t]*\[(?:{_TAG})(?=[\s\]])")
_BARE_ANALYSIS = re.compile(r"[\s\ufeff]*analysis")  # at the very start of the reply
_HARMONY_TAIL = ("<|end|>", "<|return|>", "<|call|>", "<|start|>assistant", "<|start|>")
UNCLOSED_NOTE = (
    "Your reply starts with a {opening} block that is never closed (no {closing}), so nothing "
    "in it or after it was run. Close your thinking with {closing} before your commands, or "
    "send the commands without it"
)
HARMONY_NOTE = (
    "Your reply's reasoning (its analysis channel) never reached the final channel: it was "
    "cut off or never ended, so nothing in it or after it was run. Give your commands in the "
    "final channel, after your reasoning"
)


@dataclass(frozen=True)
class Reasoned:
    """A reply with its leading thinking taken out."""

    answer: str  # the reply to parse: the thinking's lines left empty
    thinking: str  # the thinking's text ("" when there is none)
    unclosed: str | None = None  # the note for the model when the thinking never closed


def split_reasoning(text: str) -> Reasoned:
    """``text`` with its leading thinking taken out (see the module doc)."""
    bare = _bare_harmony(text)
    if bare is not None:
        return bare
    thoughts: list[str] = []
    pieces: list[str] = []  # the answer up to ``at``
    at = 0  # text[:at] is read
    command = -1  # where the first command at or after ``at`` starts (stale while < at)
    while True:
        opened = (_OPEN_HERE.match(text, at) if at else None) or _OPEN.search(text, at)
        if opened is None:
            break
        if command < at or (at and _COMMAND_HERE.match(text, at)):
            command = _next_command(text, at)
        if opened.start() > command:
            break
        pieces.append(text[at : opened.start()])
        marker = opened.group(1)
        if marker in ("<|channel|>", "<|start|>"):
            channels = read_channels(text, opened.start(1))
            thoughts += channels.thoughts
            if channels.unclosed:
                pieces.append(blank(text[opened.start(1) :]))
                return Reasoned("".join(pieces), _joined(thoughts), HARMONY_NOTE)
            pieces += channels.pieces
            return Reasoned("".join(pieces), _joined(thoughts))
        dress = _BY_OPENING[marker.lower()]
        closed = _CLOSING[marker.lower()].search(text, opened.end())
        if closed is None:
            thoughts.append(text[opened.end() :].strip())
            pieces.append(blank(text[opened.start() :]))
            note = UNCLOSED_NOTE.format(opening=dress.opening, closing=dress.closing)
            return Reasoned("".join(pieces), _joined(thoughts), note)
        thoughts.append(text[opened.end() : closed.start()].strip())
        pieces.append(blank(text[opened.start() : closed.end()]))
        at = closed.end()
    if at:
        return Reasoned("".join(pieces) + text[at:], _joined(thoughts))
    return _orphan(text)


def _bare_harmony(text: str) -> Reasoned | None:
    """``text`` read as harmony without its special tokens, if it is that: it starts with
    ``analysis`` and holds ``assistantfinal`` (the answer follows it), or it starts with
    ``analysis`` run into a capital (``analysisWe need``: cut off before its answer)."""
    opened = _BARE_ANALYSIS.match(text)
    if opened is None:
        return None
    final = text.find(BARE_HARMONY.closing, opened.end())
    if final < 0:
        if not text[opened.end() : opened.end() + 1].isupper():
            return None
        return Reasoned(blank(text), text[opened.end() :].strip(), HARMONY_NOTE)
    end = final + len(BARE_HARMONY.closing)
    return Reasoned(blank(text[:end]) + text[end:], text[opened.end() : final].strip())


def leading_closing(head: str) -> str | None:
    """The marker that ends the thinking ``head`` (a text's first characters) opens with:
    ``</think>``, ``[/THINK]``, harmony's final header; None when it opens with none. For the
    live line while an answer streams."""
    bare = _BARE_ANALYSIS.match(head)
    if bare is not None and head[bare.end() : bare.end() + 1].isupper():
        return BARE_HARMONY.closing
    opened = _OPEN.match(head)
    if opened is None:
        return None
    if opened.group(1) in ("<|channel|>", "<|start|>"):
        return HARMONY.closing
    return _BY_OPENING[opened.group(1).lower()].closing


def _orphan(text: str) -> Reasoned:
    """``text`` whose thinking ends at a closing tag with no opening before it, if it has one
    (a chat template wrote the opening): the thinking is all before it."""
    tag, final = _ORPHAN_CLOSE.search(text), _HARMONY_ANSWER.search(text)
    if final is not None and (tag is None or final.start() < tag.start(1)):
        start, end = final.start(), -1  # harmony's final header: read on as harmony
    elif tag is not None:
        start, end = tag.start(1), tag.end(1)
    else:
        return Reasoned(text, "")
    if _ANY_OPEN.search(text, 0, start) or _in_a_body(text, start):
        return Reasoned(text, "")
    if end >= 0:
        return Reasoned(blank(text[:end]) + text[end:], text[:start].strip())
    channels = read_channels(text, start)
    thoughts = [_without_tail(text[:start]), *channels.thoughts]
    if channels.unclosed:
        return Reasoned(blank(text), _joined(thoughts), HARMONY_NOTE)
    return Reasoned(blank(text[:start]) + "".join(channels.pieces), _joined(thoughts))


def _without_tail(thought: str) -> str:
    """Harmony's thinking without the markers that end it and begin the final header."""
    end = len(thought)
    while True:
        while end and thought[end - 1].isspace():
            end -= 1
        tail = next((t for t in _HARMONY_TAIL if thought.endswith(t, 0, end)), "")
        if not tail:
            return thought[:end].strip()
        end -= len(tail)


def _joined(thoughts: list[str]) -> str:
    return "\n\n".join(thought for thought in thoughts if thought)


def _in_a_body(text: str, position: int) -> bool:
    """Whether ``position`` lies inside a command's body: content, not the end of thinking."""
    line = text.count("\n", 0, position)
    spans = parse_spans(split_lines(text))
    return any(span.start < line < span.end for span in spans)


def _next_command(text: str, start: int) -> int:
    """Where the first command line at or after ``start`` begins (``start`` may be in the
    middle of a line, right after a closing tag), or the end of ``text``."""
    found = _COMMAND_HERE.match(text, start) or _COMMAND.search(text, start)
    return found.start() if found else len(text)
