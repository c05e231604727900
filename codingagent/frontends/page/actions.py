"""What the page's buttons do: start a session, apply a reply, decide a held review, answer the
LLM's question, undo the last turn.

Each action runs in a worker thread through the session loop
(:class:`~codingagent.session.loop.SessionLoop`) with a :class:`~.events.PageListener`, so the
page sees every result as it happens.

The session lock decides who applies a reply. The server takes a session's lock only while an
action runs. If another process holds it (a terminal watcher, ``codingagent start`` or
``resume``), Apply saves the reply into ``inbox/`` for that watcher, and the page shows the turn
once the watcher has applied it; Undo says the session is busy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingagent.frontends.page.events import Approvals, EventHub, PageListener, Reviews
from codingagent.prompt.named import named_paths
from codingagent.prompt.render import is_prompt
from codingagent.records.store import SessionStore
from codingagent.review.decision import Choice
from codingagent.session.lifecycle import new_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import Reply
from codingagent.settings import Settings
from codingagent.sources import pasteboard
from codingagent.sources.inbox import save_reply
from codingagent.sources.pagetext import Copy, exact_text
from codingagent.state import SessionError
from codingagent.workspace import Workspace
from codingagent.workspace.choice import broad_reason, resolve_workspace

PAGE_SOURCE = "web page"  # the reply's name in the console, the log and the turn's history


@dataclass(eq=False)
class SessionActions:
    """The page's actions on the sessions of one run directory; blocking (call them from a
    worker thread). Errors the user must fix are :class:`SessionError` messages. ``reviews``:
    where a loop of this process (the relay's, ``ui --relay``) waits for the page's decision
    on a held review."""

    store: SessionStore
    settings: Settings
    hub: EventHub
    approvals: Approvals
    reviews: Reviews | None = None

    def __post_init__(self) -> None:
        self._guard = threading.Lock()
        self._busy: set[str] = set()

    def start(self, task: str, workspace: str, files: tuple[str, ...] = ()) -> str:
        """A new session for ``task`` on ``workspace`` (relative to the run directory, or to the
        project of a project's; empty: its ``workspace``); its first prompt is ready when this
        returns. A folder too broad to hand to the LLM is refused, with no way to insist from
        the page. ``files`` and the task's ``@path`` words name files shown whole in the first
        prompt, as ``start --file`` does; a name that matches nothing makes no session."""
        folder = self._folder(workspace)
        named: list[str] = []
        where = folder or self.store.workspace
        if files or "@" in task:
            if where.is_dir():
                named = named_paths(Workspace(where), files, task)
            elif files:
                raise SessionError(f"Workspace folder does not exist: {where}")
        state = new_session(self.store, self.settings, task, folder, files=named)
        with self._slot(state.session_id), self._loop(state.session_id) as loop:
            loop.prepare()
        return state.session_id

    def apply(
        self, session_id: str, text: str, sequence: int | None = None, rendered: bool = False
    ) -> dict[str, Any]:
        """Apply a reply pasted on the page, or save it into ``inbox/`` when another process
        holds the session. ``sequence``: the prompt the page showed, which the reply answers
        (docs/admission.md); its own Session/Sequence line is then no reason to refuse it.
        ``rendered``: the text came from a selection of a chat's rendered page (read from the
        HTML pasted with it: ``POST /api/paste``; docs/protocol.md, "Answers read from a
        rendered page")."""
        if not text.strip():
            raise SessionError("The reply box is empty: paste the LLM's answer into it")
        if is_prompt(text):
            raise SessionError(
                "That is the prompt, not the LLM's reply: paste the answer from the chat"
            )
        session_id = self.store.resolve(session_id)
        copy = Copy(text, rendered)
        with self._slot(session_id), ExitStack() as stack:
            loop = self._loop(session_id)
            try:
                stack.enter_context(loop)
            except SessionError:  # another process holds the lock: its watcher applies it
                path = save_reply(self.store.inbox, session_id, exact_text(copy))
                self.hub.publish({"type": "queued", "session": session_id, "path": str(path)})
                return {"queued": str(path)}
            reply = Reply(
                copy.text.encode("utf-8"), PAGE_SOURCE, answers=sequence, rendered=copy.rendered
            )
            report = loop.step(reply)
            return {
                "sequence": report.state.sequence_number,
                "notes": report.notes,
                "skipped": report.skipped,
                "noCommand": report.found_no_command,
                "review": report.review is not None,
            }

    def review(
        self, session_id: str, accepted: list[str], note: str, discard: bool = False
    ) -> dict[str, Any]:
        """Decide the session's held review (docs/review.md): the numbers ``accepted`` are
        written, the rest is not, ``note`` goes to the LLM with it; or ``discard`` the reply.
        A loop of this process waiting on the review gets the decision; else it is applied
        here, under the session's lock."""
        session_id = self.store.resolve(session_id)
        choice = Choice(tuple(accepted), note, discard)
        if self.reviews is not None and self.reviews.answer(session_id, choice):
            return {"handed": True}
        with self._slot(session_id), ExitStack() as stack:
            loop = self._loop(session_id)
            try:
                stack.enter_context(loop)
            except SessionError:
                raise SessionError(
                    f"Another codingagent process holds session {session_id} (a terminal "
                    "watcher): decide the review there, or stop it and decide here"
                ) from None
            report = loop.decide(choice)
        return {"sequence": report.state.sequence_number, "notes": report.notes}

    def workspace(self, given: str) -> dict[str, Any]:
        """The folder a New session on ``given`` would work on, resolved, and why it would be
        refused (None when it would not): the page shows both before Start. The run
        directory's own ``workspace/`` is made at Start when missing."""
        folder = self._folder(given) or self.store.workspace
        problem = broad_reason(folder)
        if problem is None and not folder.is_dir() and folder != self.store.workspace:
            problem = "there is no such folder"
        return {"path": str(folder), "problem": problem}

    def answer(self, session_id: str, text: str) -> dict[str, Any]:
        """The user's answer to the LLM's question, as ``codingagent answer`` gives it: the
        prompt that carries it is written."""
        session_id = self.store.resolve(session_id)
        with self._slot(session_id), self._loop(session_id) as loop:
            prompt = loop.answer(text)
        return {"sequence": prompt.sequence}

    def undo(self, session_id: str) -> dict[str, Any]:
        """Undo the last turn; refused (a SessionError) over files changed by hand since."""
        session_id = self.store.resolve(session_id)
        with self._slot(session_id), self._loop(session_id) as loop:
            report = loop.undo()
        return {"turns": report.turns, "restored": report.restored}

    def _folder(self, given: str) -> Path | None:
        """The folder ``given`` names: relative to the project of a project's run folder, else
        to the run folder."""
        base = self.store.project or self.store.root
        return resolve_workspace(given.strip(), base) if given.strip() else None

    def _loop(self, session_id: str) -> SessionLoop:
        return SessionLoop(
            self.store,
            self.settings,
            session_id,
            self._listener(session_id),
            interactive=True,
            copy=pasteboard.copy,
        )

    def _listener(self, session_id: str) -> PageListener:
        return PageListener(session_id, self.hub, self.approvals)

    @contextmanager
    def _slot(self, session_id: str) -> Iterator[None]:
        """One action per session at a time in this process (two tabs, a double click)."""
        with self._guard:
            if session_id in self._busy:
                raise SessionError(f"Session {session_id} is busy with another action; wait")
            self._busy.add(session_id)
        try:
            yield
        finally:
            with self._guard:
                self._busy.discard(session_id)
