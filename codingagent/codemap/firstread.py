"""Which files a map parses first when it cannot parse them all (docs/prompts.md, "The code
map"): a tree never seen has every file to parse, about a second for 10,000 files, so a first
prompt's map parses what its budget allows, in the order most likely to hold what the task
needs, and the tags cache keeps them for the maps after it.

The order, from cheap signals only (paths, sizes, times; no file is opened):

1. the files the user named (``--file``, ``@path``, and the files of a named folder);
2. files whose path shares a word with the task (``fix the retry in dispatching`` reads
   ``events/dispatch.py`` early), those sharing more first;
3. files changed within a week of the newest one (what the user works on), then the rest;
   within each, one file of each folder in turn (shallow folders first), so a partial map
   shows the tree's shape; a file over ``HUGE`` bytes (generated, vendored) comes last.

Everything here depends on the tree and the task only: the same tree, task and cache give the
same map.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from codingagent.codemap.tagcache import Stat

HUGE = 64 * 1024
RECENT_NS = 7 * 24 * 3600 * 10**9
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
MIN_WORD = 4  # shorter words (the, add, fix, api) say little about a path


def words_of(text: str) -> set[str]:
    """The lower-case words of ``text``, ``camelCase`` and ``snake_case`` split."""
    return {part.lower() for part in _PART.findall(text) if len(part) >= MIN_WORD}


def first_order(
    todo: list[str], stats: Mapping[str, Stat], focus: Iterable[str], task: str
) -> list[str]:
    """``todo`` (paths relative to the workspace) in the order a budgeted map parses them."""
    named = set(focus)
    task_words = words_of(task)
    # a path that holds a task word somewhere is split into words (few are)
    anywhere = (
        re.compile("|".join(map(re.escape, sorted(task_words)))).search if task_words else None
    )
    newest = max((stats[path][1] for path in todo if path in stats), default=0)
    recent = newest - RECENT_NS
    turn: dict[str, int] = {}  # how many files of each folder came before, in path order
    keyed = []
    for path in sorted(todo):
        folder, _, _ = path.rpartition("/")
        nth = turn.get(folder, 0)
        turn[folder] = nth + 1
        size, mtime = stats.get(path, (0, 0))
        shared = 0
        if anywhere is not None and anywhere(path.lower()):
            shared = len(task_words & words_of(path))
        tier = 0 if path in named else 1 if shared else 2 if mtime >= recent else 3
        keyed.append((tier, -shared, size > HUGE, nth, folder.count("/"), path))
    keyed.sort()
    return [key[-1] for key in keyed]
