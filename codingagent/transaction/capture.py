"""What a RUN_COMMAND changed, kept in the turn's journal like a file command's changes.

Around each command of a turn (the workspace's ``watch``, docs/undo.md):

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

import stat

from codingagent.execute.context import CommandFailed
from codingagent.transaction.crashpoints import crash_point
from codingagent.transaction.journal import Journal
from codingagent.transaction.shadow import SHADOW, Index, Shadow
from codingagent.workspace import PreImage, Workspace
from codingagent.workspace.preimage import PREIMAGE_IN_MEMORY
from codingagent.workspace.snapshot import CommandChanges, moved


class Watch:
    """The workspace's ``watch`` during one turn: keeps what each command changes."""

    def __init__(self, ws: Workspace, journal: Journal) -> None:
        self.ws = ws
        self.journal = journal
        self.shadow = Shadow(journal.turn.folder.parent.parent / SHADOW, journal.preimage_cap)
        self._before = Index()
        self._digest = ""
        self._label = ""

    def before(self, label: str) -> None:
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
        self._before, self._label = index, label
        self.journal.mark({"kind": "command", "index": self._digest})
        crash_point("snapshot")

    def after(self) -> CommandChanges:
        crash_point("ran")  # the command's changes are made, none recorded yet
        before = self._before
        now = self.ws.scan(skip=frozenset(before.scan.untracked), walk=frozenset(before.scan.dirs))
        found = moved(before.scan, now, before.racy_since())
        after = self.shadow.refresh(self.ws, before, now, found.created + found.maybe_changed)
        changes = CommandChanges(created=sorted(found.created), deleted=sorted(found.deleted))
        changes.changed = sorted(p for p in found.maybe_changed if _differs(before, after, p))
        with self.journal.turn.held():  # one append: the open mark covers the changes till then
            for path in changes.changed + changes.deleted:
                self._keep(path, changes)
            for path in changes.created:
                self._record(PreImage(path, None, None, by=self._label), changes)
            if found.dirs_created or found.dirs_deleted:
                dirs = {"created": found.dirs_created, "deleted": found.dirs_deleted}
                self.journal.mark({"kind": "dirs", **dirs})
            changes.untracked = [f"{path}/" for path in found.untracked]
            if changes.untracked:
                self.journal.mark({"kind": "untracked", "paths": changes.untracked})
            self.journal.mark({"kind": "command-done", "index": self._digest})
        crash_point("captured")
        self.shadow.save(after)
        self.shadow.collect(before, after)
        return changes

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
