"""The secrets written in the workspace's files, source code included: found before the first
command, so that a command cannot print one in disguise before it was ever shown
(docs/secrets.md, 'Learning before the first command').

:func:`scan` takes the files as (path, posix path in the workspace, ``os.stat_result``), from
:func:`walk` or from the turn's shared walk (``codingagent/workspace/tree.py``), and tells for
each what secrets it holds. What a file holds is cached in memory (never on disk: the cache
holds the secrets) by its path, size and modification time, so a scan after the first reads
only the files changed since. Another process (the next ``codingagent step``) starts from the
record :func:`keep_clean_in` names: the path, size and time of each file that held nothing, and
nothing else, so no secret is written down and a file that held one is read again. A file is
read in one piece (up to :data:`MAX_BYTES`), and :mod:`.prefilter` finds the lines the rules
must look at, so the first scan of a big tree costs about what reading it does.

Source code (:data:`SOURCE_SUFFIXES`) is looked at for the secrets that are secrets wherever
they stand (:func:`codingagent.secrecy.rules.high_confidence`); other text files for all the
rules know (and a file with any is a secret file, :mod:`.secret_files`).
"""

from __future__ import annotations

import contextlib
import marshal
import math
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from codingagent.fsio import atomic_write
from codingagent.secrecy import prefilter, rules

