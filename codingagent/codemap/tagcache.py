"""The tags of a workspace's source files, kept on disk by file size and change time, so a
map made again (the next session's first prompt, a READ_FILE map) reads only what changed.

Two files per workspace (:func:`cache_file`), in :mod:`marshal` form (built-in types only:
reading them runs no code): the tags (each file's size, ``st_mtime_ns`` and tags), and beside
them the last few maps made (``.maps``), under the stamp of the files they were made from (a
digest of every mapped file's path, size and time) and a key of the focus and the budget. A
map asked again for unchanged files is read back from the small file without loading the tags.
The sizes and times come from the workspace listing's own stat calls where it made them.

A file changed within ``RACY_NS`` of the cache being written is read again, as git does with
an index entry as new as the index: a change within the clock's resolution keeps the time.
A cache that cannot be read is rebuilt; one that cannot be written is only slower next time.
The definitions' text passes through the caller's ``redact`` before it is kept or shown, so a
key written into a signature line never reaches the disk in plain text (docs/secrets.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingagent.codemap.grammars import LOAD_MS, language_of
from codingagent.codemap.tags import file_tags

VERSION = 4  # 4: definitions kept redacted
MAX_FILE_BYTES = 1024 * 1024  # a bigger source file is generated or data: not mapped
RACY_NS = 100_000_000  # 0.1 s: coarser than any clock tick a Linux file time has
KEPT_MAPS = 8
# The cost of parsing, as measured (docs/prompts.md): ~0.1 ms a file (read, parsed, its
# definitions masked) and ~0.2 us a byte of source, besides loading the grammar
# (:data:`.grammars.LOAD_MS`).
PARSE_MS_PER_FILE = 0.1
PARSE_MS_PER_BYTE = 0.0002

# The tags of one file, in built-in types: (names defined, {referenced name: count}, the
# definitions as text: :func:`.tags.definitions_of`).
Plain = tuple[tuple[str, ...], dict[str, int], str]
Stat = tuple[int, int]  # size, st_mtime_ns


def cache_file(folder: Path, workspace: Path) -> Path:
    """The cache of ``workspace``'s tags in ``folder`` (its maps beside it, ``.maps``)."""
    key = hashlib.sha256(os.fsencode(str(workspace))).hexdigest()[:16]
    return folder / f"codemap-{key}.marshal"


@dataclass(frozen=True)
class Stamped:
    """The mapped files with their size and time, and the stamp of them all."""

    files: dict[str, Stat]
    stamp: str


