"""Which definitions matter most: files as a graph (:mod:`.graph`), ranked as aider's repo
map ranks them.

The graph's edges carry each name's weight; a name the task mentions counts ten times more.
PageRank over that graph, with the random jumps going to the files the user named
(``--file``, ``@path``) and to the files that define a name the task mentions, when there
are some, ranks the files; a file's rank flows out along its edges to the definitions it
references. Definitions nobody else references follow, breadth first across folders (one
file of each folder, then the next of each), so a big tree's map shows its shape before it
shows three hundred siblings.

The sums run in C (``map``, ``itertools.accumulate`` over the edges in the graph's
order the graph keeps them in: each file's and each definition's incoming edges are one run), so a
tree of 10,000 files and 30,000 references ranks in a few tens of milliseconds.

Our own code (aider's ``repomap.py`` was read to learn the method: docs/prompts.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import accumulate, chain, compress, repeat
from operator import add, ge, lt, mul, sub, truediv
from posixpath import dirname

from codingagent.codemap.graph import Graph, paused_gc
from codingagent.codemap.tags import definitions_of

DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-6
FOCUS_NAME = 10.0  # a name the task mentions weighs this much more
FIRST_SORTED = 2000  # definitions ordered before the rest (a map of 8,192 tokens shows ~500)

Definition = tuple[str, str, str, int, int, str]  # as :class:`.tags.Definition` holds it
Ranked = list[tuple[str, Definition]]  # (file, definition), in order


def rank(
    graph: Graph, focus_files: Iterable[str] = (), focus_names: Iterable[str] = ()
) -> Iterator[tuple[str, Definition]]:
    """Every definition of the graph's files, most likely to matter first: made as it is
    taken, so a map that fills its budget early never orders the rest."""
    with paused_gc():
        names, focus, ranks, flow = _ranked(graph, focus_files, focus_names)
    nodes = graph.nodes
    placed: set[tuple[int, int]] = set()
    read = _Definitions(graph)
    # a definition the task names comes first, then by the rank that flows to it
    mentioned = [(n, name) for name in sorted(names) for n in graph.definers(name)]
    by_flow = ((graph.key_targets[key], graph.key_names[key]) for key in _by_flow(flow))
    for n, name in chain(mentioned, by_flow):
        for definition in read(n):
            if definition[0] == name and (n, definition[3]) not in placed:
                placed.add((n, definition[3]))
                yield nodes[n], definition
    yield from _rest(graph, read, ranks, placed, focus)


def _ranked(
    graph: Graph, focus_files: Iterable[str], focus_names: Iterable[str]
) -> tuple[set[str], list[int], list[float], list[float]]:
    """The task's names, the focus files, each file's rank, and the rank that flows to each
    key (a definition by name)."""
    names = set(focus_names)
    nodes = graph.nodes
    wanted = list(dict.fromkeys(focus_files))
    index = {path: n for n, path in enumerate(nodes)} if wanted else {}
    focus = [index[path] for path in wanted if path in index]
    # the files that define a name the task mentions are pointed at too
    pointed = {n for name in names for n in graph.definers(name)} - set(focus)
    focus += sorted(pointed, key=nodes.__getitem__)
    weights, totals = graph.weights, graph.totals
    hot = {name for name in names if graph.definers(name)}
    if hot:  # the task's names count FOCUS_NAME times: their edges, and their sources' totals
        weights, totals = list(weights), list(totals)
        ends, sources = graph.key_ends, graph.sources
        for key, name in enumerate(graph.key_names):
            if name in hot:
                for edge in range(ends[key - 1] if key else 0, ends[key]):
                    more = weights[edge] * (FOCUS_NAME - 1)
                    weights[edge] += more
                    totals[sources[edge]] += more
    sources = graph.sources
    shares = list(map(truediv, weights, map(totals.__getitem__, sources)))
    ranks = _pagerank(len(nodes), sources, shares, graph.node_ends, totals, focus)
    flow = _run_sums(map(mul, map(ranks.__getitem__, sources), shares), graph.key_ends)
    return names, focus, ranks, flow


def _by_flow(flow: list[float]) -> Iterator[int]:
    """The keys by the rank that flows to them, most first (equal ones in key order), the
    first ``FIRST_SORTED`` sorted before the rest: a map seldom takes more."""
    count = len(flow)
    keys = range(count)
    if count <= FIRST_SORTED:
        yield from sorted(keys, key=flow.__getitem__, reverse=True)
        return
    least = sorted(flow)[-FIRST_SORTED]  # floats alone sort fast
    yield from sorted(
        compress(keys, map(ge, flow, repeat(least))), key=flow.__getitem__, reverse=True
    )
    yield from sorted(
        compress(keys, map(lt, flow, repeat(least))), key=flow.__getitem__, reverse=True
    )


def _run_sums(values: Iterable[float], ends: list[int]) -> list[float]:
    """The sums of the consecutive runs of ``values`` that end at ``ends``."""
    prefix = list(accumulate(values, initial=0.0))
    at_end = list(map(prefix.__getitem__, ends))
    return list(map(sub, at_end, chain((0.0,), at_end)))


def _pagerank(
    count: int,
    sources: list[int],
    shares: list[float],
    ends: list[int],
    totals: list[float],
    focus: list[int],
) -> list[float]:
    """PageRank of ``count`` files: the edges (their ``sources`` and the ``shares`` of the
    source's rank they carry) ordered by their target, each target's run ending at ``ends``;
    jumps (and the rank of files without edges out) go to ``focus`` when given, else to
    every file alike."""
    if not count:
        return []
    damped = [share * DAMPING for share in shares]
    dangling = [n for n, total in enumerate(totals) if not total]
    jump = 1 / (len(focus) or count)
    ranks = [1 / count] * count
    for _ in range(ITERATIONS):
        spread = (DAMPING * sum(map(ranks.__getitem__, dangling)) + (1 - DAMPING)) * jump
        new = _run_sums(map(mul, map(ranks.__getitem__, sources), damped), ends)
        if focus:
            for node in focus:
                new[node] += spread
        else:
            new = list(map(add, new, repeat(spread, count)))
        change = sum(map(abs, map(sub, new, ranks)))
        ranks = new
        if change < TOLERANCE * count:  # networkx's test, which aider's map uses
            break
    return ranks


class _Definitions:
    """Each file's definitions, read from its text when first asked for."""

    def __init__(self, graph: Graph) -> None:
        self._texts = graph.texts
        self._read: dict[int, list[Definition]] = {}

    def __call__(self, node: int) -> list[Definition]:
        found = self._read.get(node)
        if found is None:
            found = self._read[node] = definitions_of(self._texts[node])
        return found


def _rest(
    graph: Graph,
    read: _Definitions,
    ranks: list[float],
    placed: set[tuple[int, int]],
    focus: list[int],
) -> Iterator[tuple[str, Definition]]:
    """The definitions no other file references: the named files' first, then breadth first
    across folders, each folder's files by rank."""
    nodes = graph.nodes
    by_folder: dict[str, list[int]] = defaultdict(list)
    chosen = set(focus)
    for n in sorted(range(len(nodes)), key=lambda n: (-ranks[n], nodes[n])):
        if n not in chosen:
            by_folder[dirname(nodes[n]) or "."].append(n)
    order = list(focus)
    queues = list(by_folder.values())
    depth = 0
    while queues:
        order += [queue[depth] for queue in queues]
        depth += 1
        queues = [queue for queue in queues if depth < len(queue)]
    for n in order:
        for definition in read(n):
            if (n, definition[3]) not in placed:
                yield nodes[n], definition
