"""The workspace's source files and their definitions, as the code the task points at
(:mod:`.pointed`) reads them: from the code map's kept graph, or its tags cache (the map of the
same first prompt made them a moment before); when neither has any (no map, ``map_tokens =
0``, or no cache), parsed here within the first map's parse budget. A file a frame or a path
names is parsed when the cache has not read it yet, and so is a module a name the task uses
or a definition calls is named after (``format.js`` for ``format``); its text is read once,
and its digest kept (what the prompt shows of it is checked by EDIT_FILE against it).

Which definitions a name stands for (:meth:`Tree.definers`), where it is said: the caller's
own file's; else those of a file the caller imports (the module's name in an ``import``,
``from`` or ``require`` line; of several, the nearest); else those of at most three files;
else those of the file named after it; else none (too common a name to guess); a name
called bare (no ``obj.`` before it) never a method of a class (:mod:`.calls`). A file
imports another by its path (``require("./x.cjs")``, ``from .x import y``: that file) or,
failing that, by its module's name. Of copies of one definition (:mod:`.copies`: ``x.js``
and ``x.cjs``, ``es/lib/x.js`` and ``lib/x.js``, a bundle's and its source's) one; never a
declaration file's (``.d.ts``) or a minified one's.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from codingagent.codemap.firstread import first_order
from codingagent.codemap.graph import known_graph
from codingagent.codemap.tagcache import cache_file, read_kept, stamped, tagged
from codingagent.codemap.tags import definitions_of, file_tags
from codingagent.prompt.mapview import FIRST_MAP_PARSE_MS
from codingagent.prompt.pointing.copies import (
    Copies,
    Definition,
    imports,
    is_declaration,
    source_first,
)
from codingagent.secrecy.rules import redacted
from codingagent.workspace import Listing, PathRejected, Workspace
from codingagent.workspace.text import decoded

FILE_BYTES = 1024 * 1024
MINIFIED_LINE = 2000  # a file whose bytes are mostly in longer lines is minified
CONSTRUCTORS = ("__init__", "constructor")  # what building a class runs
DEFINERS_MOST = 3  # files that may define a name, when the file saying it imports none of them
_IMPORT = re.compile(r"^\s*(?:import|from)\b|\brequire\s*\(|^\s*export\b.*\bfrom\b")


class Tree:
    """The workspace's source files and their definitions, and the files read so far."""

    def __init__(
        self, ws: Workspace, listing: Listing, cache_dir: Path | None, task: str = ""
    ) -> None:
        self.ws = ws
        times = listing.times
        stats = {p: (s, times[p]) for p, s in listing.entries if p in times}
        files = stamped(ws.root, [path for path, _ in listing.entries], stats)
        self.files = list(files.files)
        self.texts: dict[str, str] = {}
        self.generated: set[str] = set()  # files read that are no source to fix: minified
        self.digests: dict[str, str] = {}
        # A line said under a file's views: that it is not UTF-8, as what it is shown
        self.notes: dict[str, tuple[str, ...]] = {}
        self.defs: dict[str, list[Definition]] = {}
        cache = cache_file(cache_dir, ws.root) if cache_dir is not None else None
        graph = known_graph(cache, files.stamp)
        if graph is not None:
            kept = dict(zip(graph.nodes, graph.texts, strict=True))
        else:
            old = read_kept(cache).get("files", {})
            kept = {
                rel: entry[2][2]
                for rel, entry in old.items()
                if files.files.get(rel) == (entry[0], entry[1])
            }
        if not kept and files.files:  # no map made them: parsed here, as a first map parses
            order = functools.partial(first_order, stats=files.files, focus=(), task=task)
            made = tagged(ws.root, files, cache, redacted, order, FIRST_MAP_PARSE_MS)
            kept = {rel: plain[2] for rel, plain in made.tags.items()}
        for rel in self.files:
            text = kept.get(rel)
            if text:
                self.defs[rel] = definitions_of(text)
        self.unread = [rel for rel in self.files if rel not in kept]
        self._unread_index: dict[str, list[str]] | None = None
        self.by_name: dict[str, list[tuple[str, Definition]]] = {}
        self._index(self.defs)
        by_base: dict[str, list[str]] = {}
        for rel in self.files:
            by_base.setdefault(rel.rpartition("/")[2], []).append(rel)
        self.by_base = by_base
        self.file_set = set(self.files)
        self._imports: dict[str, set[str]] = {}
        self._classes: dict[str, set[str]] = {}  # file -> its classes' qualified names
        self.copies = Copies(self)  # which copy of a definition to show

    def _index(self, defs: dict[str, list[Definition]]) -> None:
        for rel, found in defs.items():
            for definition in found:
                self.by_name.setdefault(definition[0], []).append((rel, definition))
                if definition[1] != definition[0]:
                    self.by_name.setdefault(definition[1], []).append((rel, definition))

    def text(self, rel: str, parse: bool = False) -> str | None:
        """The file's text (read once); with ``parse``, its definitions parsed when the
        cache had none (a file a frame or a path names: the others wait for the map)."""
        if rel in self.texts:
            if parse and rel not in self.defs:
                self._parse(rel, self.texts[rel].encode("utf-8", errors="surrogateescape"))
            return self.texts[rel]
        try:
            data = self.ws.read_bytes(rel, limit=FILE_BYTES + 1)
        except (OSError, PathRejected):
            return None
        if len(data) > FILE_BYTES or b"\0" in data[:8192] or _minified(data):
            self.generated.add(rel)
            return None
        self.digests[rel] = hashlib.sha256(data).hexdigest()
        found = decoded(data)
        text = self.texts[rel] = found.text
        if found.encoding is not None:
            self.notes[rel] = (f"({found.note})",)
        if parse and rel not in self.defs:
            self._parse(rel, data)
        return text

    def _parse(self, rel: str, data: bytes) -> None:
        tags = file_tags(rel, data)
        if tags is not None:
            self.defs[rel] = [d.as_tuple() for d in tags.definitions]
            self._index({rel: self.defs[rel]})

    def definers(
        self,
        name: str,
        rel: str | None = None,
        text: str | None = None,
        caller: Definition | None = None,
        bare: bool = False,
    ) -> list[tuple[str, Definition]]:
        """The definitions ``name`` stands for, said in ``rel`` (whose text is ``text``; by
        ``caller``, never itself; ``bare``: called on no object, so never a method of a
        class): its own file's; else those of a file it imports; else those of at most
        ``DEFINERS_MOST`` files (of copies of one definition, ``x.js`` and ``x.mjs``, the one
        :mod:`.copies` shows); else those of the file named after it (``format.js``); else
        none: too common a name to guess. Never a declaration file's or a minified file's."""
        defined = [
            pair
            for pair in self.by_name.get(name, [])
            if not is_declaration(pair[0])
            and pair[1] is not caller
            and not (bare and self.is_method(*pair))
            and self.text(pair[0]) is not None
        ]
        if not defined:
            return []
        if rel is not None:
            here = [pair for pair in defined if pair[0] == rel]
            if here:
                return here
            if text is not None:
                imported = self.imported(rel, text, {pair[0] for pair in defined})
                if imported:
                    return [pair for pair in defined if pair[0] in imported]
        defined = self.copies.one(defined)
        if len({path for path, _ in defined}) <= DEFINERS_MOST:
            return defined
        return [pair for pair in defined if module_name(pair[0]) == name]

    def is_method(self, rel: str, definition: Definition) -> bool:
        """Whether ``definition`` (in ``rel``) is a method: a definition of a class."""
        owner = definition[1].rpartition(".")[0]
        if not owner:
            return False
        if rel not in self._classes:
            self._classes[rel] = {d[1] for d in self.defs.get(rel, []) if d[2] == "class"}
        return owner in self._classes[rel]

    def constructor(self, rel: str, definition: Definition) -> Definition | None:
        """The constructor of a class (in ``rel``): what building it runs (``__init__``,
        ``constructor``); None when it has none of its own."""
        wanted = {f"{definition[1]}.{name}" for name in CONSTRUCTORS}
        made = [d for d in self.defs.get(rel, []) if d[1] in wanted]
        return made[0] if made and definition[2] == "class" else None

    def parse_module(self, name: str, text: str | None = None, rel: str = "") -> None:
        """The files of the module ``name`` (``format.js`` for ``format``) parsed when the
        map has not read them yet (a big tree's first map reads a part); with ``text`` (of
        the file ``rel``), only those it imports."""
        unread = [path for path in self._unread().get(name, []) if path not in self.defs]
        wanted = self.imported(rel, text, set(unread)) if text is not None and unread else unread
        for path in wanted:
            self.text(path, parse=True)

    def imports(self, rel: str, text: str | None = None) -> set[str]:
        """The files ``rel`` imports by path (:func:`.copies.imports`), read once."""
        if rel not in self._imports:
            text = self.text(rel) if text is None else text
            self._imports[rel] = imports(rel, text or "", self.file_set)
        return self._imports[rel]

    def imported(self, rel: str, text: str, paths: set[str]) -> set[str]:
        """Which of ``paths`` the file ``rel``, whose text is ``text``, imports: by path; else
        by module name in an import line (of several, the nearest to ``rel``)."""
        exact = self.imports(rel, text) & paths if rel else set()
        return exact or _imported(text, paths, rel)

    def _unread(self) -> dict[str, list[str]]:
        """The source files the map has not read, by module name (made once)."""
        if self._unread_index is None:
            self._unread_index = {}
            for rel in self.unread:
                if rel not in self.defs and not is_declaration(rel):
                    self._unread_index.setdefault(module_name(rel), []).append(rel)
        return self._unread_index

    def resolve(self, path: str) -> str | None:
        """The workspace file a path names (as a traceback wrote it: absolute, relative, in
        an installed copy), by the longest tail of folders it shares with one; None when
        two share the longest (``utils.py`` of a tree with two)."""
        path = path.replace("\\", "/").removeprefix("file://")
        root = self.ws.root.as_posix().rstrip("/") + "/"
        if path.startswith(root):
            path = path[len(root) :]
        while path.startswith("./"):
            path = path[2:]
        if path in self.defs or path in self.by_base.get(path.rpartition("/")[2], []):
            return path
        parts = path.split("/")
        best, length, tied = None, 0, False
        for rel in self.by_base.get(parts[-1], []):
            mine = rel.split("/")
            shared = 0
            while shared < min(len(mine), len(parts)) and mine[-1 - shared] == parts[-1 - shared]:
                shared += 1
            if shared > length:
                best, length, tied = rel, shared, False
            elif shared == length:
                tied = True
        return None if tied else best


