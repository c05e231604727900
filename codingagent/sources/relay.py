"""The chat-tab relay as a reply source (``start --relay``): a browser extension puts each
prompt into an attached chat tab and, on the user's Apply click, posts the answer back.

:class:`RelaySource` is one more :class:`~codingagent.session.seams.ReplySource` behind the
session's one admission. It publishes the prompt the loop waits on (the extension long-polls
``GET /relay/v1/prompt``); a ``POST /relay/v1/reply`` names the prompt it answers
(``prompt_id`` = ``<session>:<sequence>``), so the reply is *bound* to that prompt
(``Reply.answers``): admission refuses it, with a reason, when the session is at another prompt
(docs/admission.md). The poster waits for the turn and gets its results.

The source also watches ``inbox/`` (it wraps an :class:`~codingagent.sources.inbox.InboxSource`,
as the clipboard loop does): a reply saved there still counts.

:class:`Pairing` is who may talk to the relay: one pairing code shown once on the terminal,
five wrong codes void it; then one bearer token, bound to the extension's origin. The HTTP
side (origin checks, CORS, the routes) is :mod:`.relay_server`; docs/relay.md explains why.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import TracebackType

from codingagent.prompt.render import is_prompt
from codingagent.session.seams import Prompt, Reply, TurnReport
from codingagent.sources.inbox import FileReply, InboxSource

DEFAULT_PORT = 8766
# Crockford's base 32 without 0 and 1: no O/0, I/1/L or U to misread (30 characters).
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 8
MAX_WRONG = 5  # wrong pairing codes before the code is void
MAX_WAIT = 60.0  # seconds a GET /prompt may hold the connection
EXTENSION_ORIGIN = re.compile(r"(chrome-extension|moz-extension)://[A-Za-z0-9-]{1,64}")


class Refused(Exception):
    """A request the relay refuses before anything happens: its HTTP status and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def new_code() -> str:
    """A pairing code: 8 characters of :data:`ALPHABET`, shown as ``K7QM-2XPD``."""
    raw = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    return f"{raw[:4]}-{raw[4:]}"


def _plain(code: str) -> str:
    """A code as typed, compared without case, spaces or dashes."""
    return re.sub(r"[\s-]", "", code).upper()


class Pairing:
    """Who may talk to the relay. Thread-safe: the server's threads share one."""

    def __init__(self, code: str | None = None, note: Callable[[str], None] = print) -> None:
        self.code = code or new_code()
        self._note = note
        self._lock = threading.Lock()
        self._wrong = 0
        self._token: str | None = None
        self._origin: str | None = None  # the paired extension's origin

    @property
    def void(self) -> bool:
        return self._wrong >= MAX_WRONG

    @property
    def origin(self) -> str | None:
        return self._origin

    def check_origin(self, origin: str | None) -> str:
        """``origin`` if the relay answers it: an extension's, and once paired, that one's."""
        if origin is None:
            raise Refused(403, "The relay answers only its browser extension (no Origin header)")
        if not EXTENSION_ORIGIN.fullmatch(origin):
            raise Refused(403, f"The relay answers only its browser extension, not {origin}")
        paired = self._origin
        if paired is not None and origin != paired:
            raise Refused(403, "The relay is paired with another extension")
        return origin

    def pair(self, given: object, origin: str) -> str:
        """A new token for ``origin`` if ``given`` is the code; Refused otherwise."""
        with self._lock:
            if self.void:
                raise Refused(
                    403,
                    f"The pairing code is void after {MAX_WRONG} wrong codes; restart the "
                    "agent for a new one",
                )
            if not isinstance(given, str) or not secrets.compare_digest(
                _plain(given).encode(), _plain(self.code).encode()
            ):
                self._wrong += 1
                if self.void:
                    self._note(
                        f"Relay: {MAX_WRONG} wrong pairing codes; the code is void. Restart "
                        "the agent (Ctrl-C, then resume --relay) for a new one"
                    )
                    raise Refused(403, "Wrong pairing code; the code is now void")
                left = MAX_WRONG - self._wrong
                raise Refused(403, f"Wrong pairing code ({left} tries left)")
            if self._origin is not None and origin != self._origin:
                raise Refused(403, "The relay is paired with another extension")
            self._token = secrets.token_urlsafe(32)
            self._origin = origin
            self._note(f"Relay: paired with the extension {origin}")
            return self._token

    def check_token(self, authorization: str | None) -> None:
        """Refused (401) unless ``authorization`` is ``Bearer <the token>``."""
        token = self._token
        if token is None:
            raise Refused(401, "Not paired: enter the pairing code in the extension's popup")
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
            given.strip().encode(), token.encode()
        ):
            raise Refused(401, "Wrong or missing token: pair the extension again")

    def unpair(self) -> None:
        """Forget the token and the origin: the code pairs again (any extension that has it)."""
        with self._lock:
            self._token = self._origin = None
        self._note("Relay: the extension unpaired")


