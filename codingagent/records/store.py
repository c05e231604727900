"""Where a run's sessions live on disk.

``SessionStore`` knows the run-directory layout (workspace/, outbox/, inbox/, sessions/), keeps
each session's ``SessionState`` as ``sessions/{id}.json`` (the protocol document's camelCase
field names) on the records' one base (:mod:`.shelf`: atomic writes, id prefixes, the
one-watcher-per-session lock), and names each turn's history folder, the journal's and the
held review's files. :func:`open_workspace` opens a session's workspace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from codingagent.fsio import atomic_write
from codingagent.records.shelf import Shelf
from codingagent.state import SessionError, SessionState, utc_now
from codingagent.workspace import Workspace

CACHE = ".cache"  # in sessions/: what the agent keeps to be faster next time, never history


class SessionStore(Shelf[SessionState]):
    """The run directory: ``workspace/ outbox/ inbox/ sessions/`` under one root; its sessions'
    states are ``sessions/{id}.json`` (:class:`.shelf.Shelf`).

    A project's run folder (:mod:`.runfolder`) has ``workspace`` as a link to the project:
    ``workspace`` and ``project`` are then the project's folder, never made or changed here."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        link = self.root / "workspace"
        self.project = Path(os.path.realpath(link)) if link.is_symlink() else None
        self.workspace = self.project or link
        self.outbox = self.root / "outbox"
        self.inbox = self.root / "inbox"
        self.sessions = self.root / "sessions"
        first = "'codingagent start TASK'"
        super().__init__(self.sessions, SessionState, "session", first, "watched or stepped")

    @property
    def agent_dirs(self) -> tuple[Path, ...]:
        """The agent's own folders; the LLM may never write into them."""
        return (self.outbox, self.inbox, self.sessions)

    @property
    def protected(self) -> tuple[Path, ...]:
        """What the LLM may not write, by file command or inside the command sandbox: the
        agent's folders and its settings file (docs/security.md §5)."""
        return (*self.agent_dirs, self.root / "codingagent.toml")

    def ensure_dirs(self) -> None:
        """The run folder's folders; a project's own folder is never made here."""
        made = self.agent_dirs if self.project is not None else (self.workspace, *self.agent_dirs)
        for folder in made:
            folder.mkdir(parents=True, exist_ok=True)

    # --- state -------------------------------------------------------------------------

    def state_path(self, session_id: str) -> Path:
        return self.path(session_id)

    def save(self, state: SessionState) -> None:
        self._write(state.session_id, state.to_json())

    def load(self, session_id: str) -> SessionState:
        return self._read(session_id)

    # --- outbox ------------------------------------------------------------------------

    def outbox_path(self, session_id: str, sequence: int) -> Path:
        return self.outbox / f"{session_id}_seq{sequence:04d}.txt"

    def write_outbox(self, session_id: str, sequence: int, text: str) -> Path:
        path = self.outbox_path(session_id, sequence)
        self.outbox.mkdir(parents=True, exist_ok=True)  # the user may have removed it
        atomic_write(path, text, later=True)  # (in a turn: at its end)
        return path

    # --- history -----------------------------------------------------------------------

    def turn_dir(self, session_id: str, sequence: int) -> Path:
        """History of the turn that answered outbox ``sequence``."""
        return self.sessions / session_id / "turns" / f"{sequence:04d}"

    def turns(self, session_id: str, current: int | None = None) -> list[Path]:
        """The history folders of the session's committed turns, oldest first.

        A folder numbered at or past the current sequence (``current``, read from the state
        when not given) belongs to a turn that never committed (the agent died): not history.
        """
        folder = self.sessions / session_id / "turns"
        if not folder.is_dir():
            return []
        if current is None:
            current = self.load(session_id).sequence_number
        found = [p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()]
        return sorted(p for p in found if int(p.name) < current)

    def set_aside(self, session_id: str, folder: Path, kind: str, copy: bool = False) -> Path:
        """Move (or ``copy``) a turn's history out of ``turns/`` into ``{kind}/`` (``undone``,
        ``aborted``, ``interrupted``), keeping it: nothing a turn recorded is ever deleted."""
        stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
        target = self.sessions / session_id / kind / f"{folder.name}-{stamp}"
        n = 1
        while target.exists():
            n += 1
            target = target.with_name(f"{folder.name}-{stamp}-{n}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if copy:
            shutil.copytree(folder, target)
        else:
            folder.rename(target)
        return target

    # --- journal: the turn in progress ----------------------------------------------------

    def journal_path(self, session_id: str) -> Path:
        """Present while a turn is being applied; see :mod:`codingagent.transaction.journal`."""
        return self.sessions / session_id / "journal.json"

    def review_path(self, session_id: str) -> Path:
        """Present while a reply's file changes are held for the user's review (with the reply
        beside it); see docs/review.md and :mod:`codingagent.review.record`."""
        return self.sessions / session_id / "review" / "review.json"


def open_workspace(store: SessionStore, state: SessionState) -> Workspace:
    """The session's workspace, its agent's folders fenced off; a SessionError when the folder
    is gone."""
    folder = Path(state.workspace)
    if not folder.is_dir():
        raise SessionError(f"The workspace of session {state.session_id} is gone: {folder}")
    return Workspace(folder, protected=store.protected)
