"""Where the code a task points at is, by evidence (docs/prompts.md, "The code the task points
at"): every piece of evidence gives the definitions it points at a strength, :func:`rank`
weighs them into one score a definition, and :mod:`.pointed` fills its budget by it.

The evidence, each kind's strength at most 1:

- ``named``: the task names the definition as code (```parse_header```, ``Parser.parse``,
  ``load()``, ``snake_case``, ``camelCase``), or names its file by path;
- ``frame``: a frame of a traceback in the task, or of the check's failing output, stands in
  it (:mod:`.frames`); the deepest of a trace the most, error helpers (short definitions
  whose line there raises) counting after the frame that called them; and what made the
  values the deepest frame's line reads (:func:`.calls.feeders`), as a frame one below it;
- ``test_frame``: the same, in a test file: the failing tests and their helpers;
- ``words``: the task's words point at it (:mod:`codingagent.codemap.lexical`; the best 1),
  with the failing output's words and, as code, those of the failing tests' lines at their
  frames; the words of names the task uses that were found count as ``named``, not here,
  save those it also says besides them ("RFC 2822" beside ``fromRFC2822``);
  in a file that holds a definition named, framed or tested (``NEAR_STRENGTH``), ``near``
  times as much (the function handling a report's own word beside the one it names);
- ``tested``: the failing tests call it (a name called in a failing test's body, or around
  its frame when the test is a callback, that the code under test defines, and the
  constructor of a class they build; a method of a class the test files build before one
  of another class), by how many failing tests do, log-scaled, the most 1;
- ``shared``: the most failing tests reach it, ``REACH_DEPTH`` calls below what they call,
  when two or more reach anything (one fault that fails them all is there); as strong as it
  leaves out much of all they reach;
- and the call graph around all of these (:mod:`.calls`): a definition gets ``callee``
  times the score of each definition that calls it, over the square root of how many that
  calls, two calls deep (a class is not followed: its methods are, and its constructor).

A definition in a test file counts ``test_share`` of its score: tests are evidence of where
the bug is, rarely where it is. Which definitions a name stands for is
:meth:`.definitions.Tree.definers`'s; evidence for one copy of a definition a package ships
twice is evidence for the copy :mod:`.copies` chooses.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from codingagent.codemap.grammars import language_of
from codingagent.codemap.lexical import CODE_WORD, Doc, is_test, query, scores, words
from codingagent.prompt.pointing.calls import called, callees, feeders
from codingagent.prompt.pointing.copies import Copies, is_declaration
from codingagent.prompt.pointing.definitions import DEFINERS_MOST, Definition, Tree
from codingagent.prompt.pointing.frames import Frame, frames, raises
from codingagent.protocol.commands import file_lines

READ_BYTES = 1_000_000  # bytes of source read to score the definitions' bodies
READ_FILES = 200
LEXICAL_MOST = 24  # definitions the task's words point at, considered at most
LEXICAL_FLOOR = 0.2  # ... those scoring at least this share of the best
DEPTH_DECAY = 0.25  # a frame ``n`` above the deepest counts 1 / (1 + n * this)
CALLBACK_LINES = 4  # lines around a failing test's frame read, when no definition holds it
REACH_DEPTH = 3  # calls below what the failing tests call that ``shared`` follows
FOLLOWED_MOST = 60  # definitions whose calls are followed, the strongest first
NEAR_STRENGTH = 0.5  # a file holding a definition named, framed or tested this strongly
HELPER_LINES = 20  # a definition this short whose frame's line raises is an error helper

Key = tuple[str, int, int]  # a definition: its file, first line, last line

_NAMED = re.compile(
    r"`([^`\n]+)`|\b([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)\b"
    r"|\b([A-Za-z_$][\w$]*)\(|\b([A-Za-z$]*[a-z][\w$]*_[\w$]+|[a-z$]+[A-Z][\w$]*)\b"
)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")  # strings in code the task quotes: data, no names
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_PATH = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]{1,4})\b")


@dataclass(frozen=True)
class Weights:
    """How much each kind of evidence weighs (docs/prompts.md has the table)."""

    named: float = 3.0
    frame: float = 3.0
    test_frame: float = 1.0
    words: float = 1.0
    tested: float = 2.0
    shared: float = 2.0
    callee: float = 0.5
    near: float = 2.0
    test_share: float = 0.3


WEIGHTS = Weights()
KINDS = ("named", "frame", "test_frame", "words", "tested", "shared")


@dataclass
class Evidence:
    """What points at which definitions: each kind's strengths, what each definition
    calls, the lines frames and names point at, and the files the task names by path."""

    defs: dict[Key, Definition] = field(default_factory=dict)
    strength: dict[str, dict[Key, float]] = field(default_factory=dict)
    calls: dict[Key, list[Key]] = field(default_factory=dict)
    lines: dict[str, set[int]] = field(default_factory=dict)  # file -> lines pointed at
    files: list[str] = field(default_factory=list)  # files the task names by path
    names: set[str] = field(default_factory=set)  # names the task and the failing tests use
    resolved: set[str] = field(default_factory=set)  # names the task uses that were found
    copies: Copies | None = None  # which copy of a definition stands for all (.copies)

    def add(self, kind: str, rel: str, definition: Definition, strength: float) -> Key:
        if self.copies is not None:
            rel, definition = self.copies.preferred(rel, definition)
        key = (rel, definition[3], definition[4])
        self.defs[key] = definition
        found = self.strength.setdefault(kind, {})
        found[key] = min(1.0, max(found.get(key, 0.0), strength))
        return key


def gather(tree: Tree, task: str, failure: str | None) -> Evidence:
    """The evidence ``task`` and the check's failing output give, in ``tree``."""
    found = Evidence(copies=tree.copies)
    trace = frames(task) + frames(failure)
    found.files = _paths(tree, task)
    tree.copies.entry()  # what runs: its copies of definitions are known before any is chosen
    tree.copies.reach(_reached(tree, trace) | set(found.files))
    tests = _frames(tree, trace, found)
    _named(tree, task, found)
    _shared(tree, _tested(tree, tests, found), found)
    extra = " ".join(_at_frames(tree, trace))
    for score, rel, definition in _lexical(tree, task, failure, extra, found.files, found.resolved):
        found.add("words", rel, definition, score)
    _follow(tree, found)
    return found


