"""The workspace listing: the regular files the LLM is shown, and their sizes.

It is made from the workspace's one walk (:mod:`.tree`), which opens each folder from its
parent without following symlinks, like the guard; it leaves out ``.git``, the agent's
folders, SKIPPED_DIRS and what the ignore files ignore.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from codingagent.workspace.gitignore import Judge
from codingagent.workspace.pathguard import Guard, is_git
from codingagent.workspace.tree import Tree

UNSIZED = -1  # the size of a file listed without a stat (see ``list_files``' ``sizes``)

# Folders the listing never shows: they are large, generated, and useless to the LLM.
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".hypothesis",
    }
)


@dataclass(frozen=True)
class Listing:
    """The workspace's files as the LLM sees them."""

    entries: list[tuple[str, int]]  # (posix path relative to the root, size or UNSIZED), sorted
    omitted: int  # files left out by the cap
    # st_mtime_ns of the files stat'ed for their sizes (the code map's cache key, with the size)
    times: dict[str, int] = field(default_factory=dict, compare=False)


def display_name(name: str) -> str:
    """A file name as text the outbox can hold: undecodable bytes become ``\\xff`` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def list_files(tree: Tree, guard: Guard, limit: int = 1000, sizes: int | None = None) -> Listing:
    """The regular files the LLM is shown, from the workspace's walk ``tree``: sorted, at most
    ``limit`` of them; the sizes of the first ``sizes`` (None: all), the others UNSIZED (as
    are files the walk kept no stat data of).

    Symlinks are neither listed nor followed (the walk never does), so the listing never
    shows anything outside the root.  Left out: ``.git``, the agent's folders and
    SKIPPED_DIRS at any depth, and what the ``.gitignore`` files (nested ones too) and
    ``.git/info/exclude`` ignore; what is inside a folder left out is never looked at.
    ``omitted`` counts only the files the listing would show but for the cap: ignored and
    skipped files are not counted.
    """
    found: list[tuple[str, os.stat_result | None]] = []
    judges: dict[str, Judge | None] = {}  # folder shown -> its rules' judge
    shown_as: dict[str, str] = {}
    folders = tree.walked()
    for rel in sorted(folders):  # a folder comes after the one it is in
        if rel:
            outer, _, name = rel[:-1].rpartition("/")
            outer = outer + "/" if outer else ""
            if outer not in judges or _skipped(guard, rel[:-1]):
                continue
            judge = judges[outer]
            if judge is not None and judge.ignores_folder(name):
                continue
            shown_as[rel] = f"{shown_as[outer]}{display_name(name)}/"
        else:
            shown_as[rel] = ""
        rules = tree.rules.get(rel)
        judge = judges[rel] = None if rules is None else rules.judge(rel)
        shown = shown_as[rel]
        files = folders[rel]
        for name in sorted(files):  # (runs in order: the sort below mostly merges them)
            if judge is None or not judge.ignores_file(name):
                shown_name = name if name.isascii() else display_name(name)
                found.append((shown + shown_name, files[name]))
    found.sort()  # by path: no two are the same, so the stat data is never compared
    sized = len(found) if sizes is None else max(0, sizes)
    entries: list[tuple[str, int]] = []
    times: dict[str, int] = {}
    for n, (path, info) in enumerate(found[: max(0, limit)]):
        if info is None or n >= sized:
            entries.append((path, UNSIZED))
        else:
            entries.append((path, info.st_size))
            times[path] = info.st_mtime_ns
    return Listing(entries=entries, omitted=len(found) - len(entries), times=times)


def _skipped(guard: Guard, rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return is_git(name) or name in SKIPPED_DIRS or guard.is_agent_folder(rel)
