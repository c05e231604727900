"""Fitting a request into a model's window (docs/models.md, "Context windows"). Pure: texts
and a token counter in, texts out.

A request is the system text (the PROTOCOL, for an endpoint; "" for a pasted prompt), the
earlier turns (user/assistant pairs, oldest first) and the prompt. When its tokens exceed the
budget (:func:`prompt_budget`: the window less a reserve for the reply), it is shrunk in this
order, each step only when the one before was not enough:

1. the oldest earlier turns are left out, a pair at a time;
2. the code map (``## Code Map``, a first prompt's) is left out, with a line saying how to ask
   for it (READ_FILE ``map="true"``); then the code the task points at (``## Code the Task
   Points At``), with a line saying how to ask for a definition (READ_FILE ``symbol=``);
3. the listing (``## Workspace Files``) is cut down to its top folders, then to one line;
4. file contents (``## Requested File Contents``), command output (the indented lines under a
   result, and under the check's status line in ``## Check``) and search results keep their
   first and last lines, fewer at each step (160, 80, 40, 20, 10, 4, then none), with a line
   saying what was left out and how to read it (READ_FILE with start_line and end_line, the
   command again with a filter, a narrower SEARCH).

Never touched: the system text, the HEADER, the PROTOCOL (full or short), the Environment,
the user's answers, the task (the PROMPT section) and the results' status lines (the check's
too). When even the smallest form does not fit, :class:`NoFit` says how many tokens it needs;
nothing is sent.

Tokens are counted by the ``count`` given (a server's tokenizer), else by :func:`estimate`:
one token per three bytes of UTF-8, which errs high for English and code in the tokenizers of
today's models (about four characters a token). Each message adds ``MESSAGE_TOKENS`` for the
chat template around it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

BYTES_PER_TOKEN = 3  # the documented bound: a token for every 3 bytes (docs/models.md)
MESSAGE_TOKENS = 8  # the chat template's tokens around one message
REPLY_SHARE = 4  # without max_tokens, a quarter of the window is kept for the reply ...
REPLY_MOST = 8192  # ... at most this many tokens
KEEPS = (160, 80, 40, 20, 10, 4, 0)  # lines kept of each long block, step by step
TOP_FOLDERS = 40  # folders the shortened listing names at most

Count = Callable[[str], int]
Message = dict[str, str]

_SECTION = re.compile(r"^=== ([A-Z]+) ===$")
_NUMBERED = re.compile(r"^\s*(\d+) \| ")
_VIEW_START = re.compile(r"^--- (.+) ---$")


def estimate(text: str) -> int:
    """Tokens of ``text`` by the documented bound (a token per three bytes of UTF-8)."""
    return math.ceil(len(text.encode("utf-8", "replace")) / BYTES_PER_TOKEN)


def reply_reserve(window: int, max_tokens: int | None = None) -> int:
    """The tokens kept free for the reply: ``max_tokens`` when the profile sets it, else a
    quarter of the window, at most ``REPLY_MOST``."""
    if max_tokens is not None:
        return min(max_tokens, window // 2)
    return min(REPLY_MOST, window // REPLY_SHARE)


def prompt_budget(window: int, max_tokens: int | None = None) -> int:
    """The token budget of a session's prompts: the window less the reply's reserve. The one
    place that says how much of a window a prompt may take (the endpoint's requests, a pasted
    session's prompts with ``context_tokens``, and whatever fills the first prompt)."""
    return window - reply_reserve(window, max_tokens)


@dataclass(frozen=True)
class Fitted:
    """A request that fits: its messages, its tokens, and what was left out, in words."""

    system: str
    messages: list[Message]
    tokens: int
    cuts: tuple[str, ...] = field(default=())


class NoFit(Exception):
    """Even the smallest form of the request does not fit: ``needed`` tokens, ``budget``."""

    def __init__(self, needed: int, budget: int) -> None:
        super().__init__(f"the request needs {needed:,} tokens; {budget:,} fit")
        self.needed = needed
        self.budget = budget


def request_tokens(system: str, messages: Sequence[Message], count: Count = estimate) -> int:
    """The tokens of a request as :func:`fit` counts them."""
    total = count(system) + MESSAGE_TOKENS if system else 0
    return total + sum(count(m["content"]) + MESSAGE_TOKENS for m in messages)


def fit(
    system: str,
    history: Sequence[Message],
    prompt: str,
    budget: int,
    count: Count = estimate,
) -> Fitted:
    """The request (``system``, the ``history`` pairs, then ``prompt`` as the user's message)
    within ``budget`` tokens, shrunk in the documented order; :class:`NoFit` if it cannot be."""
    history = list(history)
    last = 0
    for candidate, cuts in _candidates(history, prompt):
        messages = [*candidate[0], {"role": "user", "content": candidate[1]}]
        last = request_tokens(system, messages, count)
        if last <= budget:
            return Fitted(system, messages, last, tuple(cuts))
    raise NoFit(last, budget)


def fit_prompt(prompt: str, budget: int, count: Count = estimate) -> tuple[str, tuple[str, ...]]:
    """A pasted prompt within ``budget`` tokens (its PROTOCOL stays in it), and what was cut.
    When even its smallest form is over the budget, that form (a person pastes it; the
    console says it is over the window)."""
    try:
        fitted = fit("", [], prompt, budget + MESSAGE_TOKENS, count)
    except NoFit:
        return _Prompt.parse(prompt).render(listing=2, keep=0), ("all that can be cut",)
    return fitted.messages[-1]["content"], fitted.cuts


def _candidates(
    history: list[Message], prompt: str
) -> Iterator[tuple[tuple[list[Message], str], list[str]]]:
    """The request in ever smaller forms, in the documented order, each made only when the
    one before did not fit (a request that fits costs one count, no parse)."""
    yield (history, prompt), []
    pairs = len(history) // 2
    for dropped in range(1, pairs + 1):
        said = f"the {dropped} oldest earlier turn{'s' if dropped > 1 else ''}"
        yield (history[2 * dropped :], prompt), [said]
    cuts = [f"the {pairs} earlier turns"] if pairs else []
    parsed = _Prompt.parse(prompt)
    if parsed.code_map is not None:
        parsed.drop_map = True
        cuts.append("the code map left out")
        yield ([], parsed.render()), list(cuts)
    if parsed.pointed is not None:
        parsed.drop_pointed = True
        cuts.append("the code the task points at left out")
        yield ([], parsed.render()), list(cuts)
    if parsed.listing is not None:
        yield ([], parsed.render(listing=1)), [*cuts, "the listing cut to its top folders"]
        cuts.append("the listing left out")
        yield ([], parsed.render(listing=2)), cuts
    for keep in KEEPS:
        yield ([], parsed.render(listing=2, keep=keep)), [*cuts, _kept(keep)]


def _kept(keep: int) -> str:
    if keep == 0:
        return "file contents, command output and search results left out"
    return f"file contents, command output and search results cut to {keep} lines each"


@dataclass
class _Prompt:
    """A prompt cut into its parts: the CONTEXT's ``## `` sections, and what is around them."""

    before: list[str]  # HEADER and PROTOCOL, as they are
    sections: list[tuple[str, list[str]]]  # CONTEXT's sections: (heading, lines after it)
    after: list[str]  # the PROMPT section (the task), as it is
    listing: int | None = None  # the index of Workspace Files in ``sections``
    code_map: int | None = None  # the index of the Code Map in ``sections``
    drop_map: bool = False  # render the Code Map as one line saying it was left out
    pointed: int | None = None  # the index of the Code the Task Points At in ``sections``
    drop_pointed: bool = False  # ... rendered as one line saying it was left out

    @classmethod
    def parse(cls, text: str) -> _Prompt:
        lines = text.split("\n")
        starts = {m.group(1): i for i, line in enumerate(lines) if (m := _SECTION.match(line))}
        if "CONTEXT" not in starts:
            return cls(lines, [], [])
        begin = starts["CONTEXT"] + 1
        end = starts.get("PROMPT", len(lines))
        if end < begin:
            return cls(lines, [], [])
        sections: list[tuple[str, list[str]]] = []
        loose: list[str] = []
        for line in lines[begin:end]:
            if line.startswith("## "):
                sections.append((line, []))
            elif sections:
                sections[-1][1].append(line)
            else:
                loose.append(line)
        listing = next((i for i, (h, _) in enumerate(sections) if h == "## Workspace Files"), None)
        code_map = next((i for i, (h, _) in enumerate(sections) if h == "## Code Map"), None)
        pointed = next((i for i, (h, _) in enumerate(sections) if h == _POINTED), None)
        return cls(
            [*lines[:begin], *loose], sections, lines[end:], listing, code_map, pointed=pointed
        )

    def render(self, listing: int = 0, keep: int | None = None) -> str:
        out = list(self.before)
        for index, (heading, body) in enumerate(self.sections):
            out.append(heading)
            if index == self.code_map and self.drop_map:
                out += [_MAP_GONE, ""]
            elif index == self.pointed and self.drop_pointed:
                out += [_POINTED_GONE, ""]
            elif index == self.listing and listing:
                out += _short_listing(body) if listing == 1 else [_LISTING_GONE, ""]
            elif keep is None:
                out += body
            elif heading == "## Requested File Contents":
                out += _cut_views(body, keep)
            elif heading in ("## Previous Command Results", "## Check"):
                out += _cut_outputs(body, keep)
            elif heading == "## Search Results":
                out += _cut_block(body, keep, _SEARCH_NOTE)
            else:
                out += body
        return "\n".join(out + self.after)


_POINTED = (
    "## Code the Task Points At"  # prompt.pointing.pointed.HEADING (this module imports none)
)
_POINTED_GONE = (
    "(the code the task points at is left out here to fit the model's window; READ_FILE "
    'path="FILE" symbol="NAME" shows a definition)'
)
_MAP_GONE = (
    '(the code map is left out here to fit the model\'s window; READ_FILE path="." '
    'map="true" shows it)'
)
_LISTING_GONE = (
    '(the listing is left out here to fit the model\'s window; READ_FILE path="." lists the '
    "workspace, and a folder's path lists that folder)"
)
_SEARCH_NOTE = (
    "({n} lines of search results are left out here to fit the model's window; a narrower "
    "SEARCH shows fewer)"
)
_OUTPUT_NOTE = (
    "    ({n} lines of output are left out here to fit the model's window; run the command "
    "again with a filter (grep, head, tail, sed -n) to see them)"
)


def _short_listing(body: list[str]) -> list[str]:
    """The listing cut down to its top folders (and a count of the files at the top)."""
    folders: dict[str, int] = {}
    files = 0
    for line in body:
        name = line.strip().split(" ", 1)[0]
        if not name or name.startswith("("):
            continue
        if "/" in name:
            top = name.split("/", 1)[0] + "/"
            folders[top] = folders.get(top, 0) + 1
        else:
            files += 1
    lines = [f"{top} ({n} listing lines)" for top, n in list(folders.items())[:TOP_FOLDERS]]
    if len(folders) > TOP_FOLDERS:
        lines.append(f"... and {len(folders) - TOP_FOLDERS} more folders")
    if files:
        lines.append(f"({files} files at the top)")
    lines.append(
        "(the listing is cut to its top folders here to fit the model's window; READ_FILE "
        "with a folder's path lists its files)"
    )
    trailing = [""] if body and body[-1] == "" else []
    return lines + trailing


def _cut_views(body: list[str], keep: int) -> list[str]:
    """Each file view's lines cut to ``keep``: the first and the last, and a line naming the
    lines left out and the READ_FILE that shows them."""
    out: list[str] = []
    index = 0
    while index < len(body):
        line = body[index]
        start = _VIEW_START.match(line)
        if start is None or line.startswith("--- end "):
            out.append(line)
            index += 1
            continue
        path = start.group(1)
        end = index + 1
        while end < len(body) and body[end] != f"--- end {path} ---":
            end += 1
        out.append(line)
        out += _cut_block(body[index + 1 : end], keep, _view_note(path))
        index = end
    return out


def _view_note(path: str) -> Callable[[list[str]], str]:
    def note(cut: list[str]) -> str:
        numbers = [int(m.group(1)) for line in cut if (m := _NUMBERED.match(line))]
        if not numbers:
            return f"({len(cut)} lines are left out here to fit the model's window)"
        first, last = numbers[0], numbers[-1]
        return (
            f"(lines {first}-{last} are left out here to fit the model's window; "
            f'READ_FILE path="{path}" start_line="{first}" end_line="{last}" shows them, '
            "or a part of them)"
        )

    return note


def _cut_outputs(body: list[str], keep: int) -> list[str]:
    """Each result's output block (the indented lines under ``  Output:``) cut to ``keep``;
    status lines stay."""
    out: list[str] = []
    block: list[str] = []
    for line in body:
        if block and (line.startswith("    ") or line == ""):
            block.append(line)
            continue
        if block:
            out += _flush_output(block, keep)
            block = []
        if line == "  Output:":
            out.append(line)
            block = [""]  # a marker: the block has begun (removed on flush)
            continue
        out.append(line)
    if block:
        out += _flush_output(block, keep)
    return out


def _flush_output(block: list[str], keep: int) -> list[str]:
    lines = block[1:]
    trailing = 0
    while lines and lines[-1] == "":
        lines.pop()
        trailing += 1
    return _cut_block(lines, keep, _OUTPUT_NOTE) + [""] * trailing


def _cut_block(lines: list[str], keep: int, note: str | Callable[[list[str]], str]) -> list[str]:
    """``lines`` cut to their first and last ``keep`` (two thirds from the start), with a
    line in the middle saying what was left out."""
    if len(lines) <= keep + 1:
        return lines
    head = math.ceil(keep * 2 / 3)
    tail = keep - head
    cut = lines[head : len(lines) - tail]
    said = note(cut) if callable(note) else note.format(n=len(cut))
    return [*lines[:head], said, *lines[len(lines) - tail :]]
