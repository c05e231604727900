"""One turn: a reply in, its commands applied, the session advanced, the next outbox out.

    reply bytes -> decode -> parse -> execute -> new state -> render -> write outbox,
    history, state

Starting a session is the degenerate turn that only renders the first outbox.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .commands import CommandResult
from .executor import TurnOutcome, execute
from .parser import parse
from .render import FileView, OutboxContext, render_outbox
from .session import SessionError, SessionState, SessionStore, utc_now
from .shell import Shell
from .workspace import PathRejected, Workspace

REPLY_SIZE_CAP = 5 * 1024 * 1024
FILE_VIEW_CAP = 100_000  # characters of one requested file shown in the outbox


@dataclass
class TurnReport:
    """What happened in one turn, for the console."""

    state: SessionState
    outcome: TurnOutcome
    outbox: Path | None  # the next prompt, or None when the session is complete
    history: Path
    notes: list[str] = field(default_factory=list)  # problems with the reply file itself


def open_workspace(store: SessionStore, state: SessionState) -> Workspace:
    folder = Path(state.workspace)
    if not folder.is_dir():
        raise SessionError(f"The workspace of session {state.session_id} is gone: {folder}")
    return Workspace(folder, protected=store.agent_dirs)


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
    outbox = write_outbox(store, state)
    store.save(state)
    return state, outbox


def write_outbox(store: SessionStore, state: SessionState) -> Path:
    """Render the session's current outbox from the workspace as it is now, and write it."""
    ws = open_workspace(store, state)
    listing = ws.list_files()
    views = [_file_view(ws, path) for path in state.read_file_requests]
    context = OutboxContext(files=listing.entries, omitted=listing.omitted, file_views=views)
    return store.write_outbox(
        state.session_id, state.sequence_number, render_outbox(state, context)
    )


def ensure_outbox(store: SessionStore, state: SessionState) -> Path:
    """The current outbox, rewritten if someone deleted it."""
    path = store.outbox_path(state.session_id, state.sequence_number)
    return path if path.exists() else write_outbox(store, state)


def apply_reply_file(
    store: SessionStore,
    session_id: str,
    path: Path,
    shell: Shell,
    on_result: Callable[[CommandResult], None] | None = None,
) -> TurnReport:
    """Apply a reply saved in a file; a reply taken from ``inbox/`` is moved into history."""
    path = Path(path)
    report = apply_reply(
        store, session_id, path.read_bytes(), source=path.name, shell=shell, on_result=on_result
    )
    if path.resolve().parent == store.inbox.resolve():
        path.unlink(missing_ok=True)
    return report


def apply_reply(
    store: SessionStore,
    session_id: str,
    data: bytes,
    *,
    source: str,
    shell: Shell,
    on_result: Callable[[CommandResult], None] | None = None,
) -> TurnReport:
    """Run one turn: apply the reply ``data`` to the session and write the next outbox."""
    started = time.perf_counter()
    state = store.load(session_id)
    if state.is_complete:
        raise SessionError(f"Session {session_id} is complete; it takes no more replies")
    ws = open_workspace(store, state)

    text, problem = decode_reply(data)
    commands = parse(text) if text is not None else []
    notes = [problem.summary] if problem else []
    if problem and on_result:
        on_result(problem)
    outcome = execute(commands, ws, shell, on_result=on_result)
    if problem:
        outcome.results.insert(0, problem)

    answered = state.sequence_number
    state.sequence_number += 1
    state.last_results = outcome.results
    state.read_file_requests = outcome.read_requests
    state.updated_at = utc_now()
    if outcome.done is not None:
        state.is_complete = True
        state.summary = outcome.done
    outbox = None if state.is_complete else write_outbox(store, state)

    history = store.write_history(
        session_id,
        answered,
        {
            "reply.txt": data,
            "commands.json": [c.model_dump() for c in commands],
            "results.json": [r.model_dump(by_alias=True) for r in outcome.results],
            "meta.json": {
                "replyFile": source,
                "sha256": hashlib.sha256(data).hexdigest(),
                "appliedAt": state.updated_at.isoformat(),
                "durationMs": round((time.perf_counter() - started) * 1000, 1),
                "nextOutbox": outbox.name if outbox else None,
            },
        },
    )
    store.save(state)
    return TurnReport(state=state, outcome=outcome, outbox=outbox, history=history, notes=notes)


def decode_reply(data: bytes) -> tuple[str | None, CommandResult | None]:
    """The reply's text, or ``None`` when it must not be parsed, and the problem, if any.

    Bad replies never stop the session: the problem becomes a result the LLM sees next turn.
    """

    def problem(summary: str) -> CommandResult:
        return CommandResult(command="REPLY", success=False, summary=summary)

    if len(data) > REPLY_SIZE_CAP:
        return None, problem(
            f"Your reply was {len(data):,} bytes, over the {REPLY_SIZE_CAP:,}-byte limit; "
            "nothing in it was run. Send smaller replies."
        )
    if b"\0" in data:
        return None, problem("Your reply contained NUL bytes (binary data); nothing in it was run")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return data.decode("utf-8", errors="replace"), problem(
            f"Your reply was not valid UTF-8 (first bad byte at offset {e.start}); "
            "it was read with replacement characters"
        )


def _file_view(ws: Workspace, path: str) -> FileView:
    try:
        data = ws.read_bytes(path)
    except (OSError, PathRejected) as e:
        reason = getattr(e, "strerror", None) or str(e)
        return FileView(path, None, f"cannot be shown: {reason}")
    if b"\0" in data:
        return FileView(path, None, f"binary file, {len(data):,} bytes, not shown")
    text = data.decode("utf-8", errors="replace")
    if len(text) > FILE_VIEW_CAP:
        hidden = len(text) - FILE_VIEW_CAP
        text = text[:FILE_VIEW_CAP] + f"\n[... {hidden:,} more characters not shown ...]\n"
    return FileView(path, text)
