"""The sandbox the LLM's file commands run in: one path guard, listing, read, write, delete.

- :mod:`.pathguard`: the path guard, the one place an untrusted path is turned into something
  to act on, and the reasons a path is rejected (the texts the LLM is shown).
- :mod:`.listing`: the files the LLM is shown; :mod:`.gitignore`: what the ignore files hide.
- :mod:`.files`: status, read, write, delete; :mod:`.preimage`: what undo puts back;
  :mod:`.snapshot`: stat scans of what a RUN_COMMAND changed; :mod:`.layer`: what a command
  run on an overlay changed, and its commit.

:mod:`.autorun` finds files a turn left that would run code for the user; :mod:`.choice`
refuses a workspace too broad; :mod:`.declared` reads the test command a project declares;
:mod:`.text` shows a file's bytes as text, saying when they are not UTF-8.
:class:`Workspace` ties them to one root; :meth:`Workspace.kept` lends its writes, for one
block, to what keeps a turn whole (a :class:`~.preimage.Keeper`: the turn's journal).

May import: the base (``fsio``, ``folders``, ``state``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from codingagent.workspace import files, layer, preimage, snapshot
from codingagent.workspace.listing import Listing, display_name, list_files
from codingagent.workspace.pathguard import Guard, PathRejected
from codingagent.workspace.preimage import Keeper, PreImage
from codingagent.workspace.tree import Tree

__all__ = ["Keeper", "Listing", "PathRejected", "PreImage", "Workspace", "display_name"]


class Workspace:
    """The folder the LLM works in, with the agent's own folders fenced off."""

    def __init__(self, root: Path, protected: Iterable[Path] = ()) -> None:
        self._guard = Guard(root, protected)
        self.root = self._guard.root
        # Handed the pre-image of every file just before it is written or deleted, and those
        # a reply's file commands will write, before the first runs (one durable record for
        # all): lent by :meth:`kept` for a turn's commands, so that a turn can be rolled back
        # or undone.
        self._keeper: Keeper | None = None
        # The one walk of the tree (:mod:`.tree`), made when first read, kept current by the
        # writes below: a Workspace lives for one turn (or one prompt) at most.
        self.tree = Tree(self._guard)
        # What each path, as given, really names (relpath): a file command's writes and deletes
        # never make a symlink nor change which folder a name leads to, so the answer holds
        # until a command ran or files were put back (forget_paths). Only for naming and
        # comparing paths: a file is acted on through the guard's walk, made each time.
        self._real: dict[str, str] = {}

    @contextmanager
    def kept(self, keeper: Keeper | None) -> Iterator[None]:
        """For the block, every write and delete hands ``keeper`` its file's pre-image first
        (:meth:`will_write`: those of several files at once); None: nothing is kept."""
        self._keeper = keeper
        try:
            yield
        finally:
            self._keeper = None

    @property
    def _before_change(self) -> Callable[[PreImage], None] | None:
        return self._keeper.record if self._keeper is not None else None

    def _touched(self, rel: str) -> None:
        if not self.tree.fresh:
            return  # not walked yet: the walk will see it
        try:
            self.tree.touched([self.relpath(rel)])
        except (OSError, PathRejected):
            self.tree.drop()

    def forget_paths(self) -> None:
        """A command ran (or files were put back): a path may name another file now."""
        self._real.clear()

    def resolve(self, rel: str, *, for_write: bool = False) -> Path:
        """The real path ``rel`` names inside the root, or :class:`PathRejected`."""
        return self._guard.resolve(rel, for_write=for_write)

    def relpath(self, rel: str) -> str:
        """The posix path, relative to the root, of the file ``rel`` really names."""
        real = self._real.get(rel)
        if real is None:
            real = self._real[rel] = self._guard.relpath(rel)
        return real

    def list_files(self, limit: int = 1000, sizes: int | None = None) -> Listing:
        """The regular files the LLM is shown: sorted, at most ``limit`` of them; the sizes
        of the first ``sizes`` met (None: all), the others UNSIZED."""
        return list_files(self.tree, self._guard, limit, sizes)

    def is_file(self, rel: str) -> bool:
        """Whether ``rel`` names an existing regular file (symlinks to one count)."""
        return files.is_file(self._guard, rel)

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` names an existing folder."""
        return files.is_dir(self._guard, rel)

    def file_size(self, rel: str) -> int:
        """The size of the regular file ``rel`` names, under the same rules as reading it."""
        return files.file_size(self._guard, rel)

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """The file's bytes, at most ``limit`` of them."""
        return files.read_bytes(self._guard, rel, limit)

    def open_bytes(self, rel: str) -> BinaryIO:
        """The regular file ``rel`` open for reading, under the same rules as reading it."""
        return files.open_bytes(self._guard, rel)

    def scan(
        self, skip: frozenset[str] = frozenset(), walk: frozenset[str] = frozenset()
    ) -> snapshot.Scan:
        """The tracked files and folders by stat data (:mod:`.snapshot`)."""
        return snapshot.scan(self._guard, skip, walk)

    def restore_dirs(self, created: list[str], deleted: list[str]) -> list[str]:
        """Remove ``created`` folders that are empty, make ``deleted`` ones again."""
        self.forget_paths()
        return snapshot.restore_dirs(self._guard, created, deleted)

    def read_layer(self, upper: Path) -> layer.Layer:
        """What a command's overlay layer ``upper`` changes here (:mod:`.layer`)."""
        return layer.read_layer(self._guard, upper)

    def commit_layer(
        self, upper: Path, changes: layer.Layer, each: Callable[[], None] = lambda: None
    ) -> None:
        """Move the layer ``upper`` into the workspace as ``changes`` says."""
        try:
            layer.commit(self._guard, upper, changes, each)
        finally:
            self.forget_paths()
            self.tree.touched([path for _, path in changes.steps])

    def will_write(self, rels: Iterable[str]) -> None:
        """Hand the keeper the pre-images of the files at ``rels`` (real relative paths) at
        once, before any is written: those a write would refuse, or too big to hold in
        memory, are left to the write (which hands the keeper its own)."""
        if self._keeper is None:
            return
        pres = []
        for rel in dict.fromkeys(rels):
            try:
                pre = files.preimage(self._guard, rel)
            except (OSError, PathRejected):
                continue  # the write itself will say why
            if pre is not None:
                pres.append(pre)
        if pres:
            self._keeper.record_all(pres)

    def exists_for_write(self, rel: str) -> bool:
        """Whether a write of ``rel`` would replace a file (False: create one); raises as the
        write would (a folder, a symlink, a hard-linked file, a forbidden path)."""
        return files.exists_for_write(self._guard, rel)

    def write_text(self, rel: str, text: str) -> bool:
        """Write ``text`` atomically, creating parent folders; True if the file is new."""
        created = files.write_text(self._guard, rel, text, self._before_change)
        self._touched(rel)
        return created

    def delete(self, rel: str) -> None:
        """Remove one file; folders are refused with :class:`IsADirectoryError`."""
        files.delete(self._guard, rel, self._before_change)
        self._touched(rel)

    def restore(self, pre: PreImage) -> None:
        """Put a file back as ``pre`` says: its bytes and mode, or absent; and clean up."""
        self.tree.drop()
        self.forget_paths()
        preimage.restore(self._guard, pre)
