"""The files as a graph of who references whom, made once per state of the tree and kept
beside the tags (docs/prompts.md, "The code map"): what :mod:`.ranking` needs for any task,
in flat lists of built-in types, so a new session's first map reads it back in a few
milliseconds instead of loading every file's tags and joining them again.

Each file that references a name another file defines has an edge to that file, one per
(name, defining file), weighted by the name (a long descriptive ``snake_case`` or
``camelCase`` name of 8 characters or more ten times, a ``_private`` one a tenth, one defined
in more than five files a tenth) and by the square root of how often the file names it. What
a task adds (its names count ten times more) is applied by the ranking, not kept here.

The edges are kept ordered by defining file, then by name as the file defines them, then by
referencing file: the order the ranking sums them in. Each definition's incoming edges are
one run (``key_ends``: where each run ends), and so are each file's (``node_ends``).
"""

from __future__ import annotations

import gc
import marshal
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path

from codingagent.codemap.tagcache import Plain, write_kept

_WORDY = re.compile(r"^[A-Za-z_][a-z0-9]*(?:[A-Z_][a-z0-9]+)+$|^[a-z0-9]+(?:_[a-z0-9]+)+$")
VERSION = 6  # 6: a file's edges by name
RENAMED_MAX = 16  # names added or removed at once that :func:`renamed` looks at; more: build


@dataclass(frozen=True)
class Graph:
    nodes: list[str]  # the files, in the order they were given
    texts: list[str]  # each file's definitions as text (:func:`.tags.definitions_of`)
    # a name -> the first file that defines it, and the others for the few names defined in
    # more than one (a dict of 30,000 lists takes longer to load than all the rest)
    defined_first: dict[str, int]
    defined_more: dict[str, list[int]]
    totals: list[float]  # each file's edges' weights summed
    # the edges, ordered by key: a key is a (defining file, name), keys ordered by file
    sources: list[int]  # each edge's referencing file
    weights: list[float]  # each edge's weight, before the task's names count
    key_names: list[str]  # each key's name
    key_targets: list[int]  # each key's defining file
    key_ends: list[int]  # where each key's edges end
    node_ends: list[int]  # where each file's incoming edges end

    def definers(self, name: str) -> list[int]:
        """The files that define ``name``, in the files' order."""
        more = self.defined_more.get(name)
        if more is not None:
            return more
        first = self.defined_first.get(name)
        return [] if first is None else [first]


def build(tags: dict[str, Plain]) -> Graph:
    """The graph of these files' tags (in their order)."""
    with paused_gc():
        return _build(tags)


def _build(tags: dict[str, Plain]) -> Graph:
    nodes = list(tags)
    plains = list(tags.values())
    defined: dict[str, list[int]] = {}
    referenced: dict[str, list[tuple[int, int]]] = {}  # name -> (file, how often), in order
    for n, plain in enumerate(plains):
        for name in plain[0]:
            found = defined.get(name)
            if found is None:
                defined[name] = [n]
            else:
                found.append(n)
    for n, plain in enumerate(plains):
        for name, count in plain[1].items():
            if name in defined:  # a name no file defines (a builtin, a library's) is no edge
                users = referenced.get(name)
                if users is None:
                    referenced[name] = [(n, count)]
                else:
                    users.append((n, count))
    sources: list[int] = []
    weights: list[float] = []
    totals = [0.0] * len(nodes)
    key_names: list[str] = []
    key_targets: list[int] = []
    key_ends: list[int] = []
    node_ends: list[int] = []
    named: dict[str, float] = {}
    sqrt, wordy = math.sqrt, _WORDY.match
    for target, plain in enumerate(plains):  # edges by defining file, then name
        # (by name, not by where in the file: a file whose definitions only moved about has
        # the graph it had, which renamed() and retexted() keep)
        for name in sorted(plain[0]):
            users = referenced.get(name)
            if users is None:
                continue
            weight = named.get(name)
            if weight is None:  # the name's weight (the module's docstring says which)
                weight = 10.0 if len(name) >= 8 and wordy(name) else 1.0
                if name[:1] == "_":
                    weight *= 0.1
                if len(defined[name]) > 5:
                    weight *= 0.1
                named[name] = weight
            before = len(sources)
            for source, count in users:
                if source != target:
                    edge = weight * sqrt(count) if count > 1 else weight
                    sources.append(source)
                    weights.append(edge)
                    totals[source] += edge
            if len(sources) > before:
                key_names.append(name)
                key_targets.append(target)
                key_ends.append(len(sources))
        node_ends.append(len(sources))
    texts = [plain[2] for plain in plains]
    defined_first = {name: found[0] for name, found in defined.items()}
    defined_more = {name: found for name, found in defined.items() if len(found) > 1}
    return Graph(
        nodes,
        texts,
        defined_first,
        defined_more,
        totals,
        sources,
        weights,
        key_names,
        key_targets,
        key_ends,
        node_ends,
    )


