"""The code map as the model reads it: the ranked definitions (:mod:`.ranking`) of the files
most likely to matter, each with its first line, numbered as READ_FILE numbers lines, grouped
by file, as many as fit in a budget of characters::

    src/core.py:
      12 | def run(job: Job) -> Result:
      40 | class Runner:
      52 |     def start(self) -> None:
    (212 more files with definitions not shown; READ_FILE path="src" map="true" maps a folder)

Made from the tags cache (:mod:`.tagcache`) and the graph kept beside it (:mod:`.graph`); a
map asked again for the same files, focus and budget is read back from it whole. A first map
of a tree never seen parses only what its budget allows (:mod:`.firstread`) and says so;
the cache keeps what it read, so the next map (a later session's first prompt, ``show
--full``) reads on from there; a prompt without a map parses nothing.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from codingagent.codemap.firstread import first_order
from codingagent.codemap.graph import (
    Graph,
    build,
    earlier_graph,
    keep_graph,
    known_graph,
    renamed,
    retexted,
)
from codingagent.codemap.ranking import Definition, Ranked, rank
from codingagent.codemap.tagcache import Stat, Tagged, keep_map, known_map, stamped, tagged

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass(frozen=True)
class CodeMap:
    text: str  # the map's lines, "" when no file has definitions
    shown: int  # files in the map
    parsed: int  # files read this time (not from the cache)
    unread: int = 0  # source files not parsed yet: the parse budget ran out (a partial map)


def code_map(
    root: Path,
    paths: list[str],
    budget: int,
    *,
    focus_files: Iterable[str] = (),
    focus_text: str = "",
    cache: Path | None = None,
    under: str = "",
    stats: Mapping[str, Stat] | None = None,
    redact: Callable[[str], str] = str,
    parse_ms: float | None = None,
) -> CodeMap:
    """The map of the source files among ``paths`` (under the folder ``under``, "" for all),
    within ``budget`` characters, ranked toward ``focus_files`` and the names ``focus_text``
    mentions; ``stats``: the sizes and times of files the caller has stat'ed; ``redact``: what
    hides secrets in definitions' text before it is kept or shown; ``parse_ms``: the estimated
    cost of the files it may parse (:mod:`.firstread`; None: all of them). A map that could
    not parse every file says so in its first line, and is not kept: the next one reads
    more."""
    base = under.strip("/")
    base = "" if base in ("", ".") else base + "/"
    one = base.rstrip("/")  # ``under`` may name one file
    files = stamped(root, [p for p in paths if p.startswith(base) or p == one], stats)
    focus = sorted(set(focus_files) & set(files.files))
    names = sorted(set(_WORD.findall(focus_text)))
    key = hashlib.sha256(repr((focus, names, budget, base)).encode()).hexdigest()[:24]
    known = known_map(cache, files.stamp, key)
    if known is not None:
        count, _, text = known.partition("\0")
        return CodeMap(text, int(count or 0), 0)
    whole = not base  # the whole tree's tags and graph are kept; a folder's add to them
    graph = known_graph(cache, files.stamp) if whole else None
    parsed = unread = 0
    if graph is None:
        order = functools.partial(first_order, stats=files.files, focus=focus, task=focus_text)
        made = tagged(root, files, cache, redact, order, parse_ms, whole=whole)
        parsed, unread = made.parsed, made.unread
        graph = _graph(made, cache) if whole else build(made.tags)
        if whole and not unread:
            keep_graph(cache, files.stamp, graph, made.written)
    with_definitions = sum(1 for text in graph.texts if text)
    lead = _partial(len(graph.nodes), len(files.files), base) if unread else ""
    room = budget - len(lead) - 1 if lead else budget
    text, shown = fit(rank(graph, focus, names), room, with_definitions, base)
    if lead:
        text = f"{lead}\n{text}" if text else lead
    else:
        keep_map(cache, files.stamp, key, f"{shown}\0{text}")
    return CodeMap(text, shown, parsed, unread)


def _graph(made: Tagged, cache: Path | None) -> Graph:
    """The graph of the whole tree's tags: the one kept with its definitions' text replaced
    when only text changed since (the same files, each with the names it had), or with
    definitions added or removed that are no edge (a function nothing calls yet), else made."""
    if (not made.reshaped or made.renamed) and not made.unread:
        earlier = earlier_graph(cache, made.base)
        if earlier is not None and earlier.nodes == list(made.tags):
            if not made.reshaped:
                return retexted(earlier, made.tags)
            assert made.renamed is not None
            patched = renamed(earlier, made.tags, made.renamed)
            if patched is not None:
                return patched
    return build(made.tags)


def _partial(read: int, total: int, base: str) -> str:
    folder = base.rstrip("/") or "."
    return (
        f"(a first look: the definitions of {read:,} of {total:,} source files, those most "
        f"likely to matter, read so far; each later map reads more, and READ_FILE "
        f'path="{folder}" map="true" reads them all)'
    )


def fit(
    ranked: Iterable[tuple[str, Definition]], budget: int, files: int, base: str = ""
) -> tuple[str, int]:
    """The map of the most definitions of ``ranked`` that fits in ``budget`` characters, and
    how many files it shows. The length of every prefix is counted in one pass (a file's
    name line when it first appears, each definition's line at the width of the largest line
    number so far, the closing note), so the map is rendered once."""
    seen: set[str] = set()
    body = widest = count = 0
    taken: Ranked = []
    for path, definition in ranked:
        new_file = path not in seen
        width = max(widest, len(str(definition[3])), 4)
        cost = len(path) + 2 if new_file else 0
        # every line re-padded to the new width: (width - old width) more per line so far
        grown = (width - max(widest, 4)) * count if widest else 0
        size = body + grown + cost + width + 3 + len(definition[5]) + 1
        note = len(_note(files, len(seen) + new_file, base))
        if size + note > budget:
            break
        body, widest, count = size, width, count + 1
        taken.append((path, definition))
        if new_file:
            seen.add(path)
    text, shown = render(taken, files, base)
    while taken and len(text) > budget:  # a line number's width counted short: one less
        taken.pop()
        text, shown = render(taken, files, base)
    return text, shown


def render(ranked: Ranked, files: int, base: str = "") -> tuple[str, int]:
    """The map's text for these definitions, and how many files it shows."""
    by_file: dict[str, list[tuple[int, str]]] = {}
    for path, definition in ranked:
        by_file.setdefault(path, []).append((definition[3], definition[5]))
    lines = []
    width = max((line for entries in by_file.values() for line, _ in entries), default=1)
    width = max(4, len(str(width)))
    for path, entries in by_file.items():
        lines.append(f"{path}:")
        lines += [f"{line:>{width}} | {signature}" for line, signature in sorted(set(entries))]
    note = _note(files, len(by_file), base)
    if note:
        lines.append(note)
    return "\n".join(lines), len(by_file)


def _note(files: int, shown: int, base: str) -> str:
    if files <= shown:
        return ""
    folder = base.rstrip("/") or "."
    if not shown:
        return f'({files:,} files with definitions; READ_FILE path="{folder}" map="true")'
    return (
        f"({files - shown:,} more files with definitions not shown; "
        f'READ_FILE path="{folder}" map="true" maps a folder)'
    )