def rank(found: Evidence, weights: Weights = WEIGHTS) -> list[tuple[float, Key]]:
    """The definitions by score, best first: each kind's strength times its weight, a share
    of their callers' (two calls deep), a test file's definitions ``test_share`` of it."""
    direct: defaultdict[Key, float] = defaultdict(float)
    near = {
        key[0]
        for kind in ("named", "frame", "tested")
        for key, strength in found.strength.get(kind, {}).items()
        if strength >= NEAR_STRENGTH and not is_test(key[0])
    }
    for kind in KINDS:
        weight = getattr(weights, kind)
        for key, strength in found.strength.get(kind, {}).items():
            close = weights.near if kind == "words" and key[0] in near else 1.0
            direct[key] += weight * strength * close
    total = defaultdict(float, direct)
    giving = {key: score for key, score in direct.items() if not is_test(key[0])}
    for _ in range(2):
        handed: defaultdict[Key, float] = defaultdict(float)
        for key, score in giving.items():
            below = found.calls.get(key, [])
            for callee in below:
                handed[callee] += weights.callee * score / math.sqrt(len(below))
        for key, score in handed.items():
            total[key] += score
        giving = handed
    ranked = [
        (score * (weights.test_share if is_test(key[0]) else 1.0), key)
        for key, score in total.items()
        if score > 0
    ]
    ranked.sort(key=lambda item: (-item[0], item[1]))
    return ranked


def _reached(tree: Tree, trace: list[Frame]) -> set[str]:
    """The files the frames reach: the code's, and what the test files among them import."""
    reached = set()
    for frame in trace:
        rel = tree.resolve(frame.path)
        if rel is not None and tree.text(rel, parse=True) is not None:
            reached.update(tree.imports(rel) if is_test(rel) else {rel})
    return {rel for rel in reached if not is_test(rel)}


