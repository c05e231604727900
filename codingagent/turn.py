"""One turn as a transaction: a reply in, its commands applied, the next outbox out.

    reply bytes -> dedupe -> journal -> decode -> parse -> execute (pre-images first)
      -> history -> next outbox -> state (the commit point) -> journal removed

The journal (:mod:`codingagent.journal`) exists exactly while a turn is in flight.  Before any
workspace file is written or deleted, its pre-image is appended to the turn's history and
fsynced.  The reply, the state before the turn and the journal are durable before the first
command runs; every other file the turn writes has its data fsynced as it is written and each
folder it wrote in fsynced once, before the commit point.  If the agent dies mid-turn,
:func:`recover` finds the journal: if the state was already saved the turn is complete and only
the journal goes; otherwise every file is put back from its pre-image (what cannot be, such as a
path now leading out of the workspace, is reported, never fatal), the journal is marked rolled
back and the reply is applied afresh.  Recovery is idempotent at every kill point.  So after any
crash the workspace and session equal "turn not applied" or "turn fully applied".  A Ctrl-C
rolls the turn back at once, and its reply is not applied again unless forced.  A fault of the
machine (a full disk) rolls it back too (:mod:`codingagent.faults`).  Which replies are not
applied at all is :mod:`codingagent.refusals`.  At most ``MAX_COMMANDS`` commands of a reply
run, and a turn's pre-images are capped (``preimage_cap``): no reply stalls or fills the disk.

Side effects of RUN_COMMAND outside the files the file commands touched cannot be rolled back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from codingagent import autorun, refusals
from codingagent.commands import Command, CommandResult, ParseError, RunCommand
from codingagent.crashpoints import OnResult, after_each_result, crash_point
from codingagent.environment import Environment
from codingagent.execute import TurnOutcome, execute
from codingagent.faults import Fault, TurnNotApplied, describe, remedy
from codingagent.fsio import atomic_write, folder_syncs_grouped
from codingagent.journal import (
    PREIMAGE_CAP,
    Journal,
    Restored,
    TurnRecord,
    digest_of,
    finish_undo,
    refuse_if_interrupted,
    turn_record,
)
from codingagent.outbox import ensure_outbox, next_outbox, open_workspace, write_outbox
from codingagent.parser import parse, unwrapped_diff
from codingagent.refusals import Refusal, reply_digest
from codingagent.render import DEFAULT_PROMPT, PromptOptions
from codingagent.session import Answer, SessionError, SessionState, SessionStore, utc_now
from codingagent.shell import Shell
from codingagent.workspace import Workspace

REPLY_SIZE_CAP = 5 * 1024 * 1024
MAX_COMMANDS = 10_000  # commands of one reply that are run; a flood of them would stall the turn


@dataclass
class TurnReport:
    """What happened in one turn, for the console."""

    state: SessionState
    outcome: TurnOutcome
    outbox: Path | None  # the next prompt, or None when the session is complete
    history: Path
    notes: list[str] = field(default_factory=list)  # problems with the reply file itself
    skipped: bool = False  # a duplicate or a stale reply: nothing was applied
    masked: int = 0  # secrets masked in the next prompt
    # Files the turn left that run code when the user works in the folder (autorun.scan).
    auto_run: list[str] = field(default_factory=list)


# --- sessions ------------------------------------------------------------------------------


def start_session(
    store: SessionStore,
    task: str,
    workspace: Path | None = None,
    prompt: PromptOptions = DEFAULT_PROMPT,
    environment: Callable[[Path], Environment] | None = None,
) -> tuple[SessionState, Path]:
    """Create a session and write its first outbox; ``environment`` probes the workspace
    folder for the prompt's Environment section."""
    if not task.strip():
        raise SessionError("The task is empty; say what the LLM should do")
    store.ensure_dirs()
    folder = Path(workspace).resolve() if workspace else store.workspace
    if not folder.is_dir():
        raise SessionError(f"Workspace folder does not exist: {folder}")
    state = SessionState(
        session_id=store.new_id(),
        task=task.strip(),
        workspace=str(folder),
        environment=environment(folder) if environment else None,
    )
    store.save(state)  # first: a missing outbox is rewritten by `show` and `resume`
    try:
        outbox = write_outbox(store, state, prompt).path
        store.save(state)  # what the outbox showed
    except OSError as e:
        raise Fault(
            f"Session {state.session_id} was created, but its first prompt was not written: "
            f"{describe(e)}. {remedy(e).capitalize()}, then run 'codingagent resume "
            f"{state.session_id}'"
        ) from e
    return state, outbox


