"""One turn as a transaction: a reply in, its commands applied, the next prompt out.

    decode -> admission -> [held for review] -> journal -> parse -> execute (command changes
      captured) -> check -> record -> render the next prompt -> commit (the state) -> journal closed

:func:`apply_reply` runs the steps in that order, each named once: the reply is decoded once
(:mod:`codingagent.protocol.replies`), admission reads that decoded reply
(:mod:`codingagent.session.admission`), review may hold it (``TurnOptions.hold``), and
:func:`apply_admitted` is the turn itself. What keeps the turn whole is lent to the executor as
arguments of :func:`codingagent.execute.execute`: the journal (a
:class:`~codingagent.workspace.preimage.Keeper`) and the capture of command changes (a
:class:`~codingagent.workspace.snapshot.CommandWatch`,
:class:`codingagent.transaction.capture.Watch`).

The journal (:mod:`codingagent.transaction.journal`) exists exactly while a turn is in flight.
Before any workspace file is written or deleted, its pre-image is appended to the turn's history and
fsynced (those a reply's file commands name, in one append before the first runs).  The
reply, the state before the turn and the journal are durable before the first command runs;
every other file the turn writes, and each folder it wrote in, is fsynced when the turn's
grouped block ends (all at once), before the commit point.  If the agent dies mid-turn,
:func:`codingagent.session.recovery.recover` finds the journal: if the state was already saved
the turn is complete and only the journal goes; otherwise every file is put back from its
pre-image (what cannot be, such as a path now leading out of the workspace, is reported, never
fatal), the journal is marked rolled back and the reply is applied afresh.  Recovery is
idempotent at every kill point.  So after any crash the workspace and session equal "turn not
applied" or "turn fully applied".  A Ctrl-C rolls the turn back at once, and its reply is not
applied again unless forced.  A fault of the machine (a full disk) rolls it back too
(:mod:`codingagent.faults`).  At most ``MAX_COMMANDS`` commands of a reply run, and a turn's
pre-images are capped (``preimage_cap``): no reply stalls or fills the disk.

What a RUN_COMMAND changes in the workspace is kept too, within the limits of docs/undo.md."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from codingagent.execute import TurnOutcome, execute
from codingagent.faults import TurnNotApplied
from codingagent.fsio import folder_syncs_grouped
from codingagent.prompt.outbox import WrittenOutbox, ensure_outbox, write_outbox
from codingagent.prompt.render import DEFAULT_PROMPT, PromptOptions
from codingagent.protocol.commands import Command, RunCommand
from codingagent.protocol.replies import REPLY_SIZE_CAP, DecodedReply, note_result, unreadable
from codingagent.records.history import TurnRecord, digest_of, turn_record
from codingagent.records.store import SessionStore, open_workspace
from codingagent.sandbox.shell import Shell
from codingagent.session import admission
from codingagent.session.checking import Check, Checking, turn_checking
from codingagent.session.seams import Received, Refusal, Reply, TurnReport
from codingagent.state import CommandResult, Environment, SessionError, SessionState, utc_now
from codingagent.transaction.capture import Watch
from codingagent.transaction.crashpoints import OnResult, after_each_result, crash_point
from codingagent.transaction.journal import PREIMAGE_CAP, Journal, refuse_if_interrupted
from codingagent.transaction.rollback import (
    TurnInterrupted,
    roll_back_failed,
    roll_back_interrupted,
)
from codingagent.workspace import Workspace, autorun

if TYPE_CHECKING:
    from codingagent.review.decision import Decided

# Asked after admission let a reply in: a report when it holds the reply for the user's review
# (session/reviewing.py, docs/review.md), None to apply it now.
Hold = Callable[
    [SessionStore, SessionState, Received, "TurnOptions", Sequence[str]], TurnReport | None
]


@dataclass(frozen=True)
class TurnOptions:
    """How a session's turns are applied: the same for every reply of one run."""

    shell: Shell  # what RUN_COMMANDs run in
    on_result: OnResult | None = None  # told each command's result as it comes
    max_reply_bytes: int = REPLY_SIZE_CAP  # a reply's bytes past this are not read
    prompt: PromptOptions = DEFAULT_PROMPT  # how the next prompt is written
    preimage_cap: int = PREIMAGE_CAP  # bytes of pre-images one turn may keep
    # What commands run in as probed now, kept in the state with the turn (the next prompt
    # shows it when it changed); None keeps the state's.
    environment: Environment | None = None
    check: Check | None = None  # the user's check command (session/checking.py), if any
    hold: Hold | None = None  # the review setting: a reply's file changes wait for the user