# Source code and documentation: read by tests, imports and builds, never hidden.
SOURCE_SUFFIXES = frozenset(
    {
        *(".py", ".pyi", ".pyx", ".ipynb", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx"),
        *(".go", ".rs", ".java", ".kt", ".kts", ".scala", ".rb", ".php", ".pl", ".lua"),
        *(".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".m", ".sh", ".bash", ".zsh"),
        *(".md", ".rst", ".html", ".css", ".vue", ".svelte", ".r", ".jl", ".ex"),
    }
)
SKIP_DIRS = frozenset(
    {
        *(".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"),
        *(".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"),
        *("target", ".gradle", ".next", ".cache"),  # build output of Rust, Java, JS
    }
)
MAX_BYTES = 2 * 1024 * 1024  # files looked inside; bigger ones are secret files by name only
MAX_FILES = 50_000  # files a walk looks at; beyond, the rest of the tree is not seen
_BINARY_PROBE = 8192  # a NUL byte in the first bytes: a binary file, not looked inside


FileStat = tuple[str, str, os.stat_result]  # (path, posix path in the workspace, stat)


class Findings(NamedTuple):
    """What one file holds."""

    secrets: tuple[tuple[str, str], ...] = ()  # (secret, label)

    @property
    def holds(self) -> bool:
        return bool(self.secrets)


NOTHING = Findings()
_cache: dict[str, tuple[int, int, Findings]] = {}  # path -> size, modification time, what
# The record of clean files another process may start from: its path, and as read (path ->
# size, modification time; and the time before which a file's time can be trusted); whether
# a file was read since it was written, and when it was (time.monotonic()).
_record: list[Path] = []
_clean: list[tuple[dict[str, tuple[int, int]], int]] = [({}, 0)]
_added: list[bool] = [False]
_written_at: list[float] = [-math.inf]
# A scan writes the record at most this often (a watched session's turns follow each other
# quickly); the session loop writes what is left when it ends (:func:`keep_record`).
RECORD_EVERY = 10.0
# A file changed within this long of the record being written may have kept its time (a
# clock tick): it is read again, as git treats an index entry as new as the index.
RACY_NS = 100_000_000
_RECORD_VERSION = 1


def keep_clean_in(record: Path) -> None:
    """Start from, and keep up to date, the record of clean files at ``record`` (a file in the
    run folder's cache): a process that scans the same tree after this one reads only what
    changed, or what held a secret."""
    if _record and _record[0] == record:
        return
    _record[:] = [record]
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        kept = marshal.loads(record.read_bytes())
        files = kept.get("files") if isinstance(kept, dict) else None
        if isinstance(files, dict) and kept.get("version") == _RECORD_VERSION:
            # taken as it is (a scan looks a file up in it), not copied file by file
            _clean[0] = (files, int(kept["written"]) - RACY_NS)


def source(rel: str) -> bool:
    """Whether the file at ``rel`` is source code or documentation: its suffix (as
    ``os.path.splitext`` finds it, quicker)."""
    name = rel.rpartition("/")[2].lstrip(".")
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in SOURCE_SUFFIXES


def scan(files: Iterable[FileStat]) -> Iterator[tuple[FileStat, Findings]]:
    """Each file with what it holds; files bigger than :data:`MAX_BYTES` hold nothing looked
    for. Files not changed since the last scan (same size and modification time) are not
    read again."""
    recorded, racy = _clean[0]
    for each in files:
        path, rel, stat = each
        size = stat.st_size
        if size > MAX_BYTES:
            yield each, NOTHING
            continue
        known = _cache.get(path)
        if known is not None and known[0] == size and known[1] == stat.st_mtime_ns:
            yield each, known[2]
            continue
        clean = recorded.get(path)
        if clean is not None and clean[0] == size and clean[1] == stat.st_mtime_ns < racy:
            yield each, NOTHING  # as the record of clean files has it
            continue
        found = examine(path, source(rel), size)
        if len(_cache) >= 2 * MAX_FILES:
            _cache.clear()  # files deleted or renamed since: start again
        _cache[path] = (size, stat.st_mtime_ns, found)
        _added[0] = True  # read again: the record may change
        yield each, found
    if time.monotonic() - _written_at[0] >= RECORD_EVERY:
        keep_record()


def keep_record() -> None:
    """Write the clean files down for the next process, if a scan read a file since."""
    if not (_record and _added[0]):
        return
    _added[0] = False
    _written_at[0] = time.monotonic()
    recorded, racy = _clean[0]
    clean = (
        {}
        if len(recorded) > 2 * MAX_FILES
        else {path: kept for path, kept in recorded.items() if kept[1] < racy}
    )
    for path, (size, mtime, found) in _cache.items():
        if found.secrets:
            clean.pop(path, None)
        else:
            clean[path] = (size, mtime)
    content = {"version": _RECORD_VERSION, "written": time.time_ns(), "files": clean}
    with contextlib.suppress(OSError, ValueError):
        _record[0].parent.mkdir(parents=True, exist_ok=True)
        atomic_write(_record[0], marshal.dumps(content))


def forget() -> None:
    """Empty the cache and stop keeping a record (the next scan reads every file again)."""
    _cache.clear()
    _record.clear()
    _clean[0] = ({}, 0)
    _written_at[0] = -math.inf


def examine(path: str, is_source: bool, size: int = MAX_BYTES) -> Findings:
    """What the file at ``path`` (of about ``size`` bytes) holds, read now (not cached)."""
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return NOTHING
    try:
        data = os.read(fd, min(size, MAX_BYTES) + 1)  # (a buffer of the file's size)
        if len(data) > size:  # it grew since its size was taken
            data += os.read(fd, MAX_BYTES - len(data))
    except OSError:
        return NOTHING
    finally:
        os.close(fd)
    return secrets_in(data, is_source)


def secrets_in(data: bytes, is_source: bool) -> Findings:
    """What a file's content ``data`` holds (nothing if it is binary)."""
    if data.find(b"\0", 0, _BINARY_PROBE) >= 0:
        return NOTHING
    found: list[tuple[str, str]] = []
    for region in prefilter.regions(data, is_source):
        text = data[region.start : region.end].decode("utf-8", errors="replace")
        hits = rules.look(text, is_source, region.formats, region.assignments)
        found += [(text[each.start : each.end], each.label) for each in hits]
    return Findings(tuple(dict.fromkeys(found))) if found else NOTHING


def walk(root: Path) -> Iterator[FileStat]:
    """Each regular file under ``root`` (links not followed), outside :data:`SKIP_DIRS`, at
    most :data:`MAX_FILES` of them, in no particular order."""
    seen = 0
    folders = [(str(root), "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            listing = os.scandir(folder)
        except OSError:
            continue
        with listing:
            for entry in listing:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            folders.append((entry.path, f"{prefix}{entry.name}/"))
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield entry.path, prefix + entry.name, stat
                seen += 1
                if seen >= MAX_FILES:
                    return
