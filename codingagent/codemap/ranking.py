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
import re
from collections import defaultdict
from collections.abc import Iterable
from posixpath import dirname

from codingagent.codemap.tagcache import Plain

DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-6
_WORDY = re.compile(r"^[A-Za-z_][a-z0-9]*(?:[A-Z_][a-z0-9]+)+$|^[a-z0-9]+(?:_[a-z0-9]+)+$")

Ranked = list[tuple[str, tuple[str, str, str, int, int, str]]]  # (file, definition) in order


def rank(
    files: dict[str, Plain], focus_files: Iterable[str] = (), focus_names: Iterable[str] = ()
) -> Ranked:
    """Every definition of ``files``, most likely to matter first."""
    names = set(focus_names)
    focus = [f for f in focus_files if f in files]
    defined: dict[str, list[str]] = defaultdict(list)
    for path, (definitions, _) in files.items():
        for name in {d[0] for d in definitions}:
            defined[name].append(path)
    # the files that define a name the task mentions are pointed at too
    focus += sorted({p for name in names for p in defined.get(name, ())} - set(focus))
    nodes = list(files)
    index = {path: n for n, path in enumerate(nodes)}
    edges: list[dict[int, float]] = [{} for _ in nodes]  # referencer -> {definer: weight}
    used: list[tuple[int, str, str, float]] = []  # (referencer, definer, name, weight)
    weights: dict[str, float] = {}
    for path, (_, references) in files.items():
        source = index[path]
        out = edges[source]
        for name, count in references.items():
            definers = defined.get(name)
            if not definers:
                continue
            weight = weights.get(name)
            if weight is None:
                weight = weights[name] = _weight(name, len(definers), names)
            weight *= math.sqrt(count)
            for definer in definers:
                if definer != path:
                    target = index[definer]
                    out[target] = out.get(target, 0.0) + weight
                    used.append((source, definer, name, weight))
    ranks = _pagerank(len(nodes), edges, [index[f] for f in focus])
    totals = [sum(out.values()) for out in edges]
    flow: dict[tuple[str, str], float] = defaultdict(float)
    for referencer, definer, used_name, weight in used:
        flow[(definer, used_name)] += ranks[referencer] * weight / totals[referencer]
    # a definition the task names comes first, then by the rank that flows to it
    order = sorted(flow.items(), key=lambda item: (item[0][1] not in names, -item[1], item[0]))
    mentioned = [(path, name) for name in sorted(names) for path in defined.get(name, ())]
    ordered: Ranked = []
    placed: set[tuple[str, int]] = set()
    for path, name in [*[k for k in mentioned if k not in flow], *(key for key, _ in order)]:
        for definition in files[path][0]:
            if definition[0] == name and (path, definition[3]) not in placed:
                placed.add((path, definition[3]))
                ordered.append((path, definition))
    file_ranks = dict(zip(nodes, ranks, strict=True))
    return ordered + _rest(files, file_ranks, placed, focus)


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
    links = []
    for source, out in enumerate(edges):
        total = sum(out.values())
        if total:
            links.append((source, [(target, weight / total) for target, weight in out.items()]))
    linked = {source for source, _ in links}
    jump = [0.0] * count
    for node in focus or range(count):
        jump[node] = 1 / (len(focus) or count)
    ranks = [1 / count] * count
    for _ in range(ITERATIONS):
        dangling = sum(r for node, r in enumerate(ranks) if node not in linked)
        spread = DAMPING * dangling + (1 - DAMPING)
        new = [spread * share for share in jump]
        for source, targets in links:
            rank = DAMPING * ranks[source]
            for target, share in targets:
                new[target] += rank * share
        change = sum(abs(a - b) for a, b in zip(new, ranks, strict=True))
        ranks = new
        if change < TOLERANCE * count:  # networkx's test, which aider's map uses
            break
    return ranks


def _rest(
    files: dict[str, Plain], ranks: dict[str, float], placed: set[tuple[str, int]], focus: list[str]
) -> Ranked:
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
    return [
        (path, definition)
        for path in order
        for definition in files[path][0]
        if (path, definition[3]) not in placed
    ]