def apply_reply(
    store: SessionStore,
    session_id: str,
    reply: Reply,
    options: TurnOptions,
    force: bool = False,
) -> TurnReport:
    """Apply ``reply`` to the session as one all-or-nothing turn.

    ``reply.size`` is the reply's real size when ``reply.data`` holds only its first bytes (a
    file over ``max_reply_bytes`` is read no further); ``reply.meta`` goes into the turn's
    ``meta.json`` (a model's name, tokens and seconds); ``reply.answers`` is the prompt its
    source knows it answers (an endpoint, the page), None when only the reply's echo can say
    (:mod:`codingagent.session.admission`).

    While the LLM's question (ASK) waits for the user's answer, no reply is applied: it is
    kept in ``refused/``. A reply whose content (trailing whitespace aside) was already applied
    in this session, or was rolled back by a Ctrl-C, is skipped unless ``force`` is set,
    whatever its echo says. So is, unless ``force`` is set, a reply that says
    (``Session: <id> Sequence: <n>``) it answers another session or an older prompt: it is
    kept in ``sessions/{id}/refused/``.

    A Ctrl-C (KeyboardInterrupt) before the commit point rolls the turn back and propagates.
    """
    state = store.load(session_id)
    refuse_if_interrupted(store, session_id)
    received = Received.of(reply, options.max_reply_bytes)  # decoded once, here
    verdict = admission.check(store, state, received, force)
    if verdict.refusal is not None:
        return _skipped(store, state, verdict.refusal, options.prompt)
    if state.is_complete:
        raise SessionError(f"Session {session_id} is complete; it takes no more replies")
    if options.hold is not None:  # [review]: its file changes wait for the user
        held = options.hold(store, state, received, options, verdict.notes)
        if held is not None:
            return held
    return apply_admitted(store, state, received, options, verdict.notes)


