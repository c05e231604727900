"""Session state and where it lives on disk.

``SessionState`` is the JSON of ``sessions/{id}.json`` with the protocol document's camelCase
field names. ``SessionStore`` knows the run-directory layout (workspace/, outbox/, inbox/,
sessions/), writes state atomically, names each turn's history folder, resolves session-id
prefixes, and hands out the one-watcher-per-session lock."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from codingagent.fsio import atomic_write
from codingagent.state import SessionError, SessionState, read_json_model, utc_now
from codingagent.transaction.summaries import state_files

if TYPE_CHECKING:
    from filelock import FileLock


class SessionStore:
    """The run directory: ``workspace/ outbox/ inbox/ sessions/`` under one root.

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
        return self.sessions / f"{session_id}.json"

    def new_id(self) -> str:
        while True:
            session_id = secrets.token_hex(4)
            if not self.state_path(session_id).exists():
                return session_id

    def save(self, state: SessionState) -> None:
        self.sessions.mkdir(parents=True, exist_ok=True)
        atomic_write(self.state_path(state.session_id), state.to_json())

    def load(self, session_id: str) -> SessionState:
        path = self.state_path(session_id)
        missing = f"No session '{session_id}' in {self.sessions}"
        return read_json_model(path, SessionState, missing, "a valid session file")

    def ids(self) -> list[str]:
        """Every session id, most recently updated first."""
        return [p.stem for p in state_files(self.sessions)]

    def resolve(self, ref: str | None) -> str:
        """Turn ``latest``, ``None`` or a unique id prefix into a session id."""
        ids = self.ids()
        if not ids:
            raise SessionError(f"No sessions yet in {self.sessions}; run 'codingagent start TASK'")
        if ref in (None, "", "latest"):
            return ids[0]
        matches = [i for i in ids if i.startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionError(f"No session matches '{ref}'")
        raise SessionError(f"'{ref}' matches several sessions: {', '.join(sorted(matches))}")

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

    # --- lock --------------------------------------------------------------------------

    def lock(self, session_id: str) -> FileLock:
        """The session's lock; acquire it with :func:`hold` for one watcher or step at a time."""
        from filelock import FileLock  # imported here: `sessions` and `--help` never lock

        return FileLock(self.sessions / f".{session_id}.lock")

    def hold(self, session_id: str) -> FileLock:
        import filelock

        lock = self.lock(session_id)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise SessionError(
                f"Session {session_id} is already being watched or stepped by another "
                f"codingagent process (lock file {lock.lock_file}); stop that one first"
            ) from None
        return lock

    @contextmanager
    def held_if_free(self, session_id: str) -> Iterator[bool]:
        """Hold the session's lock for the block if no one else does; says whether it does."""
        try:
            lock = self.hold(session_id)
        except SessionError:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()
