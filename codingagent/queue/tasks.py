"""A queue of tasks, as it lives on disk (docs/queue.md).

``sessions/queues/{queueId}.json`` lists the tasks in order, each with its session (once
started), its outcome (pending, running, completed, stopped, skipped), why, and when it started
and ended. Only the queue's runner writes it, atomically, holding the queue's lock, so a
``kill -9`` leaves the last state written: the task that was running says so, and ``resume``
continues it. Turns and tokens are not copied into it: they are read from each session's
history when a summary is made, so the two never disagree.

A request to skip the running task (the page's button) is a file of its own beside the queue,
``{queueId}.skip``, holding that task's session id; the runner takes it and removes it.
"""

from __future__ import annotations

import json
import re
import secrets
import tomllib
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from codingagent.fsio import atomic_write
from codingagent.state import SessionError, read_json_model, utc_now
from codingagent.transaction.history import turn_log
from codingagent.transaction.store import SessionStore

if TYPE_CHECKING:
    from filelock import FileLock

QUEUE_ID = re.compile(r"^[0-9a-f]{8}$")


class Outcome(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    SKIPPED = "skipped"


class QueuedTask(BaseModel):
    """One task of a queue and what became of it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    task: str
    session_id: str | None = None
    outcome: Outcome = Outcome.PENDING
    reason: str = ""  # the DONE summary, or why the task stopped or was skipped
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def seconds(self) -> float | None:
        """How long the task ran, up to now while it runs; None before it started."""
        if self.started_at is None:
            return None
        return ((self.ended_at or utc_now()) - self.started_at).total_seconds()


class QueueState(BaseModel):
    """A queue: its tasks in order, the workspace they share, and how it stops."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    queue_id: str = Field(pattern=QUEUE_ID.pattern)
    workspace: str | None = None  # --workspace, or None: the run directory's workspace/
    stop_on_failure: bool = False
    halted: str = ""  # why the queue stopped before its end (--stop-on-failure)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    tasks: list[QueuedTask]

    @property
    def position(self) -> int | None:
        """The index of the task to run now (the running one, else the first pending one);
        None when the queue has ended (or halted)."""
        if self.halted:
            return None
        for index, entry in enumerate(self.tasks):
            if entry.outcome in (Outcome.PENDING, Outcome.RUNNING):
                return index
        return None

    @property
    def halted_at(self) -> int | None:
        """The index of the task that halted the queue (``--stop-on-failure``), if it did."""
        if not self.halted:
            return None
        started = [i for i, entry in enumerate(self.tasks) if entry.session_id is not None]
        return started[-1] if started else None

    def reopen(self) -> None:
        """Take the halt back: the task that halted the queue is the one to run now again."""
        index = self.halted_at
        self.halted = ""
        if index is not None:
            entry = self.tasks[index]
            entry.outcome, entry.reason, entry.ended_at = Outcome.RUNNING, "", None

    @property
    def succeeded(self) -> bool:
        return all(entry.outcome is Outcome.COMPLETED for entry in self.tasks)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


class QueueStore:
    """The queues of a run directory: ``sessions/queues/``."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.folder = store.sessions / "queues"

    def path(self, queue_id: str) -> Path:
        return self.folder / f"{queue_id}.json"

    def skip_path(self, queue_id: str) -> Path:
        return self.folder / f"{queue_id}.skip"

    def create(self, tasks: list[str], workspace: Path | None, stop_on_failure: bool) -> QueueState:
        if not tasks:
            raise SessionError("The queue has no tasks")
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            queue_id = secrets.token_hex(4)
            if not self.path(queue_id).exists():
                break
        queue = QueueState(
            queue_id=queue_id,
            workspace=str(Path(workspace).resolve()) if workspace else None,
            stop_on_failure=stop_on_failure,
            tasks=[QueuedTask(task=task) for task in tasks],
        )
        self.save(queue)
        return queue

    def save(self, queue: QueueState) -> None:
        queue.updated_at = utc_now()
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path(queue.queue_id), queue.to_json())

    def load(self, queue_id: str) -> QueueState:
        path = self.path(queue_id)
        missing = f"No queue '{queue_id}' in {self.folder}"
        return read_json_model(path, QueueState, missing, "a valid queue file")

    def ids(self) -> list[str]:
        """Every queue id, most recently written first."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.glob("*.json") if QUEUE_ID.match(p.stem)]
        found.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
        return [p.stem for p in found]

    def resolve(self, ref: str | None) -> str:
        """``latest``, ``None`` or a unique prefix of a queue id: the queue id."""
        ids = self.ids()
        if not ids:
            raise SessionError(
                f"No queues yet in {self.folder}; run 'codingagent start --tasks FILE'"
            )
        if ref in (None, "", "latest"):
            return ids[0]
        matches = [i for i in ids if i.startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionError(f"No queue matches '{ref}'")
        raise SessionError(f"'{ref}' matches several queues: {', '.join(sorted(matches))}")

    def of_session(self, session_id: str) -> QueueState | None:
        """The unfinished queue whose task to run now is ``session_id``'s, or the halted queue
        whose task that halted it is, if there is one."""
        for queue_id in self.ids():
            queue = self.load(queue_id)
            index = queue.halted_at if queue.halted else queue.position
            if index is not None and queue.tasks[index].session_id == session_id:
                return queue
        return None

    def hold(self, queue_id: str) -> FileLock:
        """The queue's lock: one runner at a time."""
        import filelock

        lock = filelock.FileLock(self.folder / f".{queue_id}.lock")
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise SessionError(
                f"Queue {queue_id} is already being run by another codingagent process "
                f"(lock file {lock.lock_file}); stop that one first"
            ) from None
        return lock

    # --- skip requests -----------------------------------------------------------------------

    def request_skip(self, queue_id: str) -> str:
        """Ask the queue's runner to skip the task it runs now; that task's session id."""
        queue = self.load(queue_id)
        position = queue.position
        session_id = None if position is None else queue.tasks[position].session_id
        if session_id is None:
            raise SessionError(f"Queue {queue_id} runs no task now: nothing to skip")
        atomic_write(self.skip_path(queue_id), session_id + "\n")
        return session_id

    def take_skip(self, queue_id: str, session_id: str) -> bool:
        """Whether a skip was requested for ``session_id``'s task; the request is used up."""
        path = self.skip_path(queue_id)
        try:
            wanted = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return False
        if wanted != session_id:
            return False
        path.unlink(missing_ok=True)
        return True


# --- tasks from a file or the settings ---------------------------------------------------------


def parse_tasks(text: str, name: str = "the task list") -> list[str]:
    """The tasks in ``text``: a JSON array of strings, a TOML file with ``tasks = [...]``, or
    plain text with one task per block (blank lines between tasks; a task may span lines)."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value: Any = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise SessionError(f"{name} is not a valid JSON array: {e}") from None
        return checked_tasks(value, name)
    if re.match(r"tasks\s*=", stripped):
        try:
            value = tomllib.loads(stripped).get("tasks")
        except tomllib.TOMLDecodeError as e:
            raise SessionError(f"{name} is not valid TOML: {e}") from None
        return checked_tasks(value, name)
    blocks = re.split(r"\n[ \t]*\n", stripped.replace("\r\n", "\n"))
    return checked_tasks([block for block in blocks if block.strip()], name)


def checked_tasks(value: Any, name: str) -> list[str]:
    """``value`` as a list of tasks, each stripped; a clear message when it is not one."""
    if not isinstance(value, list) or not all(isinstance(task, str) for task in value):
        raise SessionError(f"{name} must be a list of texts, one per task")
    tasks = [task.strip() for task in value]
    if not tasks:
        raise SessionError(f"{name} holds no task")
    empty = [str(n) for n, task in enumerate(tasks, start=1) if not task]
    if empty:
        raise SessionError(f"{name}: task {', '.join(empty)} is empty")
    return tasks


# --- the summary ---------------------------------------------------------------------------------


def summary_rows(store: SessionStore, queue: QueueState) -> list[dict[str, Any]]:
    """One row per task: task, session, turns, outcome, why, seconds, tokens where known
    (summed over the turns a model answered). Turns and tokens come from the sessions."""
    rows = []
    for number, entry in enumerate(queue.tasks, start=1):
        turns, tokens_in, tokens_out = 0, None, None
        if entry.session_id is not None:
            try:
                log = turn_log(store, entry.session_id)
            except SessionError:  # the session was removed by hand: the row says what is known
                log = []
            turns = len(log)
            tokens_in = _total(turn.get("tokensIn") for turn in log)
            tokens_out = _total(turn.get("tokensOut") for turn in log)
        seconds = entry.seconds
        rows.append(
            {
                "number": number,
                "task": entry.task,
                "session": entry.session_id,
                "turns": turns,
                "outcome": entry.outcome.value,
                "reason": entry.reason,
                "seconds": None if seconds is None else round(seconds, 1),
                "tokensIn": tokens_in,
                "tokensOut": tokens_out,
            }
        )
    return rows


def _total(values: Any) -> int | None:
    known = [value for value in values if isinstance(value, int)]
    return sum(known) if known else None
