"""The files the user names up front: ``start --file PATH`` / ``resume --file PATH``
(repeatable; a glob matches as a ``.gitignore`` line does) and ``@path`` words in the task.

A word that starts with ``@`` names a workspace file or folder when one is called so (trailing
punctuation aside: ``@src/app.py,``). An e-mail address (``me@host.org``: the ``@`` follows a
letter) is not one; neither is a decorator or a handle (``@property``, ``@dataclass``,
``@alice``) unless the workspace holds a file or folder of that name. A ``@`` word with a
``/`` in it is meant as a path: if it names nothing, that is an error, as a ``--file`` that
matches nothing is, with the nearest names (:mod:`difflib`), before any session is made.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from posixpath import dirname

from codingagent.state import SessionError
from codingagent.workspace import PathRejected, Workspace

_AT = re.compile(r"(?<![\w.@/])@([^\s`'\"<>()\[\]{},;|]+)")
_TRAILING = ".,:;!?"
_GLOB = re.compile(r"[*?\[]")
LISTED = 200_000  # files of the listing the names are looked up in


def at_words(task: str) -> list[str]:
    """The ``@`` words of ``task`` that may name a path, without the ``@`` and trailing
    punctuation, in order, once each."""
    words = [match.group(1).rstrip(_TRAILING) for match in _AT.finditer(task)]
    return list(dict.fromkeys(w for w in words if w))


def named_paths(ws: Workspace, patterns: Iterable[str], task: str = "") -> list[str]:
    """The workspace paths (posix, from the root) the ``--file`` ``patterns`` and the task's
    ``@`` words name, in order, once each; a :class:`SessionError` naming every name that
    matches nothing, with the nearest names."""
    files = [path for path, _ in ws.list_files(limit=LISTED, sizes=0).entries]
    folders = sorted({folder for path in files for folder in _parents(path)})
    found: list[str] = []
    missing: list[str] = []
    for pattern in patterns:
        matched = _match(ws, pattern, files, folders)
        found += matched
        if not matched:
            missing.append(pattern)
    for word in at_words(task):
        matched = _match(ws, word, files, folders, glob=False)
        found += matched
        if not matched and "/" in word.strip("/"):
            missing.append(f"@{word}")
    if missing:
        raise SessionError(_missing(ws, missing, files + folders))
    return list(dict.fromkeys(found))


def _match(
    ws: Workspace, name: str, files: list[str], folders: list[str], glob: bool = True
) -> list[str]:
    if glob and _GLOB.search(name):
        import pathspec

        spec = pathspec.PathSpec.from_lines("gitignore", [name.removeprefix("./")])
        return [path for path in files if spec.match_file(path)]
    rel = _relative(ws, name)
    if rel is None:
        return []
    if rel in files or rel in folders or rel == ".":
        return [rel]
    try:  # a file the listing leaves out (ignored by .gitignore): named, so shown
        if ws.is_file(rel) or ws.is_dir(rel):
            return [ws.relpath(rel)]
    except (OSError, PathRejected):
        return []
    return []


def _relative(ws: Workspace, name: str) -> str | None:
    name = name.strip()
    if not name:
        return None
    if name.startswith("/"):
        try:
            return ws.relpath(name)
        except (OSError, PathRejected):
            return None
    name = re.sub(r"^(\./)+", "", name).rstrip("/")
    return name or "."


def _parents(path: str) -> Iterable[str]:
    folder = dirname(path)
    while folder:
        yield folder
        folder = dirname(folder)


def _missing(ws: Workspace, names: list[str], known: list[str]) -> str:
    lines = []
    for name in names:
        near = difflib.get_close_matches(name.lstrip("@").strip("/"), known, n=3, cutoff=0.5)
        hint = f" (nearest: {', '.join(near)})" if near else ""
        lines.append(f"'{name}'{hint}")
    return f"No file or folder in the workspace {ws.root} matches {'; '.join(lines)}"