# --- the exchange between the loop and the server ---------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a POST /reply gets back once its turn was applied or refused."""

    applied: bool
    refused: str | None = None
    results: list[str] = field(default_factory=list)
    next_prompt_id: str | None = None
    done: bool = False
    review: dict[str, object] | None = None  # its file changes wait for the user's review

    def as_json(self) -> dict[str, object]:
        return {
            "applied": self.applied,
            "refused": self.refused,
            "results": self.results,
            "next_prompt_id": self.next_prompt_id,
            "done": self.done,
            "review": self.review,
        }


@dataclass
class _Posted:
    """A reply posted to the relay, waiting to be taken by the loop, then for its outcome."""

    reply: Reply
    outcome: Outcome | None = None


def prompt_id(session_id: str, sequence: int) -> str:
    return f"{session_id}:{sequence}"


def parse_prompt_id(value: object) -> tuple[str, int] | None:
    """``(session, sequence)`` of a ``prompt_id``; None when it is not one."""
    if not isinstance(value, str):
        return None
    session, _, number = value.rpartition(":")
    if not session or not number.isdigit() or int(number) < 1:
        return None
    return session, int(number)


class Exchange:
    """What the server's threads and the loop's thread share: the prompt on offer, the reply
    posted for it, the session's status. Every wait is on one condition."""

    def __init__(self, session_id: str, task: str, page: str | None = None) -> None:
        """``page``: the address of the page served beside the relay (``ui --relay``), where
        a held review is decided (docs/review.md); None: none is."""
        self.session_id = session_id
        self.task = task.strip().splitlines()[0] if task.strip() else ""
        self.page = page
        self.review: dict[str, object] | None = None  # a held review, while one waits
        self._cond = threading.Condition()
        self.prompt: Prompt | None = None
        self.status = "applying"  # until the loop offers its first prompt
        self.last_result: str | None = None
        self.summary: str | None = None  # once done or stopped
        self._posted: _Posted | None = None
        self._closed = False
        self.offered = threading.Event()  # set once the loop offered its first prompt

    # the server's side

    def state(self) -> dict[str, object]:
        with self._cond:
            prompt = self.prompt
            return {
                "session": self.session_id,
                "task": self.task,
                "sequence": prompt.sequence if prompt else None,
                "prompt_id": prompt_id(self.session_id, prompt.sequence) if prompt else None,
                "status": self.status,
                "last_result": self.last_result,
                "tokens": prompt.tokens if prompt else None,
                "window": None,  # a chat tab's window is not known to the agent
                "review": self.review,
            }

    def next_prompt(
        self, after: str | None, wait: float, review_seen: str | None = None
    ) -> dict[str, object] | None:
        """The prompt on offer once it is newer than ``after`` (a prompt_id), as JSON; the
        end of the session, if it ended; a held review the poller has not seen (its id is
        not ``review_seen``); None when ``wait`` seconds passed first."""
        known = parse_prompt_id(after)
        seen = known[1] if known is not None and known[0] == self.session_id else 0
        deadline = time.monotonic() + min(max(wait, 0.0), MAX_WAIT)
        with self._cond:
            while True:
                if self.status in ("done", "stopped"):
                    return {"done": True, "status": self.status, "summary": self.summary or ""}
                if self.review is not None and self.review["id"] != review_seen:
                    return {"review": self.review}
                prompt = self.prompt
                if prompt is not None and prompt.sequence > seen:
                    return {
                        "prompt_id": prompt_id(self.session_id, prompt.sequence),
                        "sequence": prompt.sequence,
                        "text": prompt.text,
                        "chars": len(prompt.text),
                    }
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def post(self, given_id: object, text: str, source_url: str, rendered: bool = False) -> Outcome:
        """Hand a reply to the loop and wait for its turn; its outcome. ``rendered``: the
        extension read it from the page's rendered text, not through the chat's Copy."""
        parsed = parse_prompt_id(given_id)
        if parsed is None:
            raise Refused(400, "'prompt_id' must be the prompt_id the relay sent (<session>:<n>)")
        session, sequence = parsed
        if session != self.session_id:
            why = f"it answers session {session}; this relay serves {self.session_id}"
            return Outcome(False, why)
        if not text.strip():
            return Outcome(False, "the answer is empty: nothing to apply")
        if self._is_our_prompt(text):
            return Outcome(False, "that is the prompt, not the chat's answer: Apply the answer")
        host = re.sub(r"^[a-z]+://", "", source_url).split("/")[0] if source_url else ""
        reply = Reply(
            text.encode("utf-8"),
            source=f"<relay{': ' + host if host else ''}>",
            answers=sequence,
            tool_bound=True,
            meta={"relay": True, "promptId": prompt_id(session, sequence), "sourceUrl": source_url},
            rendered=rendered,
        )
        with self._cond:
            if self.status in ("done", "stopped"):
                return Outcome(False, f"the session is {self.status}: nothing more is applied")
            if self._posted is not None:
                return Outcome(False, "another answer is being applied; try again after it")
            posted = self._posted = _Posted(reply)
            self._cond.notify_all()
            while posted.outcome is None and not self._closed:
                self._cond.wait()
            if self._posted is posted:
                self._posted = None
            return posted.outcome or Outcome(False, "the agent stopped before applying it")

    def _is_our_prompt(self, text: str) -> bool:
        """Whether ``text`` is a prompt of ours, or a piece of the one on offer (its PROTOCOL
        holds example commands: applied, they would run)."""
        prompt = self.prompt
        plain = text.replace("\r\n", "\n").strip()
        return is_prompt(plain) or (prompt is not None and plain in prompt.text)

    # the loop's side

    def offer(self, prompt: Prompt) -> None:
        with self._cond:
            self.prompt = prompt
            self.status = "waiting_for_reply"
            self.review = None  # decided, or dropped: the loop offers a prompt again
            self._cond.notify_all()
        self.offered.set()

    def reviewing(self, review_id: str, summary: str) -> None:
        """A reply's file changes wait for the user's review (docs/review.md): the extension
        hears of it, with the page's address where it is decided, if a page is served."""
        url = f"{self.page}#{self.session_id}" if self.page else None
        where = "on the page" if url else "in the agent's terminal (or: codingagent review)"
        with self._cond:
            self.status = "reviewing"
            self.review = {"id": review_id, "summary": summary, "url": url, "where": where}
            self.last_result = f"held for your review: {summary}"
            self._cond.notify_all()

    def take(self, wake: threading.Event, timeout: float) -> Reply | None:
        """A posted reply not yet taken, waiting up to ``timeout`` s (or until ``wake``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not wake.is_set():
                if self._posted is not None:
                    return self._posted.reply
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return None

    def applying(self) -> None:
        with self._cond:
            self.status = "applying"
            self._cond.notify_all()

    def finished(self, reply: Reply, report: TurnReport) -> None:
        """The turn of ``reply`` is over: its poster gets the outcome; the status follows."""
        state = report.state
        results = [r.headline for r in report.outcome.results] if not report.skipped else []
        refused = None
        if report.skipped:
            refusal = report.refusal
            refused = (refusal.to_model or refusal.note) if refusal else "it was not applied"
        done = state.is_complete
        next_id = None if done else prompt_id(self.session_id, state.sequence_number)
        held = report.review
        if held is not None:  # nothing applied yet: it waits for the user
            self.reviewing(held.id, held.summary())
            next_id, results = None, []
        outcome = Outcome(held is None and not report.skipped, refused, results, next_id, done)
        outcome = replace(outcome, review=self.review if held is not None else None)
        with self._cond:
            if held is not None:
                pass  # said by reviewing()
            elif refused is not None:
                self.last_result = f"not applied: {refused}"
            else:
                failed = sum(not r.success for r in report.outcome.results)
                self.last_result = f"applied: {len(results)} results, {failed} failed"
            if done:
                self.status, self.summary = "done", state.summary or ""
            elif self.prompt is not None and held is None:
                self.status = "waiting_for_reply" if report.skipped else "applying"
            posted = self._posted
            if posted is not None and posted.reply is reply:
                posted.outcome = outcome
                self._posted = None
            self._cond.notify_all()

    def close(self, why: str = "") -> None:
        """The loop ended: waiters wake; a session not done is stopped."""
        with self._cond:
            if self.status != "done":
                self.status = "stopped"
                self.summary = why or "the agent stopped"
            self._closed = True
            self._cond.notify_all()


# --- the reply source ---------------------------------------------------------------------


@dataclass(eq=False)
class RelaySource:
    """Replies posted by the browser extension through the relay, or saved into ``inbox/``:
    whichever comes first. A context manager: it serves the relay while entered (``serve``
    starts the relay's server, in its threads; ``stop_serving`` stops it)."""

    exchange: Exchange
    inbox: InboxSource
    serve: Callable[[], object]
    stop_serving: Callable[[], None]
    address: str

    def __post_init__(self) -> None:
        inbox, address = self.inbox, self.address
        also = inbox.description[:1].lower() + inbox.description[1:]
        self.description = (
            f"Relay on {address}: the browser extension sends each prompt and, on your "
            f"Apply click, the answer; also {also}"
        )

    def __enter__(self) -> RelaySource:
        self.inbox.__enter__()
        try:
            self.serve()
        except BaseException:
            self.inbox.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        why = "stopped with Ctrl-C" if kind is KeyboardInterrupt else ""
        self.exchange.close(why)
        try:
            self.stop_serving()
        finally:
            self.inbox.__exit__(kind, error, tb)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        self.exchange.offer(prompt)
        found = threading.Event()  # set when the relay has a reply, or on stop
        taken: list[Reply] = []
        errors: list[BaseException] = []
        waiter = threading.Thread(
            target=self._wait_relay, args=(stop, found, taken, errors), daemon=True
        )
        waiter.start()
        try:
            reply = self.inbox.next_reply(prompt, found)
        finally:
            found.set()
            waiter.join()
        if errors:
            raise errors[0]
        # Both at once: the file goes first; the posted reply stays posted, for the next turn
        # (where admission refuses it, if it answered this prompt).
        reply = reply or (taken[0] if taken else None)
        if reply is not None:
            self.exchange.applying()
        return reply

    def _wait_relay(
        self,
        stop: threading.Event,
        found: threading.Event,
        taken: list[Reply],
        errors: list[BaseException],
    ) -> None:
        try:
            while not found.is_set() and not stop.is_set():
                reply = self.exchange.take(found, 0.2)
                if reply is not None:
                    taken.append(reply)
                    return
        except BaseException as e:  # raised again in the loop's thread
            errors.append(e)
        finally:
            found.set()

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        if isinstance(reply, FileReply):
            self.inbox.done_with(reply, report)
        self.exchange.finished(reply, report)
