"""A queue of tasks, as it lives on disk (docs/queue.md).

``sessions/queues/{queueId}.json`` lists the tasks in order, each with its session (once
started), its outcome (pending, running, completed, stopped, skipped), why, and when it started
and ended. Only the queue's runner writes it, atomically, holding the queue's lock (the
records' one base, :mod:`.shelf`), so a ``kill -9`` leaves the last state written: the task
that was running says so, and ``resume`` continues it. Turns and tokens are not copied into
it: they are read from each session's history when a summary is made
(:func:`codingagent.queue.tasks.summary_rows`), so the two never disagree.

A request to skip the running task (the page's button) is a file of its own beside the queue,
``{queueId}.skip``, holding that task's session id; the runner takes it and removes it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from codingagent.fsio import atomic_write
from codingagent.records.shelf import Shelf
from codingagent.records.store import SessionStore
from codingagent.state import SessionError, utc_now

QUEUE_ID = r"^[0-9a-f]{8}$"


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

    queue_id: str = Field(pattern=QUEUE_ID)
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


class QueueStore(Shelf[QueueState]):
    """The queues of a run directory: ``sessions/queues/``."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        first = "'codingagent start --tasks FILE'"
        super().__init__(store.sessions / "queues", QueueState, "queue", first, "run")

    def skip_path(self, queue_id: str) -> Path:
        return self.folder / f"{queue_id}.skip"

    def create(self, tasks: list[str], workspace: Path | None, stop_on_failure: bool) -> QueueState:
        if not tasks:
            raise SessionError("The queue has no tasks")
        queue = QueueState(
            queue_id=self.new_id(),
            workspace=str(Path(workspace).resolve()) if workspace else None,
            stop_on_failure=stop_on_failure,
            tasks=[QueuedTask(task=task) for task in tasks],
        )
        self.save(queue)
        return queue

    def save(self, queue: QueueState) -> None:
        queue.updated_at = utc_now()
        self._write(queue.queue_id, queue.to_json())

    def load(self, queue_id: str) -> QueueState:
        return self._read(queue_id)

    def of_session(self, session_id: str) -> QueueState | None:
        """The unfinished queue whose task to run now is ``session_id``'s, or the halted queue
        whose task that halted it is, if there is one."""
        for queue_id in self.ids():
            queue = self.load(queue_id)
            index = queue.halted_at if queue.halted else queue.position
            if index is not None and queue.tasks[index].session_id == session_id:
                return queue
        return None

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
