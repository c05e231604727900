"""Which definitions matter most: files as a graph, ranked as aider's repo map ranks them.

Each file that references a name another file defines gets an edge to it, weighted by how
often it names it (the square root of the count) and by the name: a name the task mentions
counts ten times, a long descriptive one (``snake_case`` or ``camelCase``, 8 characters or
more) ten times, a private one (``_name``) a tenth, one defined in more than five files a
tenth. PageRank over that graph, with the random jumps going to the files the user named
(``--file``, ``@path``) and to the files that define a name the task mentions, when there
are some, ranks the files; a file's rank
flows out along its edges to the definitions it references. Definitions nobody else
references follow, breadth first across folders (one file of each folder, then the next of
each), so a big tree's map shows its shape before it shows three hundred siblings.

Our own code (aider's ``repomap.py`` was read to learn the method: docs/prompts.md).
"""

from __future__ import annotations

import math
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from posixpath import dirname

from codingagent.codemap.tagcache import Plain
from codingagent.codemap.tags import definitions_of

DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-6
_WORDY = re.compile(r"^[A-Za-z_][a-z0-9]*(?:[A-Z_][a-z0-9]+)+$|^[a-z0-9]+(?:_[a-z0-9]+)+$")

Definition = tuple[str, str, str, int, int, str]  # as :class:`.tags.Definition` holds it
Ranked = list[tuple[str, Definition]]  # (file, definition), in order


def rank(
    files: dict[str, Plain], focus_files: Iterable[str] = (), focus_names: Iterable[str] = ()
) -> Iterator[tuple[str, Definition]]:
    """Every definition of ``files``, most likely to matter first: made as it is taken, so a
    map that fills its budget early never orders the rest."""
    names = set(focus_names)
    focus = [f for f in focus_files if f in files]
    nodes = list(files)
    index = {path: n for n, path in enumerate(nodes)}
    defined: dict[str, list[int]] = defaultdict(list)
    for n, (defined_names, _, _) in enumerate(files.values()):
        for name in defined_names:
            defined[name].append(n)
    # the files that define a name the task mentions are pointed at too
    pointed = {nodes[n] for name in names for n in defined.get(name, ())}
    focus += sorted(pointed - set(focus))
    edges: list[dict[int, float]] = [{} for _ in nodes]  # referencer -> {definer: weight}
    used: list[tuple[int, tuple[int, str], float]] = []  # (referencer, (definer, name), weight)
    weights: dict[str, float] = {}
    sqrt = math.sqrt
    for source, (_, references, _) in enumerate(files.values()):
        out = edges[source]
        for name, count in references.items():
            definers = defined.get(name)
            if definers is None:
                continue
            weight = weights.get(name)
            if weight is None:
                weight = weights[name] = _weight(name, len(definers), names)
            weight *= sqrt(count) if count > 1 else 1.0
            for target in definers:
                if target != source:
                    out[target] = out.get(target, 0.0) + weight
                    used.append((source, (target, name), weight))
    ranks = _pagerank(len(nodes), edges, [index[f] for f in focus])
    share = [
        rank / total if (total := sum(out.values())) else 0.0
        for rank, out in zip(ranks, edges, strict=True)
    ]
    flow: dict[tuple[int, str], float] = defaultdict(float)
    for source, key, weight in used:
        flow[key] += share[source] * weight
    # a definition the task names comes first, then by the rank that flows to it
    mentioned = [(n, name) for name in sorted(names) for n in defined.get(name, ())]
    order = sorted(flow, key=flow.__getitem__, reverse=True)
    placed: set[tuple[str, int]] = set()
    read = _Definitions(files)
    for n, name in [*mentioned, *order]:
        path = nodes[n]
        for definition in read(path):
            if definition[0] == name and (path, definition[3]) not in placed:
                placed.add((path, definition[3]))
                yield path, definition
    yield from _rest(files, read, dict(zip(nodes, ranks, strict=True)), placed, focus)


def _weight(name: str, definers: int, focus_names: set[str]) -> float:
    weight = 1.0
    if name in focus_names:
        weight *= 10
    if len(name) >= 8 and _WORDY.match(name):
        weight *= 10
    if name.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


def _pagerank(count: int, edges: list[dict[int, float]], focus: list[int]) -> list[float]:
    """PageRank of ``count`` nodes with weighted edges; jumps (and the rank of nodes without
    edges out) go to ``focus`` when given, else to every node alike."""
    if not count:
        return []
    links = []  # (source, [(target, damped share of the source's rank)])
    dangling = []
    for source, out in enumerate(edges):
        total = sum(out.values())
        if total:
            scale = DAMPING / total
            links.append((source, [(target, weight * scale) for target, weight in out.items()]))
        else:
            dangling.append(source)
    jump = [0.0] * count
    for node in focus or range(count):
        jump[node] = 1 / (len(focus) or count)
    ranks = [1 / count] * count
    for _ in range(ITERATIONS):
        spread = DAMPING * sum([ranks[node] for node in dangling]) + (1 - DAMPING)
        new = [spread * share for share in jump]
        for source, targets in links:
            rank = ranks[source]
            for target, share in targets:
                new[target] += rank * share
        change = sum(map(abs, map(operator.sub, new, ranks)))
        ranks = new
        if change < TOLERANCE * count:  # networkx's test, which aider's map uses
            break
    return ranks


class _Definitions:
    """Each file's definitions, read from its text when first asked for."""

    def __init__(self, files: dict[str, Plain]) -> None:
        self._files = files
        self._read: dict[str, list[Definition]] = {}

    def __call__(self, path: str) -> list[Definition]:
        found = self._read.get(path)
        if found is None:
            found = self._read[path] = definitions_of(self._files[path][2])
        return found


def _rest(
    files: dict[str, Plain],
    read: _Definitions,
    ranks: dict[str, float],
    placed: set[tuple[str, int]],
    focus: list[str],
) -> Iterator[tuple[str, Definition]]:
    """The definitions no other file references: the named files' first, then breadth first
    across folders, each folder's files by rank."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for path in sorted(files, key=lambda path: (-ranks.get(path, 0.0), path)):
        if path not in focus:
            by_folder[dirname(path) or "."].append(path)
    order = list(focus)
    queues = list(by_folder.values())
    depth = 0
    while queues:
        order += [queue[depth] for queue in queues]
        depth += 1
        queues = [queue for queue in queues if depth < len(queue)]
    for path in order:
        for definition in read(path):
            if (path, definition[3]) not in placed:
                yield path, definition