def _frames(tree: Tree, trace: list[Frame], found: Evidence) -> list[Key]:
    """The definitions around the frames, as ``frame`` or ``test_frame`` evidence (the
    deepest of a trace the strongest; error helpers below it, short definitions whose line
    raises, after the frame that called them); the lines of the failing tests, to read
    their calls: a test definition's, or (a test written as a callback, ``test('...', () =>
    {...})``) the lines around its frame."""
    deepest_first = [f for f in trace if f.innermost_first] + [
        f for f in reversed(trace) if not f.innermost_first
    ]
    tests: list[Key] = []
    placed: list[tuple[Frame, str, list[Definition]]] = []
    for frame in deepest_first:
        rel = tree.resolve(frame.path)
        if rel is None or tree.text(rel, parse=True) is None:
            continue
        defs = tree.defs.get(rel, [])
        if frame.line is not None:
            found.lines.setdefault(rel, set()).add(frame.line)
            around = [d for d in defs if d[3] <= frame.line <= d[4]]
            picked = [min(around, key=lambda d: d[4] - d[3])] if around else []
            if not picked and is_test(rel):
                first = max(1, frame.line - CALLBACK_LINES)
                tests.append((rel, first, frame.line + CALLBACK_LINES))
        else:
            last = (frame.name or "").rpartition(".")[2]
            exact = [d for d in defs if d[1] == frame.name] or [d for d in defs if d[0] == last]
            picked = exact[:1]
        placed.append((frame, rel, picked))
    helpers = 0
    while helpers < len(placed) - 1 and _helper(tree, *placed[helpers]):
        helpers += 1
    if placed and not is_test(placed[helpers][1]):  # the code that called them, not a test
        placed.insert(0, placed.pop(helpers))
    for depth, (_, rel, picked) in enumerate(placed):
        kind = "test_frame" if is_test(rel) else "frame"
        for definition in picked:
            key = found.add(kind, rel, definition, 1.0 / (1.0 + DEPTH_DECAY * depth))
            if kind == "test_frame":
                tests.append(key)
    if placed and placed[0][0].line is not None and placed[0][2] and not is_test(placed[0][1]):
        frame, rel, (definition,) = placed[0]
        key = (rel, definition[3], definition[4])
        for fed, made in feeders(tree, key, definition, frame.line or 0):  # one frame below
            found.add("frame", fed[0], made, 1.0 / (1.0 + DEPTH_DECAY))
    return list(dict.fromkeys(tests))


def _helper(tree: Tree, frame: Frame, rel: str, picked: list[Definition]) -> bool:
    """Whether a frame is in an error helper: a short definition, not a test's, whose line
    there raises or builds an error (``throw error(state, message)``)."""
    if not picked or frame.line is None or is_test(rel):
        return False
    line = file_lines(tree.text(rel) or "")[frame.line - 1 : frame.line]
    return picked[0][4] - picked[0][3] < HELPER_LINES and any(raises(text) for text in line)


def _at_frames(tree: Tree, trace: list[Frame]) -> list[str]:
    """The lines of the test files the frames point at (a failing assertion), as written."""
    lines = []
    for frame in trace:
        rel = tree.resolve(frame.path)
        if rel is None or frame.line is None or not is_test(rel):
            continue
        text = tree.text(rel)
        if text is not None:
            lines += file_lines(text)[frame.line - 1 : frame.line]
    return lines


def _paths(tree: Tree, task: str) -> list[str]:
    """The files the task names by path."""
    files = []
    for match in _PATH.finditer(task):
        if language_of(match[1]) is not None:
            rel = tree.resolve(match[1])
            if rel is not None and tree.text(rel, parse=True) is not None:
                files.append(rel)
    return list(dict.fromkeys(files))


def _named(tree: Tree, task: str, found: Evidence) -> None:
    """The definitions the task names as code, and the first of each file it names."""
    names: list[str] = []
    for match in _NAMED.finditer(task):
        text = _QUOTED.sub("", match[1] or match[2] or match[3] or match[4])
        names += [
            name
            for name in _DOTTED.findall(text)
            if len(name.rpartition(".")[2]) >= 3 and not language_of(name)
        ]
    for name in dict.fromkeys(names):
        parts = name.split(".")
        tree.parse_module(parts[-1])
        for start in range(len(parts)):  # ``pkg.mod.Class.method``: the longest tail known
            tail = ".".join(parts[start:])
            defined = tree.definers(tail)
            if defined:
                break
        mine = [pair for pair in defined if pair[0] in found.files] or defined
        found.names.add(parts[-1])
        if mine:
            found.resolved.add(name)
        for rel, definition in mine[:DEFINERS_MOST]:
            found.add("named", rel, definition, 1.0)
    for rel in found.files:
        for definition in tree.defs.get(rel, [])[:1]:
            found.add("named", rel, definition, 1.0)


