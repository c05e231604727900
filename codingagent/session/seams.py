"""The seams between the session loop and what surrounds it, each declared one way: a
:class:`typing.Protocol` (docs/architecture.md, "Seams"). :class:`ReplySource` is what every
reply source implements; :class:`FrontEnd` what every front end fills in (its bodies the quiet
defaults; :class:`Listener` is the quiet front end the others extend). Beside them the data
that crosses the seams: a :class:`Reply` and where it came from, the :class:`Received` reply
(decoded once), the :class:`Prompt` the session waits on, a turn's :class:`TurnReport` (with its
:class:`Refusal`), and why a loop stopped (:class:`Stop`). The loop, the turn, every source and
every front end import these from here."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codingagent.prompt.render import estimate_tokens
from codingagent.protocol.replies import REPLY_SIZE_CAP, DecodedReply, decode
from codingagent.state import SessionState

if TYPE_CHECKING:
    from codingagent.execute import TurnOutcome
    from codingagent.review.decision import Choice
    from codingagent.review.record import HeldReview
    from codingagent.state import CommandResult
    from codingagent.transaction.undo import UndoReport


@dataclass(frozen=True)
class Refusal:
    """A reply not applied (docs/admission.md): the note saying why (for the user), the
    folder that keeps it, and why in words for the model that wrote it."""

    note: str
    folder: Path
    to_model: str = ""


@dataclass
class TurnReport:
    """What happened in one turn, for the console."""

    state: SessionState
    outcome: TurnOutcome
    outbox: Path | None  # the next prompt, or None when the session is complete
    history: Path
    notes: list[str] = field(default_factory=list)  # problems with the reply file itself
    skipped: bool = False  # a duplicate or a stale reply: nothing was applied
    refusal: Refusal | None = None  # why it was skipped (for the user, and for a model)
    masked: int = 0  # secrets masked in the next prompt
    # Files the turn left that run code when the user works in the folder (autorun.scan).
    auto_run: list[str] = field(default_factory=list)
    # The reply's file changes, held for the user's review (docs/review.md): nothing of it was
    # written or run yet, and no next prompt exists.
    review: HeldReview | None = None

    @property
    def found_no_command(self) -> bool:
        """Applied, yet no command was found in the reply (prose, or the wrong text pasted):
        the next prompt asks the LLM for commands, and the user deserves to hear it."""
        return (
            not self.skipped
            and self.review is None
            and all(r.command in ("REPLY", "NOTE") for r in self.outcome.results)
        )


@dataclass(frozen=True)
class Reply:
    """A reply as a source hands it over: its bytes and where it came from."""

    data: bytes
    source: str  # shown on the console and kept in the history: a file name, "clipboard", ...
    size: int | None = None  # the real size, when ``data`` holds only the first bytes
    meta: Mapping[str, object] = field(default_factory=dict)  # for the turn's meta.json
    # The prompt the source knows this reply answers (an endpoint sent it, the page showed
    # it); None when only the reply's own echo can say (docs/admission.md).
    answers: int | None = None
    # The tool itself carried the prompt into the chat and this answer back (the relay): the
    # binding is the tool's own, so a reply without a Session/Sequence echo is no slip and the
    # model is not told so; a wrong echo still is (docs/admission.md).
    tool_bound: bool = False
    # Read from a chat's rendered page (a selection copy, the page's text), where markdown
    # changed the text outside code blocks: commands there that change files or run are
    # refused (docs/protocol.md, "Answers read from a rendered page").
    rendered: bool = False


@dataclass(frozen=True)
class Received:
    """A reply as admission, review and the turn work with it: as its source handed it
    (``reply``), and decoded once (``decoded``: its text, a reasoning model's thinking split
    off, its Session line and echo, its commands: :mod:`codingagent.protocol.replies`)."""

    reply: Reply
    decoded: DecodedReply

    @classmethod
    def of(cls, reply: Reply, max_bytes: int = REPLY_SIZE_CAP) -> Received:
        """``reply`` decoded: its bytes past ``max_bytes`` are not read."""
        return cls(reply, decode(reply.data, max_bytes, reply.size, reply.rendered))


class SourceError(Exception):
    """A reply source cannot go on and the user must act (a model server down, a key refused);
    the message says what to do. No turn was applied."""


@dataclass(frozen=True)
class Prompt:
    """The prompt the session waits on."""

    session_id: str
    sequence: int
    path: Path
    text: str
    window: int | None = None  # the chat's window (setting context_tokens), if known

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


class ReplySource(Protocol):
    """Where replies come from. ``next_reply`` blocks until a reply for ``prompt`` comes, or
    returns None once ``stop`` is set or the source has no more."""

    description: str  # for the console: "Watching inbox/ (inotify): save the reply there"

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None: ...

    def done_with(self, reply: Reply, report: TurnReport) -> None: ...


class FrontEnd(Protocol):
    """The front-end seam: what a front end is told, and the questions it puts to the user
    (RUN_COMMAND approval, the LLM's ASK, a held review). Each method's body here is the quiet
    default (nothing shown, and the safe answer: a command is not approved, a question is not
    answered, a review is decided elsewhere); a front end extends :class:`Listener` and
    overrides what it shows."""

    def note(self, text: str) -> None:
        """A line for the user: which sandbox holds, a warning, a recovered turn."""
        return None

    def progress(self, text: str | None) -> None:
        """A live line while a source waits (tokens received, seconds); None clears it."""
        return None

    def reply_received(self, reply: Reply) -> None:
        """A source handed over a reply; the turn is about to be applied."""
        return None

    def running(self, command: str) -> AbstractContextManager[None]:
        """Held while a RUN_COMMAND runs (a spinner on the console)."""
        return nullcontext()

    def approve(self, command: str) -> bool:
        """Whether the user lets ``command`` run (asked only where approval is ``ask``)."""
        return False

    def answer_question(self, question: str) -> str | None:
        """Ask the user the LLM's question (an ASK, shown already); their answer, or None when
        they give none here (they answer later with ``codingagent answer``)."""
        return None

    def review(self, held: HeldReview) -> Choice | None:
        """Put a reply's held file changes to the user (docs/review.md): what they accept and
        their note, or None when they decide elsewhere (``codingagent review``, the page)."""
        return None

    def result(self, result: CommandResult) -> None:
        """One command's result, as it comes."""
        return None

    def turn_applied(self, report: TurnReport) -> None:
        """A turn was applied, skipped or recovered."""
        return None

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        """``copy_problem`` is None when the prompt was copied to the clipboard, else why not
        ("" when copying is off). A prompt over ``token_budget`` deserves a warning."""
        return None

    def undone(self, report: UndoReport) -> None:
        """Turns were undone; their prompt is offered again."""
        return None

    def watching(self, source: ReplySource) -> None:
        """The loop waits on ``source`` (its ``description`` says how to hand a reply over)."""
        return None

    def stopped(self, stop: Stop) -> None:
        """The loop stopped, and why."""
        return None


class Listener(FrontEnd):
    """The quiet front end (:class:`FrontEnd`'s defaults): every front end extends it and
    overrides what it shows."""


class StopReason(Enum):
    COMPLETE = "complete"
    TURN_LIMIT = "turn limit"
    NO_COMMANDS = "no commands"
    QUESTION = "question"  # the LLM asked; the user answers with `codingagent answer`
    REVIEW = "review"  # a reply's file changes wait for `codingagent review` (docs/review.md)
    INTERRUPTED = "interrupted"
    SOURCE_ENDED = "source ended"
    REFUSED = "refused"  # replies in a row were not applied (docs/admission.md)


@dataclass(frozen=True)
class Stop:
    reason: StopReason
    message: str
