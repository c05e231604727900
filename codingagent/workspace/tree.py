"""One walk of the workspace a turn shares: every regular file's stat data, kept current.

A turn walks the tree once, when the first reader asks (the secret-file scan before a
RUN_COMMAND, or the next prompt's), and keeps the result on its :class:`Workspace` for the
rest of the turn: each write or delete of a file command re-reads that file's stat data, and a
command's overlay layer (:mod:`.layer`) says exactly which paths it touched.  A command whose
changes are found by stat scans, or a rollback, drops the walk: the next reader walks again.

Readers take it as an iterable of ``(path, posix path in the root, stat)`` of each regular
file, symlinks not followed, outside the folders named in ``skip`` (by name, at any depth),
in path order, at most ``limit`` files: what :func:`codingagent.secrecy.secret_files` reads.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

FileStat = tuple[str, str, os.stat_result]  # (path, posix path in the root, stat)


class Tree:
    """The regular files under ``root`` outside ``skip``, by their stat data."""

    def __init__(self, root: Path, skip: frozenset[str], limit: int) -> None:
        self.root = str(root)
        self.skip = skip
        self.limit = limit
        self.files: dict[str, os.stat_result] = {}
        self.walks = 0  # how often the tree was walked (tests count them)
        self.fresh = False

    def stats(self) -> Iterator[FileStat]:
        """Each file, walking the tree first if it is not fresh."""
        if not self.fresh:
            self.files = dict(self._walk("", self.limit))
            self.walks += 1
            self.fresh = True
        for rel in sorted(self.files):
            yield os.path.join(self.root, rel), rel, self.files[rel]

    def touched(self, paths: Iterable[str]) -> None:
        """These paths (files or folders, posix, in the root) may have changed: look again."""
        if not self.fresh:
            return
        for rel in paths:
            prefix = rel + "/"
            for known in [p for p in self.files if p == rel or p.startswith(prefix)]:
                del self.files[known]
            if self._skipped(rel):
                continue
            try:
                info = os.lstat(os.path.join(self.root, rel))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                self.files[rel] = info
            elif stat.S_ISDIR(info.st_mode) and rel.rpartition("/")[2] not in self.skip:
                self.files.update(self._walk(prefix, self.limit - len(self.files)))

    def drop(self) -> None:
        """Anything may have changed: the next reader walks again."""
        self.fresh = False

    def _skipped(self, rel: str) -> bool:
        return any(part in self.skip for part in rel.split("/")[:-1])

    def _walk(self, start: str, limit: int) -> Iterator[tuple[str, os.stat_result]]:
        seen = 0
        folders = [start]
        while folders and seen < limit:
            prefix = folders.pop()
            try:
                with os.scandir(os.path.join(self.root, prefix)) as found:
                    entries = sorted(found, key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in self.skip:
                            folders.append(prefix + entry.name + "/")
                    elif entry.is_file(follow_symlinks=False):
                        seen += 1
                        yield prefix + entry.name, entry.stat(follow_symlinks=False)
                except OSError:
                    continue