def _tested(tree: Tree, tests: list[Key], found: Evidence) -> list[set[Key]]:
    """What the failing tests call into the code under test, as ``tested`` evidence: each
    failing test's calls, split over the definitions a name stands for; a method of a class
    the test files build before a method of another class. What each test calls."""
    counts: defaultdict[Key, float] = defaultdict(float)
    each: list[set[Key]] = []
    built: set[str] = set()
    bodies = []
    for rel, first, last in tests:
        text = tree.text(rel) or ""
        for path in tree.imports(rel, text):
            tree.text(path, parse=True)
        body = "\n".join(file_lines(text)[first - 1 : last])
        bodies.append((rel, text, body))
        built.update(name for name in called(text) if name[:1].isupper())
    for rel, text, body in bodies:
        each.append(set())
        for name in called(body):
            pairs = [p for p in tree.definers(name, rel, text) if not is_test(p[0])]
            if not pairs:
                continue
            found.names.add(name)
            mine = [p for p in pairs if p[1][1].rpartition(".")[0] in built] or pairs
            for path, definition in mine:
                made = tree.constructor(path, definition)  # building a class runs it
                for what in (definition, made) if made else (definition,):
                    key = found.add("tested", path, what, 0.0)
                    counts[key] += 1.0 / len(mine)
                    each[-1].add(key)
    if counts:
        most = math.log1p(max(counts.values()))
        for key, count in counts.items():
            found.strength["tested"][key] = math.log1p(count) / most
    return each


def _shared(tree: Tree, each: list[set[Key]], found: Evidence) -> None:
    """What the most failing tests reach (``REACH_DEPTH`` calls below what they call), as
    ``shared`` evidence, when two or more reach any: one fault that fails them all is
    there. Its strength is how much of all they reach it leaves out."""
    below: dict[tuple[Key, int], set[Key]] = {}

    def reach(key: Key, depth: int) -> set[Key]:
        if (key, depth) not in below:
            below[(key, depth)] = {key}
            if depth and found.defs[key][2] != "class":
                for callee, definition in callees(tree, key, found.defs[key]):
                    found.defs.setdefault(callee, definition)
                    below[(key, depth)] |= reach(callee, depth - 1)
        return below[(key, depth)]

    reached = [set().union(*(reach(key, REACH_DEPTH) for key in keys)) for keys in each]
    reached = [keys for keys in reached if keys]
    counts = Counter(key for keys in reached for key in keys)
    if len(reached) < 2:
        return
    most = max(counts.values())
    shared = [key for key, count in counts.items() if count == most]
    for key in shared:
        found.add("shared", key[0], found.defs[key], 1 - len(shared) / len(counts))


def _follow(tree: Tree, found: Evidence) -> None:
    """What the definitions the evidence points at call, two calls deep (their callees are
    followed too), the strongest first, at most ``FOLLOWED_MOST``."""
    strongest: defaultdict[Key, float] = defaultdict(float)
    for kind in KINDS:
        for key, strength in found.strength.get(kind, {}).items():
            strongest[key] = max(strongest[key], strength)
    ordered = sorted(strongest, key=lambda key: (-strongest[key], key))[:FOLLOWED_MOST]
    wave = [key for key in ordered if not is_test(key[0])]
    for _ in range(2):
        after: list[Key] = []
        for key in wave:
            if key in found.calls:
                continue
            below = callees(tree, key, found.defs[key])
            found.calls[key] = [callee for callee, _ in below]
            for callee, definition in below:
                found.defs.setdefault(callee, definition)
                after.append(callee)
        wave = list(dict.fromkeys(after))[:FOLLOWED_MOST]


def _lexical(
    tree: Tree, task: str, failure: str | None, extra: str, files: list[str], named: set[str]
) -> list[tuple[float, str, Definition]]:
    """The definitions the task's words point at (with the failing output's, and the
    failing tests' lines at their frames as code), best first, each as a share of the
    best."""
    wanted = query(task)
    parts = {part for name in named for part in name.split(".")}
    said = set(words(_IDENTIFIER.sub(lambda m: " " if m[0] in parts else m[0], task)))
    for word in {word for name in named for word in words(name)}:
        if wanted.get(word) == CODE_WORD:  # the task's names found: evidence of their own,
            del wanted[word]  # not words ...
            if word in said:  # ... but what it says besides them is
                wanted[word] = 1
    for word in words(extra):
        wanted[word] = max(wanted.get(word, 0), CODE_WORD)
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
            {*best_file, *files},
            key=lambda rel: (rel not in files, is_test(rel), -best_file.get(rel, 0)),
        )
        order = first + [rel for rel in order if rel not in best_file and rel not in files]
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
        if rel in tree.generated or is_declaration(rel):
            continue
        text = tree.texts.get(rel)
        lines = file_lines(text) if text is not None else None
        for d in defs:
            if _dunder(d[0]) or (
                lines is None and everything is not None and (rel, d[3]) not in hit
            ):
                continue  # (a big tree's definitions that share no word and were not read)
            if tree.copies.preferred(rel, d, read=False)[0] != rel:
                continue  # another copy of it stands for it
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
    top = scored[0][0]
    floor = top * LEXICAL_FLOOR
    return [(s / top, rel, d) for s, rel, d in scored[:LEXICAL_MOST] if s >= floor]


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
