"""The code the task points at (docs/prompts.md): the ``## Code the Task Points At`` section
of a first prompt (and of ``show --full``), the whole text of the definitions the task most
likely touches, within a budget that follows the chat's window (:func:`pointed_tokens`).

Which definitions, most likely first (each shown whole, numbered as READ_FILE numbers lines,
as READ_FILE ``symbol=`` shows it; a small file whole):

1. the frames of a traceback or test run in the task and in the check's failing output
   (``state.check_failure``; :mod:`.frames`): the definition around each frame's line, the
   code's frames before the tests', the deepest first;
2. the definitions the task names as code (```parse_header```, ``Parser.parse``,
   ``load()``, ``camelCase``, ``snake_case``), and the files it names by path;
3. what those call (a name the definition calls that the same file defines, or one or two
   other files do), after them;
4. the definitions the task's words point at (:mod:`codingagent.codemap.lexical`), with
   what the first of them call.

What does not fit is named after the code, each with the READ_FILE that shows it. The
definitions come from the code map's kept graph or tags (:mod:`codingagent.codemap`); the
files they are in are read whole (at most ``READ_BYTES`` in all) to score their bodies.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codingagent.codemap.grammars import language_of
from codingagent.codemap.lexical import Doc, is_test, query, scores, words
from codingagent.prompt.definitions import Definition, Tree
from codingagent.prompt.frames import Frame, frames
from codingagent.protocol.commands import file_lines, numbered
from codingagent.state import SessionState
from codingagent.workspace import Listing, Workspace

HEADING = "## Code the Task Points At"
LEAD = (
    "(the code this task most likely touches, each definition whole and numbered as READ_FILE "
    "numbers lines: what the task names, a traceback's frames and what they call, then the "
    "definitions the task's words point at)"
)
PASTED_TOKENS = 4096  # a pasted chat's window is not known: what a big chat takes at once
SMALL_WINDOW = 16_384  # a smaller window gets the code map alone
WINDOW_SHARE = 8  # else an eighth of the window ...
MOST_TOKENS = 8192  # ... at most this many tokens
CHARS_PER_TOKEN = 4
READ_BYTES = 1_000_000  # bytes of source read to score the definitions' bodies
READ_FILES = 200
ONE_DEFINITION_SHARE = 2  # one definition takes at most half of the section's room
SMALL_FILE_LINES = 40  # a file this short is shown whole
CALLEES = 8  # calls of one definition followed at most
CALLEE_SHARE = 0.6  # a callee's priority, of its caller's
CALLERS_FLOOR = 50.0  # calls followed from a definition of this priority and more (best: 100)
LEXICAL_MOST = 24  # definitions the task's words point at, considered at most
LEXICAL_FLOOR = 0.2  # ... those scoring at least this share of the best
LEFT_OUT_NAMED = 8  # definitions not shown that the section names
LEFT_OUT_CHARS = 900  # the room kept for naming them
NAMED = 2000.0  # the priority of a definition the task names (a frame's: FRAME)
FRAME = 3000.0

_CALL = re.compile(r"\b([A-Za-z_$][\w$]*)\s*\(")
_NAMED = re.compile(
    r"`([^`\n]+)`|\b([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)\b"
    r"|\b([A-Za-z_$][\w$]*)\(|\b([A-Za-z$]*[a-z][\w$]*_[\w$]+|[a-z$]+[A-Z][\w$]*)\b"
)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")  # strings in code the task quotes: data, no names
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_PATH = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]{1,4})\b")


def pointed_tokens(window: int | None) -> int:
    """The section's budget in tokens: ``PASTED_TOKENS`` while the window is unknown (a
    pasted chat); none under ``SMALL_WINDOW``; else an eighth of the window, at most
    ``MOST_TOKENS``."""
    if window is None:
        return PASTED_TOKENS
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
) -> Pointed:
    """The section for ``state``'s task within ``tokens`` (0: none); ``skip``: files the
    prompt already shows whole (named with ``--file``)."""
    if tokens <= 0:
        return Pointed(None)
    task = " ".join([state.task, *state.follow_ups])
    failure = state.check_failure  # the check command's output, when it failed
    tree = Tree(ws, listing, cache_dir, task)
    if not tree.defs:
        return Pointed(None)
    picked = _Picker(tree, tokens * CHARS_PER_TOKEN, set(skip))
    for n, (path, definition) in enumerate(_framed(tree, frames(task) + frames(failure))):
        picked.push(FRAME - n, path, definition, named=True)
    named_files, named_defs = _named(tree, task)
    for n, (path, definition) in enumerate(named_defs):
        picked.push(NAMED - n, path, definition, named=True)
    for n, path in enumerate(named_files):
        for definition in tree.defs.get(path, [])[:1]:
            picked.push(NAMED - len(named_defs) - n, path, definition, named=True, whole=True)
    for score, path, definition in _lexical(tree, task, failure, named_files):
        picked.push(score, path, definition)
    return picked.render()


def _framed(tree: Tree, found: list[Frame]) -> list[tuple[str, Definition]]:
    """The definitions around the frames: the code's before the tests', deepest first."""
    ordered = [f for f in found if f.innermost_first] + [
        f for f in reversed(found) if not f.innermost_first
    ]
    ordered.sort(key=lambda f: is_test(f.path))
    picked = []
    for frame in ordered:
        rel = tree.resolve(frame.path)
        if rel is None or tree.text(rel, parse=True) is None:
            continue
        defs = tree.defs.get(rel, [])
        if frame.line is not None:
            around = [d for d in defs if d[3] <= frame.line <= d[4]]
            if around:
                picked.append((rel, min(around, key=lambda d: d[4] - d[3])))
        elif frame.name:
            last = frame.name.rpartition(".")[2]
            exact = [d for d in defs if d[1] == frame.name] or [d for d in defs if d[0] == last]
            picked += [(rel, d) for d in exact[:1]]
    return picked


def _named(tree: Tree, task: str) -> tuple[list[str], list[tuple[str, Definition]]]:
    """The files the task names by path, and the definitions it names as code."""
    files = []
    for match in _PATH.finditer(task):
        if language_of(match[1]) is not None:
            rel = tree.resolve(match[1])
            if rel is not None and tree.text(rel, parse=True) is not None:
                files.append(rel)
    names: list[str] = []
    for match in _NAMED.finditer(task):
        text = _QUOTED.sub("", match[1] or match[2] or match[3] or match[4])
        names += [
            name
            for name in _DOTTED.findall(text)
            if len(name.rpartition(".")[2]) >= 3 and not language_of(name)
        ]
    found: list[tuple[str, Definition]] = []
    for name in dict.fromkeys(names):
        parts = name.split(".")
        for start in range(len(parts)):  # ``pkg.mod.Class.method``: the longest tail known
            defined = tree.by_name.get(".".join(parts[start:]), [])
            if defined:
                break
        mine = [pair for pair in defined if pair[0] in files] or defined
        if 0 < len({rel for rel, _ in mine}) <= 3:
            found += mine[:3]
    return list(dict.fromkeys(files)), found


def _lexical(
    tree: Tree, task: str, failure: str | None, named: list[str]
) -> list[tuple[float, str, Definition]]:
    """The definitions the task's words point at, best first, with their scores."""
    wanted = query(task)
    if failure:
        for word in words(failure):
            wanted.setdefault(word, 1)
    if not wanted:
        return []
    order = tree.files
    everything: list[Doc] | None = None  # a big tree's definitions, by name and path only
    hit: set[tuple[str, int]] = set()  # of them, those that share a word with the task
    if len(order) > READ_FILES:  # which to read: those whose names and paths hold its words
        names = [(rel, d) for rel, defs in tree.defs.items() for d in defs if not _dunder(d[0])]
        everything = [Doc(rel, d[0], None) for rel, d in names]
        best_file: dict[str, float] = {}
        for (rel, d), score in zip(names, scores(wanted, everything), strict=True):
            if score > 0:
                best_file[rel] = max(best_file.get(rel, 0.0), score)
                hit.add((rel, d[3]))
        first = sorted(
            {*best_file, *named},
            key=lambda rel: (rel not in named, is_test(rel), -best_file.get(rel, 0)),
        )
        order = first + [rel for rel in order if rel not in best_file and rel not in named]
    spent = 0
    read = 0
    for rel in order:
        if rel not in tree.defs:
            continue  # not parsed yet: a partial map's; it has no definitions to score
        spent += len(tree.text(rel) or "")
        read += 1
        if spent > READ_BYTES or read >= READ_FILES:
            break
    docs = []
    pairs = []
    for rel, defs in tree.defs.items():
        if rel in tree.generated:
            continue
        text = tree.texts.get(rel)
        lines = file_lines(text) if text is not None else None
        for d in defs:
            if _dunder(d[0]) or (
                lines is None and everything is not None and (rel, d[3]) not in hit
            ):
                continue  # (a big tree's definitions that share no word and were not read)
            docs.append(Doc(rel, d[0], _body(lines, d, defs) if lines is not None else None))
            pairs.append((rel, d))
    scored = sorted(
        (
            (score, rel, d)
            for score, (rel, d) in zip(scores(wanted, docs, everything), pairs, strict=True)
        ),
        key=lambda item: -item[0],
    )
    if not scored or scored[0][0] <= 0:
        return []
    floor = scored[0][0] * LEXICAL_FLOOR
    top = scored[0][0]
    return [(100.0 * s / top, rel, d) for s, rel, d in scored[:LEXICAL_MOST] if s >= floor]


