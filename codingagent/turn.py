"""One turn as a transaction: a reply in, its commands applied, the next outbox out.

    reply bytes -> dedupe -> journal -> decode -> parse -> execute (pre-images first)
      -> history -> next outbox -> state (the commit point) -> journal removed

The journal (:mod:`codingagent.journal`) exists exactly while a turn is in flight.  Before any
workspace file is written or deleted, its pre-image is appended to the turn's history and
fsynced.  The reply, the state before the turn and the journal are durable before the first
command runs; every other file the turn writes has its data fsynced as it is written and each
folder it wrote in fsynced once, before the commit point.  If the agent dies mid-turn,
:func:`recover` finds the journal: if the state was already saved the turn is complete and only
the journal goes; otherwise every file is put back from its pre-image and the reply is applied
afresh.  So after any crash the workspace and session equal "turn not applied" or "turn fully
applied".

Side effects of RUN_COMMAND outside the files the file commands touched cannot be rolled back.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .commands import Command, CommandResult
from .crashpoints import OnResult, after_each_result, crash_point
from .execute import TurnOutcome, execute
from .faults import Fault, TurnNotApplied, describe, remedy
from .fsio import atomic_write, folder_syncs_grouped
from .journal import Journal, TurnRecord, digest_of, turn_record
from .outbox import TOKEN_BUDGET, ensure_outbox, next_outbox, open_workspace, write_outbox
from .parser import parse, reply_echo
from .session import SessionError, SessionState, SessionStore, utc_now
from .shell import Shell
from .workspace import PathRejected, Workspace

REPLY_SIZE_CAP = 5 * 1024 * 1024
ECHO_BYTES = 65536  # bytes of a reply decoded to find its Session/Sequence echo


@dataclass
class TurnReport:
    """What happened in one turn, for the console."""

    state: SessionState
    outcome: TurnOutcome
    outbox: Path | None  # the next prompt, or None when the session is complete
    history: Path
    notes: list[str] = field(default_factory=list)  # problems with the reply file itself
    skipped: bool = False  # a duplicate or a stale reply: nothing was applied


# --- sessions ------------------------------------------------------------------------------


def start_session(
    store: SessionStore, task: str, workspace: Path | None = None
) -> tuple[SessionState, Path]:
    """Create a session and write its first outbox."""
    if not task.strip():
        raise SessionError("The task is empty; say what the LLM should do")
    store.ensure_dirs()
    folder = Path(workspace).resolve() if workspace else store.workspace
    if not folder.is_dir():
        raise SessionError(f"Workspace folder does not exist: {folder}")
    state = SessionState(session_id=store.new_id(), task=task.strip(), workspace=str(folder))
    store.save(state)  # first: a missing outbox is rewritten by `show` and `resume`
    try:
        return state, write_outbox(store, state).path
    except OSError as e:
        raise Fault(
            f"Session {state.session_id} was created, but its first prompt was not written: "
            f"{describe(e)}. {remedy(e).capitalize()}, then run 'codingagent resume "
            f"{state.session_id}'"
        ) from e


def follow_up_session(store: SessionStore, session_id: str, instruction: str) -> Path:
    """Give the session a follow-up instruction from the user (``resume --task``).

    A completed session is reopened, keeping its history; the current outbox is rewritten so
    its PROMPT is the instruction, and every later HEADER carries it.
    """
    if not instruction.strip():
        raise SessionError("The follow-up task is empty; say what the LLM should do next")
    state = store.load(session_id)
    if store.journal_path(session_id).exists():
        raise SessionError(f"Session {session_id} has an interrupted turn; resume it first")
    state.follow_ups.append(instruction.strip())
    state.follow_up_sequence = state.sequence_number
    state.is_complete = False
    state.updated_at = utc_now()
    outbox = next_outbox(store, state)
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
    token_budget: int = TOKEN_BUDGET,
) -> TurnReport:
    """Apply the reply ``data`` to the session as one all-or-nothing turn.

    ``size`` is the reply's real size when ``data`` holds only its first bytes (a file over
    ``max_reply_bytes`` is read no further).

    A reply whose content was already applied in this session is skipped, unless it names the
    current sequence (``Sequence: N``) or ``force`` is set. So is, unless ``force`` is set, a
    reply that says (``Session: <id> Sequence: <n>``) it answers another session or an older
    prompt: it is kept in ``sessions/{id}/refused/``.
    """
    started = time.perf_counter()
    received = utc_now()
    state = store.load(session_id)
    _refuse_if_interrupted(store, session_id)
    if not force:
        skipped = _skip(store, state, data, source, max_reply_bytes)
        if skipped is not None:
            return skipped
    if state.is_complete:
        raise SessionError(f"Session {session_id} is complete; it takes no more replies")
    ws = open_workspace(store, state)
    answered = state.sequence_number
    try:
        record, journal = _open_turn(store, state, data, source)
    except OSError as error:  # no journal yet: nothing was changed
        raise TurnNotApplied(session_id, answered, source, error) from error
    try:
        with folder_syncs_grouped():  # every folder this block writes in is durable after it
            text, problem = decode_reply(data, max_reply_bytes, size)
            if problem and on_result:
                on_result(problem)
            commands = parse(text) if text is not None else []
            outcome = _execute(commands, ws, shell, journal, state, problem, on_result)
            _advance(state, outcome)
            record.write_outcome(
                [c.model_dump() for c in commands],
                [r.model_dump(by_alias=True) for r in outcome.results],
                {path: digest_of(ws, path) for path in journal.paths},
            )
            crash_point("history")
            outbox = None if state.is_complete else next_outbox(store, state, token_budget)
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
                }
            )
            crash_point("outbox")
        store.save(state)  # the commit point
    except Exception as error:
        if store.load(session_id).sequence_number != answered:
            raise  # the state was saved: committed after all; recovery removes the journal
        left, kept = _roll_back(store, session_id, record, journal, ws, answered)
        if not isinstance(error, OSError | SessionError):
            raise  # a bug: rolled back, and shown as one
        raise TurnNotApplied(session_id, answered, source, error, left, kept) from error
    crash_point("state")
    journal.close()
    notes = [problem.summary] if problem else []
    return TurnReport(state, outcome, outbox, record.folder, notes=notes)


def _roll_back(
    store: SessionStore,
    session_id: str,
    record: TurnRecord,
    journal: Journal,
    ws: Workspace,
    answered: int,
) -> tuple[str, Path | None]:
    """Undo a turn an error stopped before its commit point, at once: its next outbox removed
    (that frees space first), its files put back from their pre-images, its journal removed and
    its history set aside in ``aborted/``, so the reply can be applied afresh.

    Returns what is left ("" when nothing: else the journal stays and recovery, ``resume``,
    finishes the job) and where the reply's copy is kept in ``aborted/``.
    """
    with contextlib.suppress(OSError):
        store.outbox_path(session_id, answered + 1).unlink(missing_ok=True)
    try:
        record.restore(ws)
    except (OSError, PathRejected) as e:
        files = ", ".join(journal.paths) or "none"
        return (
            f"Rolling it back failed too ({describe(e)}): the files it changed ({files}) may "
            f"still be as it left them, and its journal {journal.path} stays"
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


def _refuse_if_interrupted(store: SessionStore, session_id: str) -> None:
    if store.journal_path(session_id).exists():
        raise SessionError(
            f"Session {session_id} has an interrupted turn; run 'codingagent resume "
            f"{session_id}' to recover it first"
        )


def _skip(
    store: SessionStore, state: SessionState, data: bytes, source: str, max_reply_bytes: int
) -> TurnReport | None:
    """A report saying the reply was not applied, if it is a duplicate or a stale reply."""
    digest = reply_digest(data)
    echo = reply_echo(data[:ECHO_BYTES].decode("utf-8", errors="replace"))
    duplicate = _skip_duplicate(store, state, echo[1], digest)
    if duplicate is not None or len(data) > max_reply_bytes:
        return duplicate
    return _refuse_stale(store, state, echo, data, source, digest)


def _open_turn(
    store: SessionStore, state: SessionState, data: bytes, source: str
) -> tuple[TurnRecord, Journal]:
    """The turn's history folder with the reply and the state before, then the journal: both
    durable before anything in the workspace changes."""
    record = turn_record(store, state.session_id, state.sequence_number)
    if record.folder.exists():  # left by a crash before the journal was written: never committed
        store.set_aside(state.session_id, record.folder, "aborted")
    record.write_opening(data, state)
    journal = Journal(store.journal_path(state.session_id), record, state.sequence_number, source)
    crash_point("journal")
    return record, journal


def _execute(
    commands: list[Command],
    ws: Workspace,
    shell: Shell,
    journal: Journal,
    state: SessionState,
    problem: CommandResult | None,
    on_result: OnResult | None,
) -> TurnOutcome:
    """Run the commands, each file's pre-image recorded in the journal before it changes."""
    ws.before_change = journal.record
    try:
        preceding = [problem] if problem else []
        return execute(
            commands, ws, shell, after_each_result(on_result), preceding, shown=state.shown_files
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

    def problem(summary: str) -> CommandResult:
        return CommandResult(command="REPLY", success=False, summary=summary)

    if len(data) > max_bytes:
        return None, problem(
            f"Your reply was {size or len(data):,} bytes, over the {max_bytes:,}-byte limit; "
            "nothing in it was run. Send smaller replies."
        )
    if not data.strip():
        return None, problem("Your reply was empty; nothing was run")
    if b"\0" in data:
        return None, problem("Your reply contained NUL bytes (binary data); nothing in it was run")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return data.decode("utf-8", errors="replace"), problem(
            f"Your reply was not valid UTF-8 (first bad byte at offset {e.start}); "
            "it was read with replacement characters"
        )


def reply_digest(data: bytes) -> str:
    """sha256 of the reply without BOM and line-ending differences: a re-saved copy matches."""
    normal = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return hashlib.sha256(normal).hexdigest()


def _skip_duplicate(
    store: SessionStore, state: SessionState, named_sequence: int | None, digest: str
) -> TurnReport | None:
    """A report saying the reply was skipped, if this content was applied before.

    ``named_sequence`` is the sequence the reply's echo names (see ``parser.reply_echo``).
    """
    for folder in store.turns(state.session_id, state.sequence_number):
        meta = TurnRecord(folder).meta()
        if meta.get("normalizedSha256") != digest:
            continue
        if named_sequence == state.sequence_number:
            return None  # the LLM resent it on purpose, for the current turn
        note = (
            f"This reply is identical to the one applied in turn {meta['sequence']} "
            f"({meta['replyFile']}); it was skipped. To apply it again, use "
            f"'codingagent step --force', or let the reply start with "
            f"'Sequence: {state.sequence_number}'."
        )
        outbox = None if state.is_complete else ensure_outbox(store, state)
        return TurnReport(state, TurnOutcome(), outbox, folder, notes=[note], skipped=True)
    return None


def _refuse_stale(
    store: SessionStore,
    state: SessionState,
    echo: tuple[str | None, int | None],
    data: bytes,
    source: str,
    digest: str,
) -> TurnReport | None:
    """A report saying the reply was not applied, if it names another session or an older
    prompt than the current one (SPEC 2.4); the reply is kept in ``refused/``, in a folder
    named by the prompt it came to and its content (the same reply twice is kept once)."""
    session, sequence = echo
    current = state.sequence_number
    if session is not None and session != state.session_id:
        why = f"it names session {session}, but it was given to session {state.session_id}"
    elif sequence is not None and sequence < current:
        why = f"it answers prompt {sequence}, but the session is at prompt {current}"
    else:
        return None
    folder = store.sessions / state.session_id / "refused" / f"{current:04d}-{digest[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "reply.txt"
    atomic_write(kept, data)
    note = (
        f"The reply {source} was not applied: {why}. It is kept as {kept}; if it is right "
        f"after all, apply it with 'codingagent step {state.session_id} {kept} --force'."
    )
    outbox = None if state.is_complete else ensure_outbox(store, state)
    return TurnReport(state, TurnOutcome(), outbox, folder, notes=[note], skipped=True)


# --- recovery ---------------------------------------------------------------------------------


def recover(store: SessionStore, session_id: str, **options: Any) -> TurnReport | None:
    """Finish what an agent killed mid-turn left behind; ``None`` if there was nothing.

    A turn whose state was saved is complete: only its journal is removed.  Otherwise its files
    are restored from their pre-images, its unfinished history is set aside (kept in
    ``aborted/``), and its reply is applied afresh. ``options`` are :func:`apply_reply`'s.
    """
    journal_path = store.journal_path(session_id)
    journal = Journal.read(journal_path)
    if journal is None:
        return None
    sequence = journal["sequence"]
    state = store.load(session_id)
    if state.sequence_number > sequence:
        journal_path.unlink()
        return None
    record = turn_record(store, session_id, sequence)
    restored = record.restore(open_workspace(store, state))
    store.outbox_path(session_id, sequence + 1).unlink(missing_ok=True)
    data = record.reply_path.read_bytes()
    source = journal["replyFile"]
    store.set_aside(session_id, record.folder, "aborted")
    journal_path.unlink()
    report = apply_reply(store, session_id, data, source=source, force=True, **options)
    report.notes.insert(
        0,
        f"Recovered turn {sequence}, interrupted when the agent stopped: put back "
        f"{len(restored)} file(s) and applied {source} again",
    )
    return report
