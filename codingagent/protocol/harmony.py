"""gpt-oss's harmony channels, read from a reply whose server left their markers in
(docs/protocol.md, "4.4 Thinking"; the rest of the reasoning rule is in
:mod:`codingagent.protocol.reasoning`).

A harmony reply is a run of messages, each a header and its text::

    <|channel|>analysis<|message|>drafts...<|end|><|start|>assistant<|channel|>final<|message|>answer<|return|>

Only the ``final`` channel is the answer: its text is kept where it stood, its markers left out.
Every other channel (``analysis``, ``commentary``: a tool call we do not serve) is reasoning,
kept as thought and never parsed. A message ends at ``<|end|>``, ``<|return|>`` or
``<|call|>``, or where the next header (``<|start|>`` or ``<|channel|>``) begins; headers and
markers are special tokens, so a literal one inside an answer's file body is read as a marker
too. One pass over the markers: linear in the length of the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MARKER = re.compile(r"<\|(start|channel|message|constrain|end|return|call)\|>")
ANSWER_CHANNEL = "final"
_ENDS = frozenset({"end", "return", "call"})
_HEADS = frozenset({"start", "channel"})
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class Channels:
    """A harmony reply read from its first marker on."""

    pieces: list[str] = field(default_factory=list)  # the final text kept, the rest blank lines
    thoughts: list[str] = field(default_factory=list)  # the reasoning channels' texts
    answered: bool = False  # a final channel's text began
    cut: bool = (
        False  # the reply ended inside a reasoning message, or in a header before any answer
    )

    @property
    def unclosed(self) -> bool:
        """Whether the reasoning never reached its answer: nothing of it may run."""
        return self.cut or not self.answered


def read_channels(text: str, start: int) -> Channels:
    """``text[start:]`` (``start``: its first header marker) read as harmony messages."""
    read = Channels()
    state = "header"  # or "thought", "final", "between" (after a message's end marker)
    channel = ""
    last = ""  # the marker before the text being read
    at = start  # text[:at] is read
    for marker in MARKER.finditer(text, start):
        name = marker.group(1)
        segment = text[at : marker.start()]
        if state == "header":
            if last == "channel":
                channel = _channel(segment)
            read.pieces.append(blank(text[at : marker.end()]))
            if name == "message":
                state = "final" if channel == ANSWER_CHANNEL else "thought"
                read.answered |= state == "final"
            elif name in _ENDS:
                state = "between"
            elif name == "start":
                channel = ""
        elif state == "between" or (state == "final" and name not in _ENDS | _HEADS):
            read.pieces += [segment, blank(marker.group())]  # text outside reasoning stays
            if state == "between" and name in _HEADS:
                state, channel = "header", ""
        elif state == "thought" and name not in _ENDS | _HEADS:
            continue  # a stray marker inside reasoning: part of the thought
        else:  # a reasoning or final message ends
            if state == "thought":
                read.thoughts.append(segment.strip())
                read.pieces.append(blank(segment))
            else:
                read.pieces.append(segment)
            read.pieces.append(blank(marker.group()))
            state, channel = ("between", "") if name in _ENDS else ("header", "")
        last, at = name, marker.end()
    rest = text[at:]
    if state in ("final", "between"):
        read.pieces.append(rest)
        return read
    if state == "thought":
        read.thoughts.append(rest.strip())
    read.pieces.append(blank(rest))
    read.cut = state == "thought" or (last == "channel" and _channel(rest) != ANSWER_CHANNEL)
    read.cut |= not read.answered
    return read


def _channel(header: str) -> str:
    """The channel a header's text after ``<|channel|>`` names: ``final``, ``analysis``, ..."""
    words = header.split(None, 1)
    return words[0].lower() if words else ""


def blank(text: str) -> str:
    """``text`` as as many empty lines as it had line breaks."""
    return "\n" * len(_LINE_BREAK.findall(text))
