"""The session loop: one object owns a session's turns, whoever delivers the replies.

    prepare()                   recover an interrupted turn, apply a follow-up, refuse a complete
                                session or one at its turn limit, make sure the prompt exists
    while the session goes on:
        reply = source.next_reply(prompt)   the inbox, the clipboard, a page, an endpoint
        report = apply(reply)               one turn as a transaction (:mod:`codingagent.turn`)
        source.done_with(reply, report)     the inbox removes the file it handed over
        stop = should_stop(report)          the ONE place that decides when a session stops
        prompt = deliver(report)            the next prompt: listener, clipboard

A :class:`ReplySource` is one small class; the loop does not know which one it has. A
:class:`Listener` shows what happens (the console, or a page) and answers RUN_COMMAND approval.

Faults of the machine (:mod:`codingagent.faults`): a turn one stops is rolled back and the
:class:`~codingagent.faults.TurnNotApplied` ends the loop (the user must act); a ``passing``
fault of the source (``inbox/`` deleted) is shown as a note, and the loop goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from . import clipboard
from .commands import CommandResult
from .faults import Fault, describe, remedy
from .journal import UndoReport, undo
from .outbox import ensure_outbox
from .render import estimate_tokens
from .session import SessionError, SessionState, SessionStore
from .settings import Settings, SettingsError
from .shell import Limits, SandboxUnavailable, Shell, ShellResult, default_approval
from .turn import TurnReport, apply_reply, follow_up_session, recover

if TYPE_CHECKING:
    from filelock import FileLock


@dataclass(frozen=True)
class Reply:
    """A reply as a source hands it over: its bytes and where it came from."""

    data: bytes
    source: str  # shown on the console and kept in the history: a file name, "clipboard", ...
    size: int | None = None  # the real size, when ``data`` holds only the first bytes


@dataclass(frozen=True)
class Prompt:
    """The prompt the session waits on."""

    session_id: str
    sequence: int
    path: Path
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


class ReplySource(Protocol):
    """Where replies come from. ``next_reply`` blocks until a reply for ``prompt`` comes, or
    returns None once ``stop`` is set or the source has no more."""

    description: str  # for the console: "Watching inbox/ (inotify): save the reply there"

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None: ...

    def done_with(self, reply: Reply, report: TurnReport) -> None: ...


class Listener(Protocol):
    """What a front end is told, and the one question it answers (RUN_COMMAND approval)."""

    def note(self, text: str) -> None: ...

    def reply_received(self, reply: Reply) -> None: ...

    def running(self, command: str) -> AbstractContextManager[None]: ...

    def approve(self, command: str) -> bool: ...

    def result(self, result: CommandResult) -> None: ...

    def turn_applied(self, report: TurnReport) -> None: ...

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        """``copy_problem`` is None when the prompt was copied to the clipboard, else why not
        ("" when copying is off). A prompt over ``token_budget`` deserves a warning."""

    def undone(self, report: UndoReport) -> None: ...

    def watching(self, source: ReplySource) -> None: ...

    def stopped(self, stop: Stop) -> None: ...


class StopReason(Enum):
    COMPLETE = "complete"
    TURN_LIMIT = "turn limit"
    INTERRUPTED = "interrupted"
    SOURCE_ENDED = "source ended"


@dataclass(frozen=True)
class Stop:
    reason: StopReason
    message: str


def make_shell(settings: Settings, store: SessionStore) -> Shell:
    """The Shell the settings ask for; the agent's own folders are read-only inside it."""
    try:
        return Shell(
            timeout=settings.command_timeout,
            max_output=settings.max_output,
            sandbox=settings.sandbox,
            read_only=store.agent_dirs,
            limits=Limits.of(settings),
        )
    except SandboxUnavailable as e:
        raise SettingsError(f"sandbox = 'bwrap' was asked for, but {e}") from None