def stamped(root: Path, paths: list[str], stats: Mapping[str, Stat] | None = None) -> Stamped:
    """The source files among ``paths`` (relative to ``root``) with their size and time:
    from ``stats`` where given, else from a stat call; too big and irregular ones left out."""
    known = stats or {}
    files: dict[str, Stat] = {}
    lines = []
    for rel in paths:
        if language_of(rel) is None:
            continue
        found = known.get(rel)
        if found is None:
            try:
                st = os.stat(root / rel, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            found = (st.st_size, st.st_mtime_ns)
        if found[0] > MAX_FILE_BYTES:
            continue
        files[rel] = found
        lines.append(f"{rel}\0{found[0]}\0{found[1]}\n")
    digest = hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape"))
    return Stamped(files, digest.hexdigest())


@dataclass(frozen=True)
class Tagged:
    """The tags of the files read (from the cache or parsed now), in the files' order."""

    tags: dict[str, Plain]
    parsed: int  # files parsed this time
    unread: int  # source files left unparsed: the parse budget ran out first
    # Whether a file parsed now defines or references other names than the cache said (or
    # was not in it): else only definitions' lines and text changed.
    reshaped: bool = True
    base: int = 0  # the cache these tags were read from (its ``written``; 0: none)
    written: int = 0  # the cache as they were left in it (``base`` when it was not written)
    # When every file parsed now references the names it did and defines them but for these
    # names (added or removed), those names; None otherwise (a file new, or gone unread).
    renamed: frozenset[str] | None = None


def tagged(
    root: Path,
    files: Stamped,
    cache: Path | None,
    redact: Callable[[str], str] = str,
    order: Callable[[list[str]], list[str]] | None = None,
    budget: float | None = None,
    *,
    whole: bool = True,
) -> Tagged:
    """The tags of ``files``, from ``cache`` where a file's size and time are unchanged; the
    others parsed (their definitions' text passed through ``redact``) in the ``order`` given
    until their estimated cost would pass ``budget`` ms (None: all of them). The estimate
    (a part per file, a part per byte, and each language's grammar loaded the first time it
    is met: ``LOAD_MS``) is no clock, so the same tree and cache give the same map on any
    machine and load.
    The cache is written back when it changed: with these files only when they are the
    ``whole`` tree's, else with the other files it held as well."""
    old = read_kept(cache)
    old_files: dict[str, tuple[int, int, Plain]] = old.get("files", {})
    racy = int(old.get("written", 0)) - RACY_NS
    known: dict[str, Plain] = {}
    todo: list[str] = []
    for rel, (size, mtime) in files.files.items():
        entry = old_files.get(rel)
        if entry is not None and entry[0] == size and entry[1] == mtime < racy:
            known[rel] = entry[2]
        else:
            todo.append(rel)
    spent = 0.0
    loaded: set[str | None] = set()  # the languages met: their grammar's cost counted
    parsed = 0
    reshaped = False
    renamed: set[str] | None = set()
    for rel in order(todo) if order is not None and budget is not None else todo:
        if budget is not None:
            language = language_of(rel)
            cost = PARSE_MS_PER_FILE + files.files[rel][0] * PARSE_MS_PER_BYTE
            if language not in loaded:
                cost += LOAD_MS.get(language or "", 0.0)
            if spent + cost > budget and spent:
                break
            spent += cost
            loaded.add(language)
        parsed += 1
        read = _read(root / rel, rel)
        entry = old_files.get(rel)
        if read is None or entry is None or entry[2][:2] != read[:2]:
            reshaped = True
            renamed = _renamed(renamed, entry[2] if entry else None, read)
        if read is not None:
            known[rel] = (read[0], read[1], redact(read[2]))
    tags = {rel: known[rel] for rel in files.files if rel in known}
    base = written = int(old.get("written", 0))
    if cache is not None and (parsed or len(tags) != len(old_files)):
        kept = {} if whole else {k: v for k, v in old_files.items() if k not in files.files}
        kept.update((rel, (*files.files[rel], plain)) for rel, plain in tags.items())
        written = write_kept(cache, {"files": kept})
    frozen = None if renamed is None else frozenset(renamed)
    return Tagged(tags, parsed, len(todo) - parsed, reshaped, base, written, frozen)


def _renamed(names: set[str] | None, before: Plain | None, now: Plain | None) -> set[str] | None:
    """``names`` with the names a file defines now and did not before, or the reverse; None
    when it references other names (or counts) than before, or was not read before or now."""
    if names is None or before is None or now is None or before[1] != now[1]:
        return None
    changed = set(before[0]).symmetric_difference(now[0])
    if [n for n in before[0] if n not in changed] != [n for n in now[0] if n not in changed]:
        return None  # the same names in another order or number: the edges' order changes
    return names | changed


def known_map(cache: Path | None, stamp: str, key: str) -> str | None:
    """A map made before from files with this ``stamp``, for this ``key``."""
    maps = read_kept(_maps(cache))
    if maps.get("stamp") != stamp:
        return None
    found = maps.get("maps", {}).get(key)
    return found if isinstance(found, str) else None


def keep_map(cache: Path | None, stamp: str, key: str, text: str) -> None:
    """Keep a map made from files with this ``stamp`` (the last ``KEPT_MAPS`` of them)."""
    if cache is None:
        return
    path = cache.with_suffix(".maps")
    maps = read_kept(path)
    kept: dict[str, str] = maps.get("maps", {}) if maps.get("stamp") == stamp else {}
    kept[key] = text
    while len(kept) > KEPT_MAPS:
        del kept[next(iter(kept))]
    write_kept(path, {"stamp": stamp, "maps": kept})


def _maps(cache: Path | None) -> Path | None:
    return None if cache is None else cache.with_suffix(".maps")


def _read(path: Path, rel: str) -> Plain | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    tags = file_tags(rel, data)
    return None if tags is None else tags.to_plain()


def read_kept(cache: Path | None) -> dict[str, Any]:
    """What :func:`write_kept` wrote to ``cache`` ({} when it is missing, damaged or of
    another version)."""
    if cache is None:
        return {}
    try:
        loaded = marshal.loads(cache.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(loaded, dict) or loaded.get("version") != VERSION:
        return {}
    return loaded


def write_kept(cache: Path, content: dict[str, Any] | bytes, head: bytes = b"") -> int:
    """Keep ``content`` (built-in types only, or already in marshal form after ``head``) in
    ``cache``; a failure only costs time. Written to a new file renamed over the old, never
    synced to the disk: a cache lost in a crash is made again, and a sync costs more than the
    map. Returns the ``written`` it holds (the time it was made, in ns; 0 when it could not
    be written)."""
    written = time.time_ns()
    if isinstance(content, dict):
        content = marshal.dumps({**content, "version": VERSION, "written": written})
    with contextlib.suppress(OSError, ValueError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(head)
                f.write(content)
            os.replace(tmp, cache)
            return written
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return 0