def _dunder(name: str) -> bool:
    """``__all__``, ``__init__``: named by the language, not by what the code does."""
    return name.startswith("__") and name.endswith("__")


def _body(lines: list[str], definition: Definition, defs: list[Definition]) -> Counter[str]:
    """The words of a definition's lines; a class's own lines only (not its methods')."""
    first, last = definition[3], definition[4]
    own = range(first, last + 1)
    if definition[2] == "class":
        inner = {n for d in defs if first < d[3] and d[4] <= last for n in range(d[3], d[4] + 1)}
        own = [n for n in own if n not in inner]  # type: ignore[assignment]
    return Counter(words("\n".join(lines[n - 1] for n in own if n <= len(lines))))


@dataclass(order=True)
class _Candidate:
    priority: float
    order: int
    path: str = field(compare=False)
    definition: Definition = field(compare=False)
    named: bool = field(compare=False, default=False)
    whole: bool = field(compare=False, default=False)


class _Picker:
    """The definitions taken, most likely first, within ``chars``; what did not fit."""

    def __init__(self, tree: Tree, chars: int, skip: set[str]) -> None:
        self.tree, self.skip = tree, skip
        self.room = chars - len(HEADING) - len(LEAD) - 2 - LEFT_OUT_CHARS
        self.most = self.room // ONE_DEFINITION_SHARE
        self.heap: list[tuple[float, int, _Candidate]] = []
        self.count = 0
        self.taken: dict[str, list[tuple[int, int]]] = {}  # file -> line ranges, in order
        self.seen: set[tuple[str, int, int]] = set()
        self.left: list[tuple[str, Definition]] = []

    def push(
        self,
        priority: float,
        path: str,
        definition: Definition,
        named: bool = False,
        whole: bool = False,
    ) -> None:
        self.count += 1
        candidate = _Candidate(priority, self.count, path, definition, named, whole)
        heapq.heappush(self.heap, (-priority, self.count, candidate))

    def render(self) -> Pointed:
        while self.heap:
            _, _, candidate = heapq.heappop(self.heap)
            self._take(candidate)
        views = []
        for rel, ranges in self.taken.items():
            lines = file_lines(self.tree.texts[rel])
            for start, end in _merged(ranges):
                views += [f"--- {rel} ---", *self.tree.notes.get(rel, ())]
                views += numbered(lines[start - 1 : end], start)
                views.append(f"--- end {rel} ---")
        if not views:
            return Pointed(None)
        text = "\n".join([HEADING, LEAD, *views, *self._left_out()])
        shown = {rel: self.tree.digests[rel] for rel in self.taken}
        return Pointed(text, shown)

    def _take(self, candidate: _Candidate) -> None:
        rel, definition = candidate.path, candidate.definition
        key = (rel, definition[3], definition[4])
        if key in self.seen or rel in self.skip:
            return
        self.seen.add(key)
        text = self.tree.text(rel)
        if text is None:
            return
        lines = file_lines(text)
        start, end = _span(rel, lines, definition)
        if len(lines) <= SMALL_FILE_LINES or candidate.whole:
            start, end = 1, len(lines)
        ranges = self.taken.get(rel, [])
        if any(a <= start and end <= b for a, b in ranges):
            return  # shown already, inside another
        if candidate.whole and self._cost(rel, lines, 1, len(lines)) > min(self.room, self.most):
            start, end = _span(rel, lines, definition)
        cost = self._cost(rel, lines, start, end)
        if cost > self.room or cost > self.most:  # one long definition would crowd out many
            self.left.append((rel, definition))
            return
        self.room -= cost
        self.taken.setdefault(rel, []).append((start, end))
        if candidate.priority < CALLERS_FLOOR:
            return  # a weak match's calls are weaker still
        share = CALLEE_SHARE * candidate.priority
        for path, callee in self._callees(rel, lines[start - 1 : end], definition):
            self.push(share, path, callee)

    def _cost(self, rel: str, lines: list[str], start: int, end: int) -> int:
        shown = lines[start - 1 : end]
        header = 2 * len(rel) + 16
        return header + sum(len(line) + 8 for line in shown)

    def _callees(
        self, rel: str, body: list[str], definition: Definition
    ) -> list[tuple[str, Definition]]:
        """The definitions ``body`` calls: in its own file, else in one or two others."""
        found: list[tuple[str, Definition]] = []
        for name in dict.fromkeys(_CALL.findall("\n".join(body))):
            defined = self.tree.by_name.get(name, [])
            here = [pair for pair in defined if pair[0] == rel and pair[1] != definition]
            others = {path for path, _ in defined}
            pairs = here or (defined if 0 < len(others) <= 2 else [])
            found += [pair for pair in pairs if pair[1][2] != "class" or pair[0] == rel][:2]
            if len(found) >= CALLEES:
                break
        return found[:CALLEES]

    def _left_out(self) -> list[str]:
        rest = [(c.path, c.definition) for _, _, c in sorted(self.heap)]
        left = [
            (rel, d)
            for rel, d in dict.fromkeys([*self.left, *rest])
            if not any(a <= d[3] and d[4] <= b for a, b in self.taken.get(rel, []))
        ][:LEFT_OUT_NAMED]
        if not left:
            return []
        lines = [
            "(left out to keep this prompt short, most likely first; each READ_FILE shows one:"
        ]
        room = LEFT_OUT_CHARS + self.room - len(lines[0]) - 3
        for rel, d in left:
            line = f'  READ_FILE path="{rel}" symbol="{d[1]}"  (lines {d[3]}-{d[4]})'
            if len(line) + 1 > room:
                break
            room -= len(line) + 1
            lines.append(line)
        return [*lines, ")"] if len(lines) > 1 else []


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


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Line ranges in order, those that overlap or touch (a blank line or two apart) as one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 3:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