class TurnOptions(TypedDict):
    """What every turn of a loop is applied with (:func:`turn.apply_reply`'s options)."""

    shell: Shell
    on_result: Callable[[CommandResult], None]
    max_reply_bytes: int
    token_budget: int


class SessionLoop:
    """A session's loop. Use it as a context manager: it holds the session's lock, so one
    loop (one terminal, one page) applies replies to a session at a time."""

    def __init__(
        self,
        store: SessionStore,
        settings: Settings,
        session_id: str,
        listener: Listener,
        *,
        interactive: bool = False,
        shell: Shell | None = None,
    ) -> None:
        """``interactive``: the user can answer approval questions. ``shell``: made from the
        settings when the first turn needs it, if not given."""
        self.store = store
        self.settings = settings
        self.session_id = store.resolve(session_id)
        self._listener = listener
        self._interactive = interactive
        self._given_shell = shell
        self._shell: Shell | None = None
        self._stop = threading.Event()
        self._lock: FileLock | None = None

    def __enter__(self) -> SessionLoop:
        self._lock = self.store.hold(self.session_id)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._lock is not None:
            self._lock.release()

    # --- the loop ------------------------------------------------------------------------

    def run(self, source: ReplySource, follow_up: str | None = None) -> Stop:
        """Take replies from ``source`` until the session stops; say why it stopped."""
        prompt = self.prepare(follow_up)
        if prompt is None:
            return self._stopped(StopReason.COMPLETE, "")
        self._listener.watching(source)
        try:
            while True:
                try:
                    reply = source.next_reply(prompt, self._stop)
                except Fault as fault:
                    self._passing(fault)
                    continue
                if reply is None:
                    return self._stopped(StopReason.SOURCE_ENDED, "")
                report = self.apply(reply)
                try:
                    source.done_with(reply, report)
                except Fault as fault:
                    self._passing(fault)
                stop = self.should_stop(report)
                if stop is not None:
                    return stop
                prompt = self.deliver(report) or prompt
        except KeyboardInterrupt:
            return self._stopped(
                StopReason.INTERRUPTED,
                f"Stopped. Continue later with: codingagent resume {self.session_id}",
            )

    def prepare(self, follow_up: str | None = None) -> Prompt | None:
        """Make the session ready for a reply; its current prompt, or None when a recovered
        turn completed it. A complete session, or one at its turn limit, is a SessionError."""
        recovered = self.recover()
        if follow_up is not None:
            follow_up_session(self.store, self.session_id, follow_up)
        state = self.store.load(self.session_id)
        if state.is_complete:
            if recovered is not None:
                return None
            raise SessionError(
                f"Session {self.session_id} is complete: {state.summary or ''} (give it a "
                'follow-up with: codingagent resume --task "...")'
            )
        self._check_turn_limit(state)
        return self._offer(ensure_outbox(self.store, state))

    def step(self, reply: Reply, force: bool = False) -> TurnReport:
        """Apply one reply outside a loop (``codingagent step``) and deliver the next prompt."""
        self.recover()
        self._check_turn_limit(self.store.load(self.session_id))
        report = self.apply(reply, force)
        self.deliver(report)
        return report

    def recover(self) -> TurnReport | None:
        """Finish a turn an earlier agent left half done (see :func:`turn.recover`)."""
        try:
            report = recover(self.store, self.session_id, **self._turn_options())
        except OSError as e:
            raise Fault(
                f"The interrupted turn of session {self.session_id} could not be finished: "
                f"{describe(e)}. {remedy(e).capitalize()}, then run 'codingagent resume "
                f"{self.session_id}' again: nothing is lost"
            ) from e
        if report is not None:
            self._listener.turn_applied(report)
        return report

    def apply(self, reply: Reply, force: bool = False) -> TurnReport:
        """One turn: the reply applied as a transaction; the listener sees every result."""
        self._listener.reply_received(reply)
        report = apply_reply(
            self.store,
            self.session_id,
            reply.data,
            source=reply.source,
            size=reply.size,
            force=force,
            **self._turn_options(),
        )
        self._listener.turn_applied(report)
        return report

    def should_stop(self, report: TurnReport) -> Stop | None:
        """Whether the session stops after this turn, and why: the one place that decides."""
        if report.state.is_complete:
            return self._stopped(StopReason.COMPLETE, "")
        limit = self.settings.max_turns
        if limit is not None and report.state.sequence_number > limit:
            return self._stopped(StopReason.TURN_LIMIT, self._limit_message(limit))
        return None

    def deliver(self, report: TurnReport) -> Prompt | None:
        """Hand the turn's next prompt to the user; None when the turn wrote none."""
        if report.skipped or report.outbox is None:
            return None
        return self._offer(report.outbox)

    def undo(self, turns: int = 1, force: bool = False) -> UndoReport:
        """Restore the files of the last ``turns`` turns and rewind; offers the prompt again."""
        report = undo(self.store, self.session_id, turns, force)
        self._listener.undone(report)
        self._offer(report.outbox)
        return report

    def stop(self) -> None:
        """Ask a running :meth:`run` to return (from another thread)."""
        self._stop.set()

    # --- helpers -------------------------------------------------------------------------

    def _passing(self, fault: Fault) -> None:
        """A fault the loop can wait out (``inbox/`` deleted) is shown; any other ends it."""
        if not fault.passing:
            raise fault
        self._listener.note(f"warning: {fault}")

    def _observed_shell(self) -> Shell:
        """The shell for this loop's turns, made once; says which sandbox and approval hold."""
        if self._shell is None:
            shell = self._given_shell or make_shell(self.settings, self.store)
            policy = approval_policy(self.settings, shell, self._interactive)
            if policy == "deny":
                shell.approve = lambda command: False
            elif policy == "ask":
                shell.approve = self._listener.approve
            self._listener.note(f"RUN_COMMAND: {shell.sandbox_reason}; approval: {policy}")
            self._shell = cast(Shell, _ObservedShell(shell, self._listener))
        return self._shell

    def _offer(self, path: Path) -> Prompt:
        state_sequence = int(path.stem.rsplit("_seq", 1)[1])
        prompt = Prompt(self.session_id, state_sequence, path, path.read_text(encoding="utf-8"))
        problem = clipboard.copy(prompt.text) if self.settings.clipboard else ""
        self._listener.prompt_ready(prompt, self.settings.token_budget, problem)
        return prompt

    def _check_turn_limit(self, state: SessionState) -> None:
        limit = self.settings.max_turns
        if limit is not None and state.sequence_number > limit:
            raise SessionError(self._limit_message(limit))

    def _limit_message(self, limit: int) -> str:
        return (
            f"Session {self.session_id} reached max_turns ({limit}); raise it "
            "(--max-turns, CODINGAGENT_MAX_TURNS or codingagent.toml) to go on"
        )

    def _stopped(self, reason: StopReason, message: str) -> Stop:
        stop = Stop(reason, message)
        self._listener.stopped(stop)
        return stop

    def _turn_options(self) -> TurnOptions:
        return {
            "shell": self._observed_shell(),
            "on_result": self._listener.result,
            "max_reply_bytes": self.settings.max_reply_bytes,
            "token_budget": self.settings.token_budget,
        }


def approval_policy(settings: Settings, shell: Shell, interactive: bool) -> str:
    """``allow``, ``ask`` or ``deny``: the setting, else ask where no OS sandbox is active and
    someone can answer."""
    return settings.commands or default_approval(shell.sandbox_layer, interactive)


class _ObservedShell:
    """The Shell, telling the listener while each command runs (a console spinner)."""

    def __init__(self, shell: Shell, listener: Listener) -> None:
        self._shell = shell
        self._listener = listener

    def __getattr__(self, name: str) -> object:
        return getattr(self._shell, name)

    def run(self, command: str, cwd: Path) -> ShellResult:
        with self._listener.running(command):
            return self._shell.run(command, cwd)