def apply_admitted(
    store: SessionStore,
    state: SessionState,
    received: Received,
    options: TurnOptions,
    told: Sequence[str] = (),
    decided: Decided | None = None,
) -> TurnReport:
    """The turn itself, once admission let the ``received`` reply in (also recovery's way to
    apply a reply again); ``told``: what admission tells the model about the reply (it sees it
    first); ``decided``: the user's review of its file changes (docs/review.md), whose steps
    its file commands take."""
    reply, decoded = received.reply, received.decoded
    started, arrived = time.perf_counter(), utc_now()
    session_id, answered = state.session_id, state.sequence_number
    ws = open_workspace(store, state)
    record, journal = _journal(store, state, reply, options.preimage_cap)  # 1. journal
    try:
        with folder_syncs_grouped():  # every folder this block writes in is durable after it
            commands, problems = _parse(decoded, told, options.on_result)  # 2. parse
            began_ns = os.stat(journal.path).st_ctime_ns  # the clock file times come from
            watch = Watch(ws, journal, options.shell)  # captures what each command changes
            checking = turn_checking(options.check, state, ws, watch, options.on_result)
            outcome = _execute(  # 3. execute, each command's changes captured by watch
                commands, ws, options, journal, state, problems, watch, checking, decided
            )
            if checking is not None:  # 4. check: after a turn that changed files
                checking.settle(outcome)
            auto_run = _auto_run(ws, commands, outcome, began_ns, watch.placed)
            _record(  # 5. record: the state after the turn, the turn's history
                record, state, decoded, commands, outcome, options, checking, decided, ws, journal
            )
            written = _render(store, state, options.prompt, ws)  # 6. render the next prompt
            meta = {
                "sequence": answered,
                "replyFile": reply.source,
                "sha256": hashlib.sha256(decoded.data).hexdigest(),
                "normalizedSha256": decoded.digest,
                "receivedAt": arrived.isoformat(),
                "appliedAt": state.updated_at.isoformat(),
                "durationMs": round((time.perf_counter() - started) * 1000, 1),
                "nextOutbox": written.path.name if written else None,
                "masked": written.masked if written else 0,
                "maskedKinds": dict(written.masked_kinds) if written else {},
                "autoRun": auto_run,
                **({"rendered": True} if decoded.rendered else {}),
                **({"review": decided.meta()} if decided is not None else {}),
                **reply.meta,
            }
            record.write_meta(meta)
            crash_point("outbox")
        store.save(state)  # 7. commit: the commit point
    except KeyboardInterrupt:
        if store.load(session_id).sequence_number != answered:  # committed: nothing to undo
            raise
        raise TurnInterrupted(
            roll_back_interrupted(store, session_id, record, ws, answered)
        ) from None
    except Exception as error:
        if store.load(session_id).sequence_number != answered:
            raise  # the state was saved: committed after all; recovery removes the journal
        left, kept = roll_back_failed(store, session_id, record, journal, ws, answered)
        if not isinstance(error, OSError | SessionError):
            raise  # a bug: rolled back, and shown as one
        raise TurnNotApplied(session_id, answered, reply.source, error, left, kept) from error
    crash_point("state")
    journal.close()
    notes = [each.summary for each in problems if not each.success]  # NOTEs are results only
    outbox = written.path if written else None
    masked = written.masked if written else 0
    return TurnReport(
        state, outcome, outbox, record.folder, notes=notes, masked=masked, auto_run=auto_run
    )


def _journal(
    store: SessionStore, state: SessionState, reply: Reply, preimage_cap: int
) -> tuple[TurnRecord, Journal]:
    """The turn's history folder with the reply and the state before, then the journal: both
    durable before anything in the workspace changes (nothing changed yet when it fails:
    :class:`TurnNotApplied`).

    A folder already there was left by a crash: before its journal was written (it never
    committed: set aside), or by a turn recovery rolled back to apply again: then it names the
    reply, and is copied aside and emptied of all but the reply, so a kill at any instant
    leaves a journal whose folder holds the reply.
    """
    try:
        record = turn_record(store, state.session_id, state.sequence_number)
        journal_path = store.journal_path(state.session_id)
        if record.folder.exists() and journal_path.exists():  # recovery applies it again
            store.set_aside(state.session_id, record.folder, "aborted", copy=True)
            record.clear_outcome()
        elif record.folder.exists():
            store.set_aside(state.session_id, record.folder, "aborted")
        record.write_opening(reply.data, state, reply.rendered)
        journal = Journal(journal_path, record, state.sequence_number, reply.source, preimage_cap)
    except OSError as error:  # no journal yet: nothing was changed
        raise TurnNotApplied(
            state.session_id, state.sequence_number, reply.source, error
        ) from error
    crash_point("journal")
    return record, journal


def _parse(
    decoded: DecodedReply, told: Sequence[str], on_result: OnResult | None
) -> tuple[list[Command], list[CommandResult]]:
    """The reply's commands, and the results the model sees before theirs: what admission
    told it (``told``), then the problems with the reply itself."""
    commands, problems = decoded.read()
    problems[:0] = [note_result(note) for note in told]
    if on_result is not None:
        for each in problems:
            on_result(each)
    return commands, problems


def _execute(
    commands: list[Command],
    ws: Workspace,
    options: TurnOptions,
    journal: Journal,
    state: SessionState,
    problems: list[CommandResult],
    watch: Watch,
    checking: Checking | None,
    decided: Decided | None,
) -> TurnOutcome:
    """Run the commands, lending the executor what keeps the turn whole: the ``journal``
    records each file's pre-image before it changes, and ``watch``
    (:mod:`codingagent.transaction.capture`) what each RUN_COMMAND changes."""
    return execute(
        commands,
        ws,
        options.shell,
        after_each_result(options.on_result),
        problems,
        shown=state.shown_files,
        session_id=state.session_id,
        check=checking.now if checking is not None else None,
        steps=decided.steps() if decided is not None else None,
        keeper=journal,
        watch=watch,
    )


