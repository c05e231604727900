"""The workspace's source files and their definitions, as the code the task points at
(:mod:`.pointed`) reads them: from the code map's kept graph, or its tags cache (the map of the
same first prompt made them a moment before); when neither has any (no map, ``map_tokens =
0``, or no cache), parsed here within the first map's parse budget. A file a frame or a path
names is parsed when the cache has not read it yet; its text is read once, and its digest
kept (what the prompt shows of it is checked by EDIT_FILE against it).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from codingagent.codemap.firstread import first_order
from codingagent.codemap.graph import known_graph
from codingagent.codemap.tagcache import cache_file, read_kept, stamped, tagged
from codingagent.codemap.tags import definitions_of, file_tags
from codingagent.prompt.mapview import FIRST_MAP_PARSE_MS
from codingagent.secrecy.rules import redacted
from codingagent.workspace import Listing, PathRejected, Workspace
from codingagent.workspace.text import decoded

FILE_BYTES = 1024 * 1024
MINIFIED_LINE = 2000  # a file with a longer line is minified

Definition = tuple[str, str, str, int, int, str]  # as :func:`.tags.definitions_of` gives


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
        self.by_name: dict[str, list[tuple[str, Definition]]] = {}
        self._index(self.defs)
        by_base: dict[str, list[str]] = {}
        for rel in self.files:
            by_base.setdefault(rel.rpartition("/")[2], []).append(rel)
        self.by_base = by_base

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
    """Whether a file is minified (a bundle, not the source to fix): a line of more than
    ``MINIFIED_LINE`` bytes."""
    return any(len(line) > MINIFIED_LINE for line in data.split(b"\n"))