def follow_up_session(
    store: SessionStore,
    session_id: str,
    instruction: str,
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> Path:
    """Give the session a follow-up instruction from the user (``resume --task``).

    A completed session is reopened, keeping its history; the current outbox is rewritten so
    its PROMPT is the instruction, and every later HEADER carries it.
    """
    if not instruction.strip():
        raise SessionError("The follow-up task is empty; say what the LLM should do next")
    state = store.load(session_id)
    refuse_if_interrupted(store, session_id)
    state.follow_ups.append(instruction.strip())
    state.follow_up_sequence = state.sequence_number
    state.is_complete = False
    return _new_prompt(store, state, prompt)


def answer_question(
    store: SessionStore, session_id: str, answer: str, prompt: PromptOptions = DEFAULT_PROMPT
) -> Path:
    """Record the user's answer to the LLM's ASK and write the prompt that waited for it.

    The turn that asked wrote no prompt (one without the answer would only be a wrong one to
    paste): it is written here, with the answer under "## Answers", and the session takes
    replies again.
    """
    if not answer.strip():
        raise SessionError("The answer is empty; say what the LLM should know")
    state = store.load(session_id)
    if state.question is None:
        raise SessionError(f"Session {session_id} has no question waiting for an answer")
    state.answers.append(Answer(question=state.question, answer=answer.strip()))
    state.question = None
    return _new_prompt(store, state, prompt)


def _new_prompt(store: SessionStore, state: SessionState, prompt: PromptOptions) -> Path:
    """The current prompt written again for what the user just added, and the state saved."""
    state.updated_at = utc_now()
    outbox = next_outbox(store, state, prompt).path
    store.save(state)
    return outbox


# --- one turn ------------------------------------------------------------------------------


def apply_reply(
    store: SessionStore,
    session_id: str,
    data: bytes,
    *,
    source: str,
    shell: Shell,
    on_result: OnResult | None = None,
    force: bool = False,
    max_reply_bytes: int = REPLY_SIZE_CAP,
    size: int | None = None,
    prompt: PromptOptions = DEFAULT_PROMPT,
    extra_meta: Mapping[str, object] | None = None,
    preimage_cap: int = PREIMAGE_CAP,
    environment: Environment | None = None,
) -> TurnReport:
    """Apply the reply ``data`` to the session as one all-or-nothing turn.

    ``size`` is the reply's real size when ``data`` holds only its first bytes (a file over
    ``max_reply_bytes`` is read no further). ``extra_meta`` goes into the turn's ``meta.json``
    (a model's name, tokens and seconds). ``environment``, what commands run in as probed
    now, is kept in the state with the turn (the next prompt shows it when it changed).

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
    refusal = refusals.check(store, state, data, source, max_reply_bytes, force)
    if refusal is not None:
        return _skipped(store, state, refusal, prompt)
    if state.is_complete:
        raise SessionError(f"Session {session_id} is complete; it takes no more replies")
    return _apply(
        store,
        state,
        data,
        source=source,
        shell=shell,
        on_result=on_result,
        max_reply_bytes=max_reply_bytes,
        size=size,
        prompt=prompt,
        extra_meta=extra_meta,
        preimage_cap=preimage_cap,
        environment=environment,
    )


def _apply(
    store: SessionStore,
    state: SessionState,
    data: bytes,
    *,
    source: str,
    shell: Shell,
    on_result: OnResult | None = None,
    max_reply_bytes: int = REPLY_SIZE_CAP,
    size: int | None = None,
    prompt: PromptOptions = DEFAULT_PROMPT,
    extra_meta: Mapping[str, object] | None = None,
    preimage_cap: int = PREIMAGE_CAP,
    environment: Environment | None = None,
) -> TurnReport:
    """:func:`apply_reply` after its checks (also recovery's way to apply a reply again)."""
    started = time.perf_counter()
    received = utc_now()
    session_id = state.session_id
    ws = open_workspace(store, state)
    answered = state.sequence_number
    try:
        record, journal = _open_turn(store, state, data, source, preimage_cap)
    except OSError as error:  # no journal yet: nothing was changed
        raise TurnNotApplied(session_id, answered, source, error) from error
    try:
        with folder_syncs_grouped():  # every folder this block writes in is durable after it
            commands, problems = _read_reply(data, max_reply_bytes, size)
            if on_result is not None:
                for each in problems:
                    on_result(each)
            began_ns = os.stat(journal.path).st_ctime_ns  # the clock file times come from
            outcome = _execute(commands, ws, shell, journal, state, problems, on_result)
            auto_run = _auto_run(ws, commands, outcome, began_ns)
            _advance(state, outcome)
            state.parse_failed = _unreadable(commands)
            if environment is not None:
                state.environment = environment
            record.write_outcome(
                [c.model_dump() for c in commands],
                [r.model_dump(by_alias=True) for r in outcome.results],
                {path: digest_of(ws, path) for path in journal.paths},
            )
            crash_point("history")
            waiting = state.is_complete or state.question is not None
            written = None if waiting else next_outbox(store, state, prompt)
            outbox = written.path if written else None
            masked = written.masked if written else 0
            record.write_meta(
                {
                    "sequence": answered,
                    "replyFile": source,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "normalizedSha256": reply_digest(data),
                    "receivedAt": received.isoformat(),
                    "appliedAt": state.updated_at.isoformat(),
                    "durationMs": round((time.perf_counter() - started) * 1000, 1),
                    "nextOutbox": outbox.name if outbox else None,
                    "masked": masked,
                    "autoRun": auto_run,
                    **(extra_meta or {}),
                }
            )
            crash_point("outbox")
        store.save(state)  # the commit point
    except KeyboardInterrupt:
        if store.load(session_id).sequence_number != answered:  # committed: nothing to undo
            raise
        raise TurnInterrupted(
            _roll_back_interrupted(store, session_id, record, ws, answered)
        ) from None
    except Exception as error:
        if store.load(session_id).sequence_number != answered:
            raise  # the state was saved: committed after all; recovery removes the journal
        left, kept = _roll_back_failed(store, session_id, record, journal, ws, answered)
        if not isinstance(error, OSError | SessionError):
            raise  # a bug: rolled back, and shown as one
        raise TurnNotApplied(session_id, answered, source, error, left, kept) from error
    crash_point("state")
    journal.close()
    notes = [each.summary for each in problems]
    return TurnReport(
        state, outcome, outbox, record.folder, notes=notes, masked=masked, auto_run=auto_run
    )


def _read_reply(
    data: bytes, max_reply_bytes: int, size: int | None
) -> tuple[list[Command], list[CommandResult]]:
    """The commands to run (at most ``MAX_COMMANDS``), and the problems with the reply
    itself, which the LLM sees first."""
    text, problem = decode_reply(data, max_reply_bytes, size)
    problems = [problem] if problem else []
    commands = parse(text) if text is not None else []
    if len(commands) > MAX_COMMANDS:
        problems.append(
            _problem(
                f"Your reply had {len(commands):,} commands; only the first "
                f"{MAX_COMMANDS:,} were run. Send fewer commands a reply"
            )
        )
        commands = commands[:MAX_COMMANDS]
    if not commands and not problems and text is not None:
        problems += filter(None, [_unwrapped_diff(text)])
    return commands, problems


def _auto_run(
    ws: Workspace, commands: list[Command], outcome: TurnOutcome, began_ns: int
) -> list[str]:
    """What the turn left that would run code for the user (SPEC 4.1): the workspace is
    walked after a turn that ran a command or wrote such a file itself."""
    ran = any(isinstance(command, RunCommand) for command in commands)
    wrote = any(PurePosixPath(path).name in autorun.WATCHED for path in outcome.changed)
    return autorun.scan(ws.root, began_ns) if ran or wrote else []


def _skipped(
    store: SessionStore, state: SessionState, refusal: Refusal, prompt: PromptOptions
) -> TurnReport:
    """The report of a reply that was not applied; the prompt it should have answered stays."""
    waiting = state.is_complete or state.question is not None
    outbox = None if waiting else ensure_outbox(store, state, prompt)
    return TurnReport(
        state, TurnOutcome(), outbox, refusal.folder, notes=[refusal.note], skipped=True
    )


def _open_turn(
    store: SessionStore, state: SessionState, data: bytes, source: str, preimage_cap: int
) -> tuple[TurnRecord, Journal]:
    """The turn's history folder with the reply and the state before, then the journal: both
    durable before anything in the workspace changes.

    A folder already there was left by a crash: before its journal was written (it never
    committed: set aside), or by a turn recovery rolled back to apply again: then it names the
    reply, and is copied aside and emptied of all but the reply, so a kill at any instant
    leaves a journal whose folder holds the reply.
    """
    record = turn_record(store, state.session_id, state.sequence_number)
    journal_path = store.journal_path(state.session_id)
    if record.folder.exists() and journal_path.exists():  # recovery applies it again
        store.set_aside(state.session_id, record.folder, "aborted", copy=True)
        record.clear_outcome()
    elif record.folder.exists():
        store.set_aside(state.session_id, record.folder, "aborted")
    record.write_opening(data, state)
    journal = Journal(journal_path, record, state.sequence_number, source, preimage_cap)
    crash_point("journal")
    return record, journal


class TurnInterrupted(KeyboardInterrupt):
    """Ctrl-C during a turn, which was rolled back; ``problems`` names what could not be put
    back (say, a path that now leads out of the workspace)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _put_back(
    store: SessionStore, session_id: str, record: TurnRecord, ws: Workspace, answered: int
) -> list[str]:
    """A turn stopped before its commit point undone: its next prompt removed (that frees
    space first) and its files put back from their pre-images; what could not be, by name."""
    with contextlib.suppress(OSError):
        store.outbox_path(session_id, answered + 1).unlink(missing_ok=True)
    return record.restore(ws).problems


def _roll_back_interrupted(
    store: SessionStore, session_id: str, record: TurnRecord, ws: Workspace, answered: int
) -> list[str]:
    """Undo an interrupted (Ctrl-C) turn at once: its files put back, its journal removed and
    its history kept in ``interrupted/``, where the duplicate check finds its reply, so it is
    not applied again unless asked (``--force``).  Ctrl-C is ignored meanwhile; a kill leaves
    the journal, and recovery finishes the job.  What could not be put back, by name."""
    with _sigint_ignored():
        problems = _put_back(store, session_id, record, ws, answered)
        store.journal_path(session_id).unlink()
        store.set_aside(session_id, record.folder, "interrupted")
    return problems


def _roll_back_failed(
    store: SessionStore,
    session_id: str,
    record: TurnRecord,
    journal: Journal,
    ws: Workspace,
    answered: int,
) -> tuple[str, Path | None]:
    """Undo a turn a fault of the machine stopped (a full disk, no permission), at once: its
    files put back, its journal removed and its history set aside in ``aborted/``, so the
    reply can be applied afresh.

    Returns what is left ("" when nothing: else the journal stays and recovery, ``resume``,
    finishes the job) and where the reply's copy is kept in ``aborted/``.
    """
    with _sigint_ignored():
        problems = _put_back(store, session_id, record, ws, answered)
        if problems:
            return (
                f"Rolling it back failed too: could not put back {'; '.join(problems)}; its "
                f"journal {journal.path} stays"
            ), None
        try:
            journal.close()
        except OSError as e:
            return (
                f"Its files were put back, but its journal could not be removed ({describe(e)})",
                None,
            )
        try:
            kept = store.set_aside(session_id, record.folder, "aborted")
        except OSError:  # left in place: the next turn sets it aside
            return "", None
    return "", TurnRecord(kept).reply_path


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _execute(
    commands: list[Command],
    ws: Workspace,
    shell: Shell,
    journal: Journal,
    state: SessionState,
    problems: list[CommandResult],
    on_result: OnResult | None,
) -> TurnOutcome:
    """Run the commands, each file's pre-image recorded in the journal before it changes."""
    ws.before_change = journal.record
    try:
        return execute(
            commands, ws, shell, after_each_result(on_result), problems, shown=state.shown_files
        )
    finally:
        ws.before_change = None


def _advance(state: SessionState, outcome: TurnOutcome) -> None:
    """The state after the turn (not saved yet)."""
    state.sequence_number += 1
    state.last_results = outcome.results
    state.read_file_requests = outcome.read_requests
    state.search_results = outcome.searches
    state.shown_files = outcome.shown
    state.answers = []  # shown in the prompt this reply answered
    state.question = outcome.question
    state.updated_at = utc_now()
    if outcome.done is not None:
        state.is_complete = True
        state.summary = outcome.done


def decode_reply(
    data: bytes, max_bytes: int = REPLY_SIZE_CAP, size: int | None = None
) -> tuple[str | None, CommandResult | None]:
    """The reply's text, or ``None`` when it must not be parsed, and the problem, if any.

    Bad replies never stop the session: the problem becomes a result the LLM sees next turn.
    """

    if len(data) > max_bytes:
        return None, _problem(
            f"Your reply was {size or len(data):,} bytes, over the {max_bytes:,}-byte limit; "
            "nothing in it was run. Send smaller replies."
        )
    if not data.strip():
        return None, _problem("Your reply was empty; nothing was run")
    if b"\0" in data:
        return None, _problem("Your reply contained NUL bytes (binary data); nothing in it was run")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return data.decode("utf-8", errors="replace"), _problem(
            f"Your reply was not valid UTF-8 (first bad byte at offset {e.start}); "
            "it was read with replacement characters"
        )


def _problem(summary: str) -> CommandResult:
    """A problem with the reply itself, as the result the LLM sees first."""
    return CommandResult(command="REPLY", success=False, summary=summary)


def _unwrapped_diff(text: str) -> CommandResult | None:
    """A result telling the LLM to wrap its diff in PATCH, if its reply has a diff and no
    commands (models write ```diff blocks on their own)."""
    line = unwrapped_diff(text)
    if line is None:
        return None
    return _problem(
        f"Your reply has a diff (reply line {line}) but no commands, so nothing was applied; "
        "to apply a diff, put it between a [PATCH] line and a [/PATCH] line"
    )


def _unreadable(commands: Iterable[object]) -> bool:
    """Whether a reply had a command the parser could not read, or no command at all."""
    commands = list(commands)
    return not commands or any(isinstance(c, ParseError) for c in commands)


# --- recovery ---------------------------------------------------------------------------------


def recover(store: SessionStore, session_id: str, **options: Any) -> TurnReport | None:
    """Finish what an agent killed mid-turn (or mid-undo) left behind; ``None`` if there was
    nothing to apply.

    A turn whose state was saved is complete: only its journal is removed.  Otherwise its files
    are restored from their pre-images (what cannot be restored, such as a path that now leads
    out of the workspace, is named in the report), the journal is marked rolled back, and the
    reply is applied afresh (its unfinished history copied into ``aborted/``).  Each step can be
    run again: a kill anywhere in recovery leaves a journal the next recovery completes.
    ``options`` are :func:`apply_reply`'s.
    """
    journal_path = store.journal_path(session_id)
    journal = Journal.read(journal_path)
    if journal is None:
        return None
    if journal.get("kind") == "undo":
        finish_undo(store, session_id, journal)
        return None
    sequence = journal["sequence"]
    state = store.load(session_id)
    if state.sequence_number > sequence:
        journal_path.unlink()
        return None
    record = turn_record(store, session_id, sequence)
    source = journal["replyFile"]
    reply = record.reply_path
    if not reply.is_file():  # an older agent restored the files, set the folder aside, died
        kept = store.sessions / session_id / "aborted"
        copies = sorted(kept.glob(f"{sequence:04d}-*/{TurnRecord.REPLY}"), key=_mtime)
        if not copies:
            journal_path.unlink()
            raise SessionError(
                f"Turn {sequence} of session {session_id} was interrupted and its history is "
                f"gone; nothing was applied. Save the reply ({source}) again to apply it"
            )
        reply, journal["rolledBack"] = copies[-1], True
    restored = Restored(journal.get("restored", []), journal.get("problems", []))
    if not journal.get("rolledBack"):
        restored = record.restore(open_workspace(store, state))
        store.outbox_path(session_id, sequence + 1).unlink(missing_ok=True)
        marked = {**journal, "rolledBack": True, **asdict(restored)}
        atomic_write(journal_path, json.dumps(marked))
        crash_point("rolled-back")
    data = reply.read_bytes()
    report = _apply(store, state, data, source=source, **options)
    note = (
        f"Recovered turn {sequence}, interrupted when the agent stopped: put back "
        f"{len(restored.paths)} file(s) and applied {source} again"
    )
    if restored.problems:
        note += f"; could not put back {'; '.join(restored.problems)}"
    report.notes.insert(0, note)
    return report


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns
