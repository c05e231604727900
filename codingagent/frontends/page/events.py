"""The session loop's listener for the page: every call becomes an event for the browsers.

The loop runs in a worker thread; the page's event streams live on the server's event loop.
:class:`EventHub` hands events from one to the other. :class:`Approvals` holds the RUN_COMMAND
questions the page answers with Allow or Deny; no answer in time is a Deny. :class:`Reviews`
holds the held reviews a loop of this process waits on (docs/review.md).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codingagent.frontends.page.views import result_json
from codingagent.session.seams import Listener

if TYPE_CHECKING:
    from codingagent.review.decision import Choice
    from codingagent.review.record import HeldReview
    from codingagent.session.seams import Prompt, Reply, ReplySource, Stop, TurnReport
    from codingagent.state import CommandResult
    from codingagent.transaction.undo import UndoReport

Event = dict[str, Any]
APPROVAL_TIMEOUT = 300.0  # seconds a RUN_COMMAND waits for Allow or Deny before it is denied


class EventHub:
    """Fans events out to every open event stream; safe to publish from any thread. Once
    closed, every stream gets ``None``: its end (the server is stopping)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Event | None]]] = []
        self._closed = False

    def publish(self, event: Event | None) -> None:
        with self._lock:
            queues = list(self._queues)
        for loop, queue in queues:
            loop.call_soon_threadsafe(queue.put_nowait, event)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.publish(None)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[Event | None]]:
        """A queue that receives every event published while the context is open."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        entry = (asyncio.get_running_loop(), queue)
        with self._lock:
            self._queues.append(entry)
            if self._closed:
                queue.put_nowait(None)
        try:
            yield queue
        finally:
            with self._lock:
                self._queues.remove(entry)


@dataclass
class _Question:
    event: Event
    answered: threading.Event = field(default_factory=threading.Event)
    allow: bool = False


class Approvals:
    """RUN_COMMAND questions waiting for the page's answer."""

    def __init__(self, hub: EventHub, timeout: float = APPROVAL_TIMEOUT) -> None:
        self._hub = hub
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[int, _Question] = {}

    def ask(self, session_id: str, command: str) -> bool:
        """Show the question on the page and wait for the answer (blocks the worker thread)."""
        number = next(self._ids)
        question = _Question(
            {"type": "approve", "session": session_id, "id": number, "command": command}
        )
        with self._lock:
            self._waiting[number] = question
        self._hub.publish(question.event)
        try:
            answered = question.answered.wait(self._timeout)
        finally:
            with self._lock:
                del self._waiting[number]
        allowed = answered and question.allow
        why = "allowed" if allowed else "denied" if answered else "denied: no answer in time"
        self._hub.publish({**question.event, "type": "approved", "allowed": allowed, "why": why})
        return allowed

    def answer(self, number: int, allow: bool) -> bool:
        """Answer a waiting question; False if there is none with this number (any more)."""
        with self._lock:
            question = self._waiting.get(number)
            if question is None or question.answered.is_set():
                return False
            question.allow = allow
            question.answered.set()
            return True

    def pending(self, session_id: str) -> list[Event]:
        with self._lock:
            return [q.event for q in self._waiting.values() if q.event["session"] == session_id]


class Reviews:
    """Held reviews a loop of this process waits on (``ui --relay``: the relay's loop holds
    the session): the page's decision is handed to it (docs/review.md). Closed, every wait
    ends undecided."""

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, list[Choice]]] = {}
        self._closed = threading.Event()
        self.waiting = threading.Event()  # set once a loop waits on a review

    def wait(self, session_id: str, held: HeldReview) -> Choice | None:
        """Show the review on the page and wait for its decision (blocks the loop's thread)."""
        answered: tuple[threading.Event, list[Choice]] = (threading.Event(), [])
        with self._lock:
            self._waiting[session_id] = answered
        self.waiting.set()
        self._hub.publish({"type": "review", "session": session_id, "id": held.id})
        try:
            while not answered[0].wait(0.2) and not self._closed.is_set():
                pass
        finally:
            with self._lock:
                self._waiting.pop(session_id, None)
        return answered[1][0] if answered[1] else None

    def answer(self, session_id: str, choice: Choice) -> bool:
        """Hand ``choice`` to a loop waiting on the session's review; False when none waits."""
        with self._lock:
            waiting = self._waiting.pop(session_id, None)
        if waiting is None:
            return False
        waiting[1].append(choice)
        waiting[0].set()
        return True

    def close(self) -> None:
        self._closed.set()


class PageListener(Listener):
    """A :class:`codingagent.session.seams.Listener` that streams what the loop does to the page."""

    def __init__(
        self,
        session_id: str,
        hub: EventHub,
        approvals: Approvals,
        reviews: Reviews | None = None,
    ) -> None:
        """``reviews``: a held review waits there for the page's decision (a loop that runs
        on, beside the page); without, the page decides it later with the session's lock."""
        self._session = session_id
        self._hub = hub
        self._approvals = approvals
        self._reviews = reviews

    def _send(self, kind: str, **fields: Any) -> None:
        self._hub.publish({"type": kind, "session": self._session, **fields})

    def note(self, text: str) -> None:
        self._send("note", text=text)

    def reply_received(self, reply: Reply) -> None:
        self._send("reply", source=reply.source, size=reply.size or len(reply.data))

    @contextmanager
    def running(self, command: str) -> Iterator[None]:
        self._send("running", command=command)
        yield

    def approve(self, command: str) -> bool:
        return self._approvals.ask(self._session, command)

    def progress(self, text: str | None) -> None:
        pass  # the page's replies are pasted: no source waits on a model here

    def answer_question(self, question: str) -> str | None:
        return None  # the page shows the question; `codingagent answer` answers it

    def review(self, held: HeldReview) -> Choice | None:
        return self._reviews.wait(self._session, held) if self._reviews is not None else None

    def result(self, result: CommandResult) -> None:
        self._send("result", result=result_json(result))

    def turn_applied(self, report: TurnReport) -> None:
        self._send(
            "turn",
            sequence=report.state.sequence_number - 1,
            notes=report.notes,
            skipped=report.skipped,
            noCommand=report.found_no_command,
            review=report.review is not None,
        )

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        # Why the prompt is not on the system clipboard (no display, ...): the page says so.
        self._send("prompt", sequence=prompt.sequence, copyProblem=copy_problem or None)

    def undone(self, report: UndoReport) -> None:
        self._send("undone", turns=report.turns, restored=report.restored)

    def watching(self, source: ReplySource) -> None:
        self._send("note", text=source.description)

    def stopped(self, stop: Stop) -> None:
        self._send("stopped", reason=stop.reason.value, message=stop.message)
