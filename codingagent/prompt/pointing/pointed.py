"""The code the task points at (docs/prompts.md): the ``## Code the Task Points At`` section
of a first prompt (and of ``show --full``), the definitions the task most likely touches,
within a budget that follows the chat's window (:func:`pointed_tokens`).

Which definitions is :mod:`.evidence`'s: every piece of evidence (the task's words, names
and paths, the failing output's frames and assertion lines, the call graph around them, what
the failing tests call) weighs in one score a definition. The section is filled by it, best
first, value for size:

- a definition is shown whole (numbered as READ_FILE numbers lines, as READ_FILE
  ``symbol=`` shows it; a small file whole) when it fits in its *allowance*: half the
  section for the best, for the others in proportion to their score, at least an eighth;
  three quarters for one the evidence clearly leads to (:func:`_lead`);
- a longer one (``OUTLINE_LINES`` or more) that the evidence points into is shown as its
  outline, within a quarter of the section: its first lines (to the end of its signature),
  the lines the evidence points at (a frame's line; code, not a comment or a docstring, that
  calls a definition the evidence ranks among the first twelve, or a name the task or the
  failing tests call) with two lines around each, its body's top-level statements (when it
  has at most ``OUTLINE_STATEMENTS``) as room allows, and its last line; a class, within an
  eighth, as its first line and the first line of each definition in it; each gap a line
  saying which lines it leaves out, so READ_FILE with ``start_line`` and ``end_line`` shows
  them;
- definitions scoring under ``FLOOR`` of the best are not shown.

What does not fit is named after the code, each with the READ_FILE that shows it. The
definitions come from the code map's kept graph or tags (:mod:`codingagent.codemap`); the
files they are in are read whole (at most ``evidence.READ_BYTES`` in all) to score them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codingagent.codemap.lexical import is_test
from codingagent.prompt.pointing.definitions import Definition, Tree
from codingagent.prompt.pointing.evidence import WEIGHTS, Evidence, Key, Weights, gather, rank
from codingagent.protocol.commands import file_lines, numbered
from codingagent.state import SessionState
from codingagent.workspace import Listing, Workspace

HEADING = "## Code the Task Points At"
LEAD = (
    "(the code this task most likely touches, most likely first: what the task names, a "
    "traceback's or the failing tests' frames, what the failing tests call, what all of "
    "these call, and what the task's words point at; each definition whole and numbered as "
    "READ_FILE numbers lines, a long one as its outline)"
)
PASTED_TOKENS = 4096  # a pasted chat's window is not known: what a big chat takes at once
CHECK_TOKENS = 512  # ... less this, given to the check's failing output shown beside it
PASTED_PROMPT_TOKENS = 12_000  # ... and less what keeps its first prompt under this (3 bytes
PASTED_LEAST_TOKENS = 1024  # ... a token; ``compose._pasted_room``), to this at the least
SMALL_WINDOW = 16_384  # a smaller window gets the code map alone
WINDOW_SHARE = 8  # else an eighth of the window ...
MOST_TOKENS = 8192  # ... at most this many tokens
CHARS_PER_TOKEN = 4
FLOOR = 0.05  # definitions scoring under this share of the best are not shown
MOST_SHARE = 1 / 2  # the best definition may take this share of the section, others less:
LEAST_SHARE = 1 / 8  # ... in proportion to their scores, but at least this share
LEAD_SHARE = 3 / 4  # a definition the evidence clearly leads to may take this share:
LEAD_RATIO = 2.0  # ... the deepest frame's, or the best scoring this many times the next
OUTLINE_SHARE = 1 / 4  # an outline takes at most this share of the section (a class's: LEAST)
SMALL_FILE_LINES = 40  # a file this short is shown whole
OUTLINE_LINES = 40  # a definition this long or longer may be shown as its outline
OUTLINE_STATEMENTS = 12  # an outline shows a body's top-level statements when it has no more
AROUND = 2  # lines shown around a line the evidence points at
HOT = 12  # an outline shows the calls of the definitions ranked this high
HEAD_LINES = 8  # first lines of a definition an outline shows, to the end of its signature
LEFT_OUT_NAMED = 8  # definitions not shown that the section names
LEFT_OUT_CHARS = 900  # the room kept for naming them
GAP = "     ... (lines {start}-{end} not shown)"
_BLOCK = re.compile(
    r"^\s*(?:if|elif|else|for|while|try|except|finally|with|switch|case|default|return|"
    r"raise|throw|yield|def|class|function|async|match)\b"
)
_CALL = re.compile(r"\b([A-Za-z_$][\w$]*)\s*\(")
_COMMENTS = ("#", "//", "/*", "*", ">>>")


def pointed_tokens(window: int | None, failing: bool = False) -> int:
    """The section's budget in tokens: ``PASTED_TOKENS`` while the window is unknown (a
    pasted chat), ``CHECK_TOKENS`` less when the prompt also shows a check's failing output;
    none under ``SMALL_WINDOW``; else an eighth of the window, at most ``MOST_TOKENS``."""
    if window is None:
        return PASTED_TOKENS - (CHECK_TOKENS if failing else 0)
    if window < SMALL_WINDOW:
        return 0
    return min(MOST_TOKENS, window // WINDOW_SHARE)


@dataclass(frozen=True)
class Pointed:
    text: str | None  # the section, None: nothing to show
    shown: dict[str, str] = field(default_factory=dict)  # sha256 of each file shown from


def pointed_section(
    ws: Workspace,
    listing: Listing,
    state: SessionState,
    tokens: int,
    cache_dir: Path | None,
    skip: Iterable[str] = (),
    weights: Weights = WEIGHTS,
) -> Pointed:
    """The section for ``state``'s task within ``tokens`` (0: none); ``skip``: files the
    prompt already shows whole (named with ``--file``)."""
    if tokens <= 0:
        return Pointed(None)
    made = pointer(ws, listing, state, cache_dir, weights)
    return made.section(tokens, skip) if made is not None else Pointed(None)


@dataclass(frozen=True)
class Pointer:
    """The evidence for a task, gathered and ranked once: its section fitted to any budget
    (a pasted chat's first prompt may ask again for fewer tokens)."""

    tree: Tree
    found: Evidence
    ranked: list[tuple[float, Key]]

    def section(self, tokens: int, skip: Iterable[str] = ()) -> Pointed:
        if tokens <= 0:
            return Pointed(None)
        return section(self.tree, self.found, self.ranked, tokens * CHARS_PER_TOKEN, skip)


def pointer(
    ws: Workspace,
    listing: Listing,
    state: SessionState,
    cache_dir: Path | None,
    weights: Weights = WEIGHTS,
) -> Pointer | None:
    """The evidence for ``state``'s task in the workspace (None: the tree defines nothing)."""
    task = " ".join([state.task, *state.follow_ups])
    tree = Tree(ws, listing, cache_dir, task)
    if not tree.defs:
        return None
    found = gather(tree, task, state.check_failure)
    return Pointer(tree, found, rank(found, weights))


def section(
    tree: Tree,
    found: Evidence,
    ranked: list[tuple[float, Key]],
    chars: int,
    skip: Iterable[str] = (),
) -> Pointed:
    """The section showing the ``ranked`` definitions within ``chars``, best first."""
    picker = _Picker(tree, found, chars, set(skip), ranked)
    for score, key in ranked:
        picker.take(score, key)
    return picker.render()


class _Picker:
    """The lines taken, most likely first, within ``chars``; what did not fit."""

    def __init__(
        self,
        tree: Tree,
        found: Evidence,
        chars: int,
        skip: set[str],
        ranked: list[tuple[float, Key]],
    ) -> None:
        self.tree, self.found, self.skip = tree, found, skip
        self.size = chars - len(HEADING) - len(LEAD) - 2 - LEFT_OUT_CHARS
        self.room = self.size
        self.best = ranked[0][0] if ranked else 0.0
        self.lead = _lead(found, ranked)
        self.hot = {found.defs[key][0] for _, key in ranked[:HOT]} | found.names
        self.whole_files = {  # the files the task names by path: whole when they fit
            (rel, d[3], d[4]) for rel in found.files for d in tree.defs.get(rel, [])[:1]
        }
        self.shown: dict[str, set[int]] = {}  # file -> the lines shown
        self.outlined: dict[str, list[tuple[int, int]]] = {}  # file -> outlined spans
        self.left: list[Key] = []

    def take(self, score: float, key: Key) -> None:
        rel = key[0]
        if rel in self.skip:
            return
        if score < self.best * FLOOR:
            self.left.append(key)
            return
        text = self.tree.text(rel)
        if text is None:
            return
        lines = file_lines(text)
        definition = self.found.defs[key]
        start, end = _span(rel, lines, definition)
        shown = self.shown.get(rel, set())
        if all(n in shown for n in range(start, end + 1)):
            return  # shown already, inside another
        allowance = max(LEAST_SHARE, MOST_SHARE * score / self.best)
        if key in self.lead:
            allowance = LEAD_SHARE
        limit = min(self.room, int(self.size * allowance))
        if len(lines) <= SMALL_FILE_LINES or key in self.whole_files:
            whole = set(range(1, len(lines) + 1))
            if self._cost(rel, lines, whole) <= limit:
                self._show(rel, lines, whole)
                return
        span = set(range(start, end + 1))
        if self._cost(rel, lines, span) <= limit:
            self._show(rel, lines, span)
            return
        if end - start + 1 >= OUTLINE_LINES:
            most = OUTLINE_SHARE if definition[2] != "class" else LEAST_SHARE
            outline = self._outline(
                rel, lines, definition, (start, end), min(limit, int(self.size * most))
            )
            if outline:
                self._show(rel, lines, outline, (start, end))
        self.left.append(key)

    def _show(
        self, rel: str, lines: list[str], taken: set[int], outline: tuple[int, int] | None = None
    ) -> None:
        shown = self.shown.setdefault(rel, set())
        before = self._cost(rel, lines, shown) if shown else 0
        if outline is not None:
            self.outlined.setdefault(rel, []).append(outline)
        shown.update(taken)
        self.room -= self._cost(rel, lines, shown) - before

    def _cost(
        self,
        rel: str,
        lines: list[str],
        taken: set[int],
        outlined: list[tuple[int, int]] | None = None,
    ) -> int:
        """What showing ``taken`` lines of ``rel`` costs: its views' lines, headers, gaps
        (``outlined``: the spans shown as outlines, the file's by default)."""
        spans = self.outlined.get(rel, []) if outlined is None else outlined
        views = _views(sorted(taken), spans, len(lines))
        cost = 0
        for view in views:
            cost += 2 * len(rel) + 16
            for item in view:
                cost += len(GAP) + 8 if isinstance(item, tuple) else len(lines[item - 1]) + 8
        return cost

    def _outline(
        self, rel: str, lines: list[str], definition: Definition, span: tuple[int, int], limit: int
    ) -> set[int] | None:
        """The lines of a long definition's outline within ``limit`` (see the module doc)."""
        start, end = span
        head = start
        opener = ":" if rel.endswith((".py", ".pyi")) else "{"
        while head < min(end, start + HEAD_LINES - 1) and opener not in lines[head - 1]:
            head += 1
        chosen = set(range(start, head + 1)) | {end}
        spans = [span]
        if definition[2] == "class":  # a class: the first line of each of its definitions
            inner = [d[3] for d in self.tree.defs.get(rel, []) if start < d[3] <= end]
            marked: list[int] = []
        else:
            marked = sorted(self._pointed(rel, lines, head + 1, end))
            if not marked:
                return None  # the evidence points at no part of it: the map's line is enough
            for line in marked:
                chosen.update(range(max(start, line - AROUND), min(end, line + AROUND) + 1))
            base = _body_indent(lines, head + 1, end)
            inner = [
                n
                for n in range(head + 1, end)
                if len(lines[n - 1]) - len(lines[n - 1].lstrip()) == base
                and _BLOCK.match(lines[n - 1])
            ]
            if len(inner) > OUTLINE_STATEMENTS:
                inner = []  # a dispatcher's many branches: the part pointed at is the outline
        for n in inner:
            if self._cost(rel, lines, chosen | {n}, spans) > limit:
                break
            chosen.add(n)
        while self._cost(rel, lines, chosen, spans) > limit and marked:
            far = marked.pop()  # the last lines pointed at go first
            chosen -= set(range(far - AROUND, far + AROUND + 1)) - set(range(start, head + 1))
            chosen.add(end)
        return chosen if self._cost(rel, lines, chosen, spans) <= limit else None

    def _pointed(self, rel: str, lines: list[str], start: int, end: int) -> set[int]:
        """The lines of ``rel`` in ``start..end`` that the evidence points at: a frame's, and
        code (not a comment or a docstring) that calls a name the evidence ranks high."""
        found = {n for n in self.found.lines.get(rel, ()) if start <= n <= end}
        quoted = False
        for n in range(start, end + 1):
            text = lines[n - 1].strip()
            fences = text.count('"""') + text.count("'''")
            code = not quoted and not fences and not text.startswith(_COMMENTS)
            if code and any(name in self.hot for name in _CALL.findall(text)):
                found.add(n)
            quoted ^= fences % 2 == 1
        return found

    def render(self) -> Pointed:
        views: list[str] = []
        for rel, taken in self.shown.items():
            lines = file_lines(self.tree.texts[rel])
            for view in _views(sorted(taken), self.outlined.get(rel, []), len(lines)):
                views += [f"--- {rel} ---", *self.tree.notes.get(rel, ())]
                for item in view:
                    if isinstance(item, tuple):
                        views.append(GAP.format(start=item[0], end=item[1]))
                    else:
                        views += numbered([lines[item - 1]], item)
                views.append(f"--- end {rel} ---")
        if not views:
            return Pointed(None)
        text = "\n".join([HEADING, LEAD, *views, *self._left_out()])
        shown = {rel: self.tree.digests[rel] for rel in self.shown}
        return Pointed(text, shown)

    def _left_out(self) -> list[str]:
        left = [
            key
            for key in dict.fromkeys(self.left)
            if not all(n in self.shown.get(key[0], ()) for n in range(key[1], key[2] + 1))
            and not is_test(key[0])
        ][:LEFT_OUT_NAMED]
        if not left:
            return []
        lines = [
            "(left out to keep this prompt short, most likely first; each READ_FILE shows one:"
        ]
        room = LEFT_OUT_CHARS + self.room - len(lines[0]) - 3
        for rel, first, last in left:
            name = self.found.defs[(rel, first, last)][1]
            line = f'  READ_FILE path="{rel}" symbol="{name}"  (lines {first}-{last})'
            if len(line) + 1 > room:
                break
            room -= len(line) + 1
            lines.append(line)
        return [*lines, ")"] if len(lines) > 1 else []


def _lead(found: Evidence, ranked: list[tuple[float, Key]]) -> set[Key]:
    """The definitions the evidence clearly leads to: the deepest frame's in the code (error
    helpers below it aside), and the best scoring when it scores ``LEAD_RATIO`` times the
    next (tests aside)."""
    lead = {key for key, strength in found.strength.get("frame", {}).items() if strength >= 1}
    code = [(score, key) for score, key in ranked if not is_test(key[0])]
    if len(code) == 1 or (len(code) > 1 and code[0][0] >= LEAD_RATIO * code[1][0]):
        lead.add(code[0][1])
    return lead


def _views(
    taken: list[int], outlined: list[tuple[int, int]], length: int
) -> list[list[int | tuple[int, int]]]:
    """The views of a file's shown lines (in order): runs a few lines apart are one (the
    lines between shown too), a gap inside an outlined definition is a gap line."""
    views: list[list[int | tuple[int, int]]] = []
    previous = None
    for n in taken:
        if previous is not None and n > previous + 1:
            if n - previous <= 3:
                views[-1] += list(range(previous + 1, n))
            elif any(a <= previous and n <= b for a, b in outlined):
                views[-1].append((previous + 1, n - 1))
            else:
                views.append([])
        elif previous is None:
            views.append([])
        if n <= length:
            views[-1].append(n)
        previous = n
    return views


def _body_indent(lines: list[str], first: int, last: int) -> int:
    """The indentation of a definition's body: of its first line that says something."""
    for n in range(first, last + 1):
        text = lines[n - 1]
        if text.strip():
            return len(text) - len(text.lstrip())
    return 0


def _span(rel: str, lines: list[str], definition: Definition) -> tuple[int, int]:
    """A definition's lines as READ_FILE ``symbol=`` shows them: a Python one from its first
    decorator."""
    start, end = definition[3], min(definition[4], len(lines))
    if rel.endswith((".py", ".pyi")):
        indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
        while start > 1 and lines[start - 2].strip().startswith("@"):
            above = lines[start - 2]
            if len(above) - len(above.lstrip()) != indent:
                break
            start -= 1
    return start, max(start, end)
