"""A queue of tasks run one after another: a loop of sessions around the session loop
(docs/queue.md).

Each task is a session of its own on the queue's workspace, made when the task before it has
ended, so its history, undo and log are those of any session. Whoever delivers the replies (a
model, inbox/ files, the clipboard, the page by way of inbox/), the next task's first prompt is
written, and offered, the moment the task before it ends.

What ends a task is what ends its session (:meth:`SessionLoop.should_stop`): DONE completes it;
a turn limit, a model that stops running commands, an LLM question nobody can answer here, or a
model endpoint failing for good stop it; a skip (the page's button, or Ctrl-C and the user's
choice) skips it. None of them stops the queue, unless ``stop_on_failure`` and the task
stopped. A fault of the machine (a full disk) or settings to fix stop the queue with the task
still running: ``resume`` continues it, as it does after Ctrl-C or ``kill -9``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codingagent.faults import Fault
from codingagent.records.queues import Outcome, QueueState, QueueStore
from codingagent.session.lifecycle import new_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import ReplySource, SourceError, Stop, StopReason
from codingagent.settings import Settings
from codingagent.state import SessionError, utc_now

SKIP_POLL = 0.25  # seconds between looks for a skip request from the page
SKIPPED_ON_REQUEST = "skipped on request (the page, or codingagent queue --skip)"


class QueueListener(Protocol):
    """What a front end is told of the queue, and the one question it puts to the user."""

    def task_started(self, queue: QueueState, index: int) -> None:
        """Says "Task 2/5: <task>", with its session, before its first prompt is offered."""

    def task_ended(self, queue: QueueState, index: int) -> None: ...

    def skip_or_stop(self, queue: QueueState, index: int) -> bool:
        """After Ctrl-C in a task: True to skip that task and go on with the next, False to
        stop the queue (``resume`` continues the task)."""


@dataclass(frozen=True)
class QueueEnd:
    """How a run of the queue ended: ``queue`` as saved last; ``interrupted``: the user
    stopped it (Ctrl-C) with a task still to run."""

    queue: QueueState
    interrupted: bool = False


LoopFactory = Callable[[str], SessionLoop]
SourceFactory = Callable[[SessionLoop], AbstractContextManager[ReplySource]]


class QueueRunner:
    """Runs a queue's tasks, from the one to run now to the end, holding the queue's lock."""

    def __init__(
        self,
        queues: QueueStore,
        settings: Settings,
        open_loop: LoopFactory,
        open_source: SourceFactory,
        listener: QueueListener,
    ) -> None:
        """``open_loop``: the session loop of a session id, for the front end (its listener,
        approval, whether it is automatic); ``open_source``: the reply source for a loop."""
        self.queues = queues
        self.settings = settings
        self._open_loop = open_loop
        self._open_source = open_source
        self._listener = listener

    def run(self, queue_id: str, watch: bool = True, reopen: bool = False) -> QueueEnd:
        """Run the queue to its end (or, without ``watch``, only make the task to run now
        ready: its session made and its prompt written). ``reopen``: a queue halted by
        ``stop_on_failure`` goes on, from the task that halted it."""
        lock = self.queues.hold(queue_id)
        try:
            queue = self.queues.load(queue_id)
            if reopen and queue.halted:
                queue.reopen()
                self.queues.save(queue)
            while (index := queue.position) is not None:
                if not watch:
                    self._prepare(queue, index)
                    break
                if not self._run_task(queue, index):
                    return QueueEnd(queue, interrupted=True)
                entry = queue.tasks[index]
                if queue.stop_on_failure and entry.outcome is Outcome.STOPPED:
                    queue.halted = f"task {index + 1} stopped and --stop-on-failure is set"
                    self.queues.save(queue)
            return QueueEnd(queue)
        finally:
            lock.release()

    # --- one task --------------------------------------------------------------------------

    def _session(self, queue: QueueState, index: int) -> str:
        """The task's session: made now if the task has none yet; the listener is told."""
        entry = queue.tasks[index]
        if entry.session_id is None:
            workspace = Path(queue.workspace) if queue.workspace else None
            state = new_session(self.queues.store, self.settings, entry.task, workspace)
            entry.session_id = state.session_id
            entry.started_at = utc_now()
        entry.outcome = Outcome.RUNNING
        self.queues.save(queue)
        self._listener.task_started(queue, index)
        return entry.session_id

    def _prepare(self, queue: QueueState, index: int) -> None:
        with self._open_loop(self._session(queue, index)) as loop:
            loop.prepare()

    def _run_task(self, queue: QueueState, index: int) -> bool:
        """Run one task to its end and record its outcome; False when the user stopped the
        queue in it (the task stays running, for ``resume``)."""
        try:
            session_id = self._session(queue, index)
        except Fault:
            raise  # the user must act (as for SettingsError): every later task would meet it
        except SessionError as e:
            return self._end(queue, index, Outcome.STOPPED, str(e))
        state = self.queues.store.load(session_id)
        if state.is_complete:  # it completed before the queue could say so (a kill)
            return self._end(queue, index, Outcome.COMPLETED, state.summary or "")
        if self.queues.take_skip(queue.queue_id, session_id):
            return self._end(queue, index, Outcome.SKIPPED, SKIPPED_ON_REQUEST)
        skip = _SkipWatch(self.queues, queue.queue_id, session_id)
        try:
            with (
                self._open_loop(session_id) as loop,
                self._open_source(loop) as source,
                skip.over(loop),
            ):
                stop = loop.run(source)
        except Fault:
            raise
        except (SessionError, SourceError) as e:
            if skip.taken:
                return self._end(queue, index, Outcome.SKIPPED, SKIPPED_ON_REQUEST)
            return self._end(queue, index, Outcome.STOPPED, str(e))
        return self._ended(queue, index, stop, skip.taken)

    def _ended(self, queue: QueueState, index: int, stop: Stop, skipped: bool) -> bool:
        session_id = queue.tasks[index].session_id
        assert session_id is not None
        if stop.reason is StopReason.COMPLETE:
            summary = self.queues.store.load(session_id).summary or ""
            return self._end(queue, index, Outcome.COMPLETED, summary)
        if skipped:
            return self._end(queue, index, Outcome.SKIPPED, SKIPPED_ON_REQUEST)
        if stop.reason is StopReason.INTERRUPTED:
            if not self._listener.skip_or_stop(queue, index):
                return False
            return self._end(queue, index, Outcome.SKIPPED, "skipped with Ctrl-C")
        return self._end(queue, index, Outcome.STOPPED, stop.message or stop.reason.value)

    def _end(self, queue: QueueState, index: int, outcome: Outcome, reason: str) -> bool:
        entry = queue.tasks[index]
        entry.outcome = outcome
        entry.reason = reason
        entry.ended_at = utc_now()
        entry.started_at = entry.started_at or entry.ended_at
        self.queues.save(queue)
        self._listener.task_ended(queue, index)
        return True


class _SkipWatch:
    """While a task runs, looks for a skip request for it (the page's button) and stops the
    task's loop when one comes."""

    def __init__(self, queues: QueueStore, queue_id: str, session_id: str) -> None:
        self._queues = queues
        self._queue_id = queue_id
        self._session_id = session_id
        self.taken = False

    @contextmanager
    def over(self, loop: SessionLoop) -> Iterator[None]:
        """Watch while the block runs ``loop``."""
        done = threading.Event()
        thread = threading.Thread(target=self._watch, args=(loop, done), daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _watch(self, loop: SessionLoop, done: threading.Event) -> None:
        while not done.wait(SKIP_POLL):
            if not self.taken:
                self.taken = self._queues.take_skip(self._queue_id, self._session_id)
            if self.taken:
                loop.stop()  # again each time: the loop clears it when its run begins
