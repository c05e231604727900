"""The session loop: one object owns a session's turns, whoever delivers the replies.

    prepare()                   recover an interrupted turn, apply a follow-up, refuse a complete
                                session or one at its turn limit, make sure the prompt exists
    while the session goes on:
        reply = source.next_reply(prompt)   the inbox, the clipboard, a page, an endpoint
        report = apply(reply)               one turn as a transaction (session/turn.py)
        source.done_with(reply, report)     the inbox removes the file it handed over
        report = ask_user(review_user(report))  a held review, an ASK: put to the user here
        stop = should_stop(report)          the ONE place that decides when a session stops
        prompt = deliver(report)            the next prompt: listener, the front end's copy

A :class:`ReplySource` is one small class; the loop does not know which one it has. A
:class:`~.seams.FrontEnd` (a :class:`~.seams.Listener`) shows what happens (the console, or a
page), answers RUN_COMMAND approval and asks the user the LLM's questions.

An ASK ends its turn without a next prompt: the prompt is written once the user answers
(:func:`.lifecycle.answer_question`), at the listener if someone can answer there, else with
``codingagent answer`` while the loop is stopped (it stops, saying so). Until then no reply is
applied (:func:`turn.apply_reply` keeps it in ``refused/``), ``show`` prints the question
instead of a prompt, and ``resume`` asks it again (or refuses, if no one can answer there). A
reply held for review (:mod:`.reviewing`) waits the same way for ``codingagent review``.

An *automatic* loop (replies from a model, nobody between turns) must end by itself: it stops
after ``model_max_turns`` replies, after two replies in a row that were not applied (a model
that repeats a reply, which is skipped as a duplicate: the source told it why each time), and
after two replies in a row that ran no command (a model that answers in prose). Without an OS
sandbox and without a terminal to ask, it runs no RUN_COMMAND unless ``commands`` is set
explicitly (``--commands allow`` or ``deny``): nobody would see what runs.

Faults of the machine (:mod:`codingagent.faults`): a turn one stops is rolled back and the
:class:`~codingagent.faults.TurnNotApplied` ends the loop (the user must act); a ``passing``
fault of the source (``inbox/`` deleted) is shown as a note, and the loop goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from codingagent.faults import Fault, describe, remedy
from codingagent.prompt.outbox import ensure_outbox
from codingagent.prompt.render import PromptOptions
from codingagent.records.store import SessionStore
from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Shell
from codingagent.secrecy import file_scan
from codingagent.secrecy.secret_files import notes as secret_file_notes
from codingagent.session import reviewing
from codingagent.session.checking import check_anew, session_check
from codingagent.session.lifecycle import (
    ObservedShell,
    answer_question,
    approval_policy,
    follow_up_session,
    make_shell,
    name_files,
    set_up_shell,
)
from codingagent.session.recovery import recover
from codingagent.session.reviewing import Remade
from codingagent.session.seams import (
    FrontEnd,
    Prompt,
    Reply,
    ReplySource,
    Stop,
    StopReason,
    TurnReport,
)
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.settings import Settings
from codingagent.state import Environment, SessionError, SessionState
from codingagent.transaction.rollback import TurnInterrupted, interrupted_turn
from codingagent.transaction.undo import UndoReport, undo

if TYPE_CHECKING:
    from filelock import FileLock

    from codingagent.review.decision import Choice


class SessionLoop:
    """A session's loop. Use it as a context manager: it holds the session's lock, so one
    loop (one terminal, one page) applies replies to a session at a time."""

    def __init__(
        self,
        store: SessionStore,
        settings: Settings,
        session_id: str,
        listener: FrontEnd,
        *,
        interactive: bool = False,
        automatic: bool = False,
        shell: Shell | None = None,
        copy: Callable[[str], str | None] | None = None,
    ) -> None:
        """``interactive``: the user can answer approval questions and the LLM's ASK.
        ``automatic``: replies come from a model, with nobody between turns (see the module
        doc). ``shell``: made from the settings when the first turn needs it, if not given.
        ``copy`` puts a prompt on the clipboard (None when it did, else why not): the front
        end's, used when the settings copy prompts; a model's prompts are never copied."""
        self.store = store
        self.settings = settings
        self.session_id = store.resolve(session_id)
        self._listener = listener
        self._interactive = interactive
        self._automatic = automatic
        self._replies = 0  # replies taken in this run
        self._idle = 0  # replies in a row that ran no command
        self._refused = 0  # replies in a row that were not applied
        self._given_shell = shell
        self._copy = copy
        self._shell: Shell | None = None
        self._secret_files_noted = False  # the secret files were told once
        self._probed: Environment | None = None
        self._stop = threading.Event()
        self._lock: FileLock | None = None

    def __enter__(self) -> SessionLoop:
        self._lock = self.store.hold(self.session_id)
        return self

    def __exit__(self, *exc_info: object) -> None:
        file_scan.keep_record()  # what the secret scan read, for the next process
        if self._lock is not None:
            self._lock.release()

    @property
    def listener(self) -> FrontEnd:
        return self._listener

    # --- the loop ------------------------------------------------------------------------

    def run(
        self, source: ReplySource, follow_up: str | None = None, files: Sequence[str] = ()
    ) -> Stop:
        """Take replies from ``source`` until the session stops; say why it stopped."""
        self._stop.clear()
        self._replies = self._idle = self._refused = 0
        try:
            self._shell_once()  # which sandbox and approval hold, before any reply
            prompt = self.prepare(follow_up, files)
            if prompt is None:
                return self._stopped(Stop(StopReason.COMPLETE, ""))
            self._listener.watching(source)
            while True:
                try:
                    reply = source.next_reply(prompt, self._stop)
                except Fault as fault:
                    self._passing(fault)
                    continue
                if reply is None:
                    return self._stopped(Stop(StopReason.SOURCE_ENDED, ""))
                self._listener.reply_received(reply)
                _, delivered, stop = self._turn(reply, False, source.done_with)
                prompt = delivered or prompt
                if stop is not None:
                    return self._stopped(stop)
        except KeyboardInterrupt as e:
            rolled_back = f" ({interrupted_turn(e)})" if isinstance(e, TurnInterrupted) else ""
            return self._stopped(
                Stop(
                    StopReason.INTERRUPTED,
                    f"Stopped{rolled_back}. Continue later with: codingagent resume "
                    f"{self.session_id}",
                )
            )

    def prepare(self, follow_up: str | None = None, files: Sequence[str] = ()) -> Prompt | None:
        """Make the session ready for a reply; its current prompt, or None when a recovered
        turn completed it. A complete session, or one at its turn limit, is a SessionError.
        ``files``: paths the user named (``resume --file``), shown whole in the prompt."""
        recovered = self.recover() or self._held_again()
        self._keep_environment()
        question = self.store.load(self.session_id).question
        if question is not None:
            self._listener.note(f"The LLM asked: {question}")
            answer = self._listener.answer_question(question) if self._interactive else None
            if not answer:
                raise SessionError(self._waiting_message())
            answer_question(self.store, self.session_id, answer, self.prompt_options)
        if follow_up is not None:
            follow_up_session(self.store, self.session_id, follow_up, self.prompt_options)
        if files:
            name_files(self.store, self.session_id, files, self.prompt_options)
        state = self.store.load(self.session_id)
        if state.is_complete:
            if recovered is not None:
                return None
            raise SessionError(
                f"Session {self.session_id} is complete: {state.summary or ''} (give it a "
                'follow-up with: codingagent resume --task "...")'
            )
        self._refuse_over_limit(state)
        check = session_check(self.settings.check, self._shell_once(), self._listener.running)
        check_anew(self.store, state, check, self.prompt_options, self._listener.note)
        outbox = ensure_outbox(self.store, state, self.prompt_options)
        return self._offer(outbox, state.sequence_number)

    def step(
        self,
        reply: Reply,
        force: bool = False,
        done_with: Callable[[Reply, TurnReport], None] | None = None,
    ) -> TurnReport:
        """Apply one reply outside a loop (``codingagent step``, the page's Apply) as a turn of
        :meth:`run` is applied, and say if the session stops; ``done_with`` is the reply's
        source's hand-off, if it has one."""
        self.recover()
        self._refuse_over_limit(self.store.load(self.session_id))
        report, _, stop = self._turn(reply, force, done_with)
        if stop is not None:
            self._stopped(stop)
        return report

    def _turn(
        self,
        reply: Reply,
        force: bool,
        done_with: Callable[[Reply, TurnReport], None] | None,
    ) -> tuple[TurnReport, Prompt | None, Stop | None]:
        """One reply, in a loop or alone: applied, handed back to its source, an ASK put to
        the user, the next prompt delivered; the report, that prompt, and why the session
        stops (None while it goes on)."""
        report = self.apply(reply, force)
        if done_with is not None:
            try:
                done_with(reply, report)
            except Fault as fault:
                self._passing(fault)
        report = self.ask_user(self.review_user(report))
        self._count(report)
        return report, self.deliver(report), self.should_stop(report)

    def recover(self) -> TurnReport | None:
        """Finish a turn an earlier agent left half done (see :func:`.recovery.recover`)."""
        if not self.store.journal_path(self.session_id).exists():
            return None  # nothing to do: no shell needed either
        try:
            report = recover(self.store, self.session_id, self._turn_options())
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
        """One turn: the reply applied as a transaction; the listener sees every result, and
        once, which secret files the turn's commands could not read."""
        report = apply_reply(self.store, self.session_id, reply, self._turn_options(), force)
        found = report.outcome.secret_files
        if found is not None and self._shell is not None and not self._secret_files_noted:
            self._secret_files_noted = True
            for line in secret_file_notes(found, self._shell.hides_files):
                self._listener.note(line)
        self._listener.turn_applied(report)
        return report

    def ask_user(self, report: TurnReport) -> TurnReport:
        """After a turn that ends on an ASK: the report once the user answered here (with the
        prompt holding the answer), or as it was."""
        question = report.state.question
        if report.skipped or question is None or not self._interactive:
            return report
        answer = self._listener.answer_question(question)
        if not answer:
            return report
        outbox = answer_question(self.store, self.session_id, answer, self.prompt_options)
        return replace(report, state=self.store.load(self.session_id), outbox=outbox)

    def review_user(self, report: TurnReport) -> TurnReport:
        """After a reply held for review (docs/review.md): its turn once the user decided
        here, or the report as it was (they decide later: ``codingagent review``, the page)."""
        while report.review is not None and self._interactive:
            choice = self._listener.review(report.review)
            if choice is None:
                break
            try:
                return self._decide(choice)
            except Remade as remade:  # the files changed meanwhile: decide again
                self._listener.note(str(remade))
                held = remade.held
                report = replace(report, review=held, skipped=held is None, notes=[str(remade)])
        return report

    def decide(self, choice: Choice) -> TurnReport:
        """Apply the held review as ``choice`` decides, as :meth:`step` applies a reply."""
        self.recover()
        report = self.ask_user(self._decide(choice))
        self.deliver(report)
        if (stop := self.should_stop(report)) is not None:
            self._stopped(stop)
        return report

    def _decide(self, choice: Choice) -> TurnReport:
        if choice.discard:  # nothing applied; the prompt waits for another reply
            report = reviewing.discard(self.store, self.session_id, self.prompt_options)
        else:
            report = reviewing.decide(self.store, self.session_id, choice, self._turn_options())
        self._listener.turn_applied(report)
        return report

    def _held_again(self) -> TurnReport | None:
        """A review held when the agent last stopped is put to the user again: the turn they
        decide here; else a SessionError says how to decide."""
        held = reviewing.current(self.store, self.session_id)
        if held is None:
            return None
        report = self.review_user(reviewing.held_report(self.store, held))
        if report.review is not None:
            raise SessionError(reviewing.waiting(self.session_id, report.review))
        return None if report.skipped else report

    def answer(self, text: str) -> Prompt:
        """The user's answer to the LLM's question (``codingagent answer``); offers the
        prompt that carries it."""
        path = answer_question(self.store, self.session_id, text, self.prompt_options)
        return self._offer(path, self.store.load(self.session_id).sequence_number)

    def should_stop(self, report: TurnReport) -> Stop | None:
        """Whether the session stops after this turn, and why: the one place that decides."""
        if report.review is not None:  # held: decided elsewhere
            return Stop(StopReason.REVIEW, reviewing.waiting(self.session_id, report.review))
        if report.state.question is not None:
            return Stop(StopReason.QUESTION, self._waiting_message())
        if report.state.is_complete:
            return Stop(StopReason.COMPLETE, "")
        if self._over_limit(report.state):
            return Stop(StopReason.TURN_LIMIT, self._limit_message())
        if not self._automatic:
            return None
        if self._refused >= 2:
            why = report.notes[0] if report.notes else ""
            return Stop(
                StopReason.REFUSED,
                f"Stopped: two replies in a row were not applied; the last: {why} Continue "
                f"with: codingagent resume {self.session_id} --model ...",
            )
        if self._idle >= 2:
            return Stop(
                StopReason.NO_COMMANDS,
                "Stopped: two replies in a row ran no command (the model answers without "
                "commands, or repeats itself). Continue with: codingagent resume "
                f"{self.session_id}",
            )
        if self._replies >= self.settings.model_max_turns:
            return Stop(
                StopReason.TURN_LIMIT,
                f"Stopped after {self._replies} model turns (model_max_turns); continue with: "
                f"codingagent resume {self.session_id}",
            )
        return None

    def deliver(self, report: TurnReport) -> Prompt | None:
        """Hand the turn's next prompt to the user; None when the turn wrote none."""
        if report.skipped or report.outbox is None:
            return None
        return self._offer(report.outbox, report.state.sequence_number)

    def undo(self, turns: int = 1, force: bool = False) -> UndoReport:
        """Restore the files of the last ``turns`` turns and rewind; offers the prompt again."""
        held = reviewing.current(self.store, self.session_id)
        if held is not None:  # decided or dropped first
            raise SessionError(reviewing.waiting(self.session_id, held, "before undoing a turn"))
        report = undo(self.store, self.session_id, turns, force, self.prompt_options)
        self._listener.undone(report)
        self._offer(report.outbox, report.state.sequence_number)
        return report

    def stop(self) -> None:
        """Ask a running :meth:`run` to return (from another thread)."""
        self._stop.set()

    @property
    def prompt_options(self) -> PromptOptions:
        return PromptOptions.from_settings(self.settings)

    # --- helpers -------------------------------------------------------------------------

    def _environment(self) -> Environment:
        """What commands run in, probed once a loop inside the command sandbox; each turn
        keeps it in the state (committed with the turn), so the next prompt shows the
        Environment section when it changed."""
        if self._probed is None:
            workspace = Path(self.store.load(self.session_id).workspace)
            self._probed = probe(self._shell_once(), workspace)
        return self._probed

    def _keep_environment(self) -> None:
        """Outside a turn (``prepare``): keep a changed environment in the state now."""
        state = self.store.load(self.session_id)
        environment = self._environment()
        if state.environment != environment:
            state.environment = environment
            self.store.save(state)

    def _passing(self, fault: Fault) -> None:
        """A fault the loop can wait out (``inbox/`` deleted) is shown; any other ends it."""
        if not fault.passing:
            raise fault
        self._listener.note(f"warning: {fault}")

    def _observed_shell(self) -> Shell:
        """The shell for this loop's turns, the listener told while each command runs."""
        return cast(Shell, ObservedShell(self._shell_once(), self._listener))

    def _shell_once(self) -> Shell:
        """The loop's shell, made once; says which sandbox and approval hold."""
        if self._shell is None:
            shell = self._given_shell or make_shell(self.settings, self.store)
            workspace = Path(self.store.load(self.session_id).workspace)
            policy = approval_policy(self.settings, shell, self._interactive, self._automatic)
            self._shell = set_up_shell(shell, policy, self._listener, workspace, self.store)
        return self._shell

    def _offer(self, path: Path, sequence: int) -> Prompt:
        text = path.read_text(encoding="utf-8")
        prompt = Prompt(self.session_id, sequence, path, text, self.settings.context_tokens)
        # A model's prompts stay off the clipboard: nobody pastes them, and the user's own
        # clipboard is left alone.
        wanted = self._copy is not None and self.settings.copies_prompts and not self._automatic
        problem = self._copy(prompt.text) if self._copy is not None and wanted else ""
        self._listener.prompt_ready(prompt, self.settings.token_budget, problem)
        return prompt

    def _count(self, report: TurnReport) -> None:
        """Count this run's replies, those in a row that ran no command and those in a row
        that were not applied."""
        self._replies += 1
        self._refused = self._refused + 1 if report.skipped else 0
        ran = not report.skipped and not report.found_no_command
        self._idle = 0 if ran else self._idle + 1

    def _over_limit(self, state: SessionState) -> bool:
        limit = self.settings.max_turns
        return limit is not None and state.sequence_number > limit

    def _refuse_over_limit(self, state: SessionState) -> None:
        if self._over_limit(state):
            raise SessionError(self._limit_message())

    def _waiting_message(self) -> str:
        return (
            f"Session {self.session_id} waits for your answer to the LLM's question; answer "
            f'with: codingagent answer {self.session_id} "..." (then resume)'
        )

    def _limit_message(self) -> str:
        return (
            f"Session {self.session_id} reached max_turns ({self.settings.max_turns}); raise "
            "it (--max-turns, CODINGAGENT_MAX_TURNS or codingagent.toml) to go on"
        )

    def _stopped(self, stop: Stop) -> Stop:
        self._listener.stopped(stop)
        return stop

    def _turn_options(self) -> TurnOptions:
        return TurnOptions(
            shell=self._observed_shell(),
            on_result=self._listener.result,
            max_reply_bytes=self.settings.max_reply_bytes,
            prompt=self.prompt_options,
            preimage_cap=self.settings.max_preimage_bytes,
            environment=self._environment(),
            check=session_check(self.settings.check, self._shell_once(), self._listener.running),
            hold=reviewing.hold if self.settings.review else None,
        )