def known_graph(cache: Path | None, stamp: str) -> Graph | None:
    """The graph kept for files with this ``stamp``, if it is the one kept (its first line is
    read first, so another tree's graph is not loaded to be thrown away)."""
    return _kept(cache, lambda kept_stamp, _: kept_stamp == stamp)


def earlier_graph(cache: Path | None, tags: int) -> Graph | None:
    """The graph kept, whatever files it was made of, if it was made from the tags cache
    written at ``tags`` (ns): the tags the caller read, before its own changes."""
    return _kept(cache, lambda _, kept_tags: bool(tags) and kept_tags == str(tags))


def retexted(graph: Graph, tags: dict[str, Plain]) -> Graph:
    """``graph`` with the definitions' text of ``tags``: the graph :func:`build` makes of
    them when the files are the graph's and every file defines and references the names it
    did (an edit within a function's body), for much less."""
    return replace(graph, texts=[plain[2] for plain in tags.values()])


def renamed(graph: Graph, tags: dict[str, Plain], names: frozenset[str]) -> Graph | None:
    """``graph`` after files came to define ``names`` or stopped defining them, when none of
    those names is an edge, before or now (no file references one that another defines: a
    function just added, that nothing calls yet): the graph :func:`build` makes of ``tags``,
    for much less; None when one is an edge (build it)."""
    if len(names) > RENAMED_MAX or not names.isdisjoint(graph.key_names):
        return None
    plains = list(tags.values())
    first, more = dict(graph.defined_first), dict(graph.defined_more)
    for name in names:
        definers = [n for n, plain in enumerate(plains) for each in plain[0] if each == name]
        users = {n for n, plain in enumerate(plains) if name in plain[1]}
        if any(user != definer for user in users for definer in set(definers)):
            return None  # an edge from a file that references it to another that defines it
        first.pop(name, None)
        more.pop(name, None)
        if definers:
            first[name] = definers[0]
        if len(definers) > 1:
            more[name] = definers
    return replace(
        graph, texts=[plain[2] for plain in plains], defined_first=first, defined_more=more
    )


def keep_graph(cache: Path | None, stamp: str, graph: Graph, tags: int = 0) -> None:
    """Keep ``graph`` as the one made from files with this ``stamp``, from the tags cache
    written at ``tags`` (one graph is kept)."""
    if cache is not None:
        fields = tuple(getattr(graph, field.name) for field in dataclass_fields(graph))
        write_kept(_path(cache), marshal.dumps(fields), f"{VERSION}:{stamp}:{tags}\n".encode())


def _kept(cache: Path | None, wanted: Callable[[str, str], bool]) -> Graph | None:
    if cache is None:
        return None
    try:
        with open(_path(cache), "rb") as f:
            version, _, rest = f.readline(200).decode("ascii").strip().partition(":")
            stamp, _, tags = rest.partition(":")
            if version != str(VERSION) or not wanted(stamp, tags):
                return None
            return Graph(*marshal.loads(f.read()))
    except (OSError, ValueError, EOFError, TypeError):  # UnicodeDecodeError is a ValueError
        return None


def _path(cache: Path) -> Path:
    return cache.with_suffix(".graph")


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector paused while many small objects are made that hold no cycles
    (it would walk every tag of the tree several times over, for nothing)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
