"""What a RUN_COMMAND changed, kept in the turn's journal like a file command's changes.

Two ways, behind the workspace's ``watch`` (docs/undo.md), chosen once per turn by asking the
shell whether its sandbox can run a command on an overlay (:meth:`Shell.layer_problem`).

**On an overlay** (the cost follows what the command changed, not the workspace's size):

1. before: an empty layer folder ``sessions/{id}/layer/``, then a ``command`` mark naming it
   (crash point ``snapshot``).  The command runs; the workspace is untouched, its writes land
   in the layer.  A kill or Ctrl-C from here on finds the open mark: the layer is thrown away.
2. after: the layer is read (:mod:`codingagent.workspace.layer`); each file it creates,
   changes or deletes gets an ordinary pre-image in the journal, read from the workspace,
   which still holds it, then the folders, then ``command-done``: one append (crash point
   ``captured``).  Only then is the layer moved into the workspace (crash point ``committed``
   after each step: a kill midway is rolled back from those pre-images) and removed.

**By stat scans** (no overlay here), around each command:

1. before: a stat scan; files moved since the shadow index (:mod:`.shadow`) was taken are read
   and stored, the index saved durably, then a ``command`` mark naming the index's digest is
   appended to the turn's ``preimages.jsonl`` (crash point ``snapshot``).
2. the command runs.  A kill or Ctrl-C from here on finds the open mark: the workspace is put
   back as the index says (:func:`.shadow.put_back`).
3. after: a second stat scan; files that moved are hashed, and each file the command created,
   changed (content or mode) or deleted gets an ordinary pre-image in the journal, from the
   shadow's copy, counted against the turn's cap (what is over it is named, and recorded as not
   kept); then the folders it made or removed, and the ``command-done`` mark, all in one append
   (crash point ``captured``).  Only then is the new index saved and unused objects removed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from codingagent.execute.context import CommandFailed
from codingagent.sandbox.backends import Sandbox
from codingagent.sandbox.shell import Shell
from codingagent.transaction.crashpoints import crash_point
from codingagent.transaction.journal import Journal
from codingagent.transaction.shadow import SHADOW, Index, Shadow
from codingagent.workspace import PathRejected, PreImage, Workspace
from codingagent.workspace.layer import discard
from codingagent.workspace.preimage import PREIMAGE_IN_MEMORY
from codingagent.workspace.snapshot import CommandChanges, moved

LAYER = "layer"  # a command's overlay layer, in the session's folder


def capture_way(sandbox: Shell | Sandbox, workspace: Path, session: Path) -> str | None:
    """How the changes of a session's commands are captured: None when on an overlay, else
    why not (then by stat scans); ``session`` is the session's folder.  For turns and
    ``doctor``: the sandbox backend decides, by its :meth:`Sandbox.layer_problem`."""
    return sandbox.layer_problem(workspace, session / LAYER)


def describe_capture(problem: str | None) -> str:
    """``doctor``'s line for :func:`capture_way`'s answer."""
    if problem is None:
        return "overlay: a command writes to a layer, moved into the workspace when it ends"
    return f"stat scans and a shadow copy of the workspace (no overlay: {problem})"


class Watch:
    """The workspace's ``watch`` during one turn: keeps what each command changes."""

    def __init__(self, ws: Workspace, journal: Journal, shell: Shell | None = None) -> None:
        self.ws = ws
        self.journal = journal
        session = journal.turn.folder.parent.parent
        self.shadow = Shadow(session / SHADOW, journal.preimage_cap)
        self.layer = session / LAYER
        self._shell = shell
        self._overlay: bool | None = None  # decided at the first command of the turn
        self._before = Index()
        self._digest = ""
        self._label = ""
        # What the commands' layers put into the workspace (a folder stands for all below it),
        # for the turn's look for files that run code (workspace/autorun.py); None once a
        # command was captured by scans, which do not enter ignored folders: then a walk must.
        self.placed: list[str] | None = []

    def before(self, label: str) -> Path | None:
        self._label = label
        if self._overlay is None:
            shell, session = self._shell, self.layer.parent
            self._overlay = shell is not None and capture_way(shell, self.ws.root, session) is None
        if self._overlay:
            discard(self.layer)  # one a crash left
            os.makedirs(self.layer / "upper")
            os.mkdir(self.layer / "work")
            self.journal.mark({"kind": "command", "layer": LAYER})
            crash_point("snapshot")
            return self.layer
        self._scan_before()
        return None

    def after(self) -> CommandChanges:
        crash_point("ran")  # the command's changes are made, none recorded yet
        return self._commit() if self._overlay else self._scan_after()

    def _commit(self) -> CommandChanges:
        upper = self.layer / "upper"
        layer = self.ws.read_layer(upper)
        changes = layer.changes
        if self.placed is not None:
            self.placed += [path for step, path in layer.steps if step == "move"]
        dirs = (layer.dirs_created, layer.dirs_deleted)
        self._keep_all(changes, self._keep_current, dirs, changes.untracked, {"layer": LAYER})
        self.ws.commit_layer(upper, layer, lambda: crash_point("committed"))
        discard(self.layer)
        return changes

    def _keep_current(self, path: str, changes: CommandChanges) -> None:
        """Record the pre-image of ``path`` from the workspace (the command left it as it
        was), or why it is not kept."""
        if path in self.journal.paths:
            return
        try:
            stream = self.ws.open_bytes(path)
        except (OSError, PathRejected) as e:
            self._unkept(path, f"unreadable: {getattr(e, 'strerror', None) or e}", changes)
            return
        with stream:
            info = os.fstat(stream.fileno())
            mode = stat.S_IMODE(info.st_mode)
            if info.st_size <= PREIMAGE_IN_MEMORY:
                pre = PreImage(path, stream.read(), mode, by=self._label)
            else:
                pre = PreImage(path, None, mode, stream=stream, by=self._label)
            self._record(pre, changes)

    def _scan_before(self) -> None:
        self.placed = None
        old = self.shadow.load()
        now = self.ws.scan()
        found = moved(old.scan, now, old.racy_since())
        fresh = found.created + found.maybe_changed
        index = self.shadow.refresh(self.ws, old, now, fresh)
        kept = self.shadow.digest() if index.same_as(old) else None
        if kept is None:
            kept = self.shadow.save(index)
            self.shadow.collect(old, index)
        self._digest = kept
        self._before = index
        self.journal.mark({"kind": "command", "index": self._digest})
        crash_point("snapshot")

    def _scan_after(self) -> CommandChanges:
        before = self._before
        now = self.ws.scan(skip=frozenset(before.scan.untracked), walk=frozenset(before.scan.dirs))
        found = moved(before.scan, now, before.racy_since())
        after = self.shadow.refresh(self.ws, before, now, found.created + found.maybe_changed)
        changes = CommandChanges(created=sorted(found.created), deleted=sorted(found.deleted))
        changes.changed = sorted(p for p in found.maybe_changed if _differs(before, after, p))
        dirs = (found.dirs_created, found.dirs_deleted)
        self._keep_all(changes, self._keep, dirs, found.untracked, {"index": self._digest})
        self.shadow.save(after)
        self.shadow.collect(before, after)
        return changes

    def _keep_all(
        self,
        changes: CommandChanges,
        keep: Callable[[str, CommandChanges], None],
        dirs: tuple[list[str], list[str]],
        untracked: list[str],
        done: dict[str, str],
    ) -> None:
        """Record what the command changed in one append (the open mark covers the changes
        till then): each changed or deleted file's pre-image by ``keep``, each created file as
        absent, the folders it made and removed, the ignored folders it touched, and the
        ``command-done`` mark naming its layer or index (``done``)."""
        with self.journal.turn.held():
            for path in changes.changed + changes.deleted:
                keep(path, changes)
            for path in changes.created:
                self._record(PreImage(path, None, None, by=self._label), changes)
            if dirs[0] or dirs[1]:
                self.journal.mark({"kind": "dirs", "created": dirs[0], "deleted": dirs[1]})
            changes.untracked = [f"{path}/" for path in untracked]
            if changes.untracked:
                self.journal.mark({"kind": "untracked", "paths": changes.untracked})
            self.journal.mark({"kind": "command-done", **done})
        crash_point("captured")

    def _keep(self, path: str, changes: CommandChanges) -> None:
        """Record the pre-image of ``path`` from the shadow's copy, or why it is not kept."""
        if path in self.journal.paths:
            return  # the turn changed it before: that older pre-image is the one that matters
        digest = self._before.digests.get(path)
        if digest is None:
            size = self._before.scan.files[path][1]
            self._unkept(path, f"{size:,} bytes: larger than a turn keeps, or unreadable", changes)
            return
        size, mode = (
            self._before.scan.files[path][1],
            stat.S_IMODE(self._before.scan.files[path][4]),
        )
        with self.shadow.open(digest) as stream:
            if size <= PREIMAGE_IN_MEMORY:  # small ones go inline in the journal
                pre = PreImage(path, stream.read(), mode, by=self._label)
            else:
                pre = PreImage(path, None, mode, stream=stream, by=self._label)
            self._record(pre, changes)

    def _record(self, pre: PreImage, changes: CommandChanges) -> None:
        try:
            self.journal.record(pre)
        except CommandFailed:  # over the turn's cap: the change stays, undo says so
            why = (
                f"over the {self.journal.preimage_cap:,} bytes a turn keeps for undo, "
                "setting max_preimage_bytes"
            )
            self._unkept(pre.path, why, changes)

    def _unkept(self, path: str, why: str, changes: CommandChanges) -> None:
        self.journal.mark({"kind": "unkept", "path": path, "why": why})
        changes.unkept.append(f"{path} ({why})")


def _differs(before: Index, after: Index, path: str) -> bool:
    """Whether the file at ``path`` moved for real: its content or its mode changed."""
    old, new = before.digests.get(path), after.digests.get(path)
    old_mode, new_mode = before.scan.files[path][4], after.scan.files[path][4]
    if old is None or new is None:  # not kept: its stat data are all there is to go by
        return before.scan.files[path] != after.scan.files[path]
    return old != new or old_mode != new_mode