def _minified(data: bytes) -> bool:
    """Whether a file is minified (a bundle, not the source to fix): most of its bytes in
    lines of more than ``MINIFIED_LINE`` bytes. A source with a long line or two (a table
    of Unicode ranges, an inlined data URL) is still a source."""
    long = sum(len(line) for line in data.split(b"\n") if len(line) > MINIFIED_LINE)
    return long * 2 > len(data)


def module_name(path: str) -> str:
    """The name a module is imported by: its file's, a package's folder's."""
    folder, _, name = path.rpartition("/")
    stem = name.split(".", 1)[0]
    if stem in ("__init__", "index") and folder:
        return folder.rpartition("/")[2]
    return stem


def _imported(text: str, paths: set[str], rel: str) -> set[str]:
    """Which of ``paths`` the file ``rel``, whose text is ``text``, imports (its module's name
    in an import line); of several, the nearest to ``rel``."""
    names = {path: module_name(path) for path in paths}
    found = set()
    for line in text.split("\n"):
        if not _IMPORT.search(line):
            continue
        for path, name in names.items():
            if name and re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", line):
                found.add(path)
    if len(found) > 1:  # ``utils`` of several packages: the one nearest
        return {min(found, key=lambda path: (-_shared(path, rel), source_first(path), path))}
    return found


def _shared(one: str, other: str) -> int:
    """How many folders two paths share from the root."""
    a, b = one.split("/"), other.split("/")
    n = 0
    while n < min(len(a), len(b)) - 1 and a[n] == b[n]:
        n += 1
    return n