def _record(
    record: TurnRecord,
    state: SessionState,
    decoded: DecodedReply,
    commands: list[Command],
    outcome: TurnOutcome,
    options: TurnOptions,
    checking: Checking | None,
    decided: Decided | None,
    ws: Workspace,
    journal: Journal,
) -> None:
    """The state after the turn (not saved yet) and the turn's history: its commands, results
    and the digests of the files it left."""
    _advance(state, outcome, decided)
    state.reply_digests.append(decoded.digest)
    if checking is not None:
        checking.record(state)
    state.parse_failed = unreadable(commands)
    if options.environment is not None:
        state.environment = options.environment
    record.write_outcome(
        [c.model_dump() for c in commands],
        [r.model_dump(by_alias=True) for r in outcome.results],
        {path: _postimage(ws, outcome, path) for path in journal.paths},
    )
    crash_point("history")


def _render(
    store: SessionStore, state: SessionState, prompt: PromptOptions, ws: Workspace
) -> WrittenOutbox | None:
    """The next prompt, written (None while the session waits: complete, or a question)."""
    if state.is_complete or state.question is not None:
        return None
    return write_outbox(store, state, prompt, ws, keep_shown=True)


def _auto_run(
    ws: Workspace,
    commands: list[Command],
    outcome: TurnOutcome,
    began_ns: int,
    placed: list[str] | None,
) -> list[str]:
    """What the turn left that would run code for the user (docs/security.md §5), looked for
    after a turn that ran a command or wrote such a file itself: among the paths the turn
    changed where the commands' overlay layers (``placed``) say which, else in a walk."""
    ran = any(isinstance(command, RunCommand) for command in commands)
    wrote = any(PurePosixPath(path).name in autorun.WATCHED for path in outcome.changed)
    if not (ran or wrote):
        return []
    return autorun.scan(ws.root, began_ns, None if placed is None else outcome.changed + placed)


def _skipped(
    store: SessionStore, state: SessionState, refusal: Refusal, prompt: PromptOptions
) -> TurnReport:
    """The report of a reply that was not applied; the prompt it should have answered stays."""
    waiting = state.is_complete or state.question is not None
    outbox = None if waiting else ensure_outbox(store, state, prompt)
    return TurnReport(
        state,
        TurnOutcome(),
        outbox,
        refusal.folder,
        notes=[refusal.note],
        skipped=True,
        refusal=refusal,
    )


def _postimage(ws: Workspace, outcome: TurnOutcome, path: str) -> str | None:
    """sha256 of the file at ``path`` as the turn left it: as a file command wrote it, else
    read (None: absent)."""
    text = outcome.written.get(path)
    return (
        hashlib.sha256(text.encode("utf-8")).hexdigest()
        if text is not None
        else digest_of(ws, path)
    )


def _advance(state: SessionState, outcome: TurnOutcome, decided: Decided | None) -> None:
    """The state after the turn (not saved yet); ``decided``: the user's review of the reply,
    whose rejections and note the next prompt shows, with each file written only in part."""
    state.sequence_number += 1
    state.last_results = outcome.results
    state.read_file_requests = outcome.read_requests
    state.search_results = outcome.searches
    state.shown_files = outcome.shown
    state.answers = []  # shown in the prompt this reply answered
    state.question = outcome.question
    state.rejected = decided.rejected if decided is not None else []
    state.review_note = decided.note if decided is not None else None
    if decided is not None:  # a file written in part is shown as it now is
        shown = [p for p in decided.partly if p not in outcome.read_requests]
        state.read_file_requests = [*outcome.read_requests, *shown]
    state.updated_at = utc_now()
    if outcome.done is not None:
        state.is_complete = True
        state.summary = outcome.done
