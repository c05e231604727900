"""One turn as a transaction: a reply in, its commands applied, the next outbox out.

    reply bytes -> dedupe -> journal -> decode -> parse -> execute (pre-images first)
      -> history -> next outbox -> state (the commit point) -> journal removed

The journal (``sessions/{id}/journal.json``) exists exactly while a turn is in flight.  Before
any workspace file is written or deleted, its pre-image (bytes and mode, or "did not exist") is
appended to the turn's history and fsynced.  If the agent dies mid-turn, :func:`recover` finds
the journal: if the state was already saved the turn is complete and only the journal goes;
otherwise every file is put back from its pre-image and the reply is applied afresh.  So after
any crash the workspace and session equal "turn not applied" or "turn fully applied".

Side effects of RUN_COMMAND outside the files the file commands touched cannot be rolled back.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .commands import CommandResult, ParseError, ReadRequest
from .environment import Environment
from .executor import TurnOutcome, execute
from .fsio import atomic_write
from .parser import parse, reply_echo
from .render import (
    DEFAULT_PROMPT,
    FileView,
    OutboxContext,
    PromptOptions,
    digest,
    environment_section,
    estimate_tokens,
    render_outbox,
)
from .render import FILE_VIEW_CAP as FILE_VIEW_CAP  # characters of one file view
from .session import SessionError, SessionState, SessionStore, utc_now
from .shell import Shell
from .workspace import PathRejected, PreImage, Workspace, display_name
from .workspace.listing import UNSIZED

REPLY_SIZE_CAP = 5 * 1024 * 1024
FILE_READ_CAP = 8 * 1024 * 1024  # bytes of one requested file read to show a window of it
CRASH_ENV = "CODINGAGENT_CRASH_AT"
LISTING_FILES = 200_000  # files the listing walk keeps; beyond, they are only counted
LISTING_SIZES = 20_000  # files the listing walk stats for their sizes; beyond, sizes unknown
MIN_WINDOW = 20  # lines of a file view that over-budget windowing keeps
INLINE_PREIMAGE = 64 * 1024  # pre-images up to this size live in the journal line itself
ECHO_BYTES = 65536  # bytes of a reply decoded to find its Session/Sequence echo

OnResult = Callable[[CommandResult], None]


@dataclass
class TurnReport:
    """What happened in one turn, for the console."""

    state: SessionState
    outcome: TurnOutcome
    outbox: Path | None  # the next prompt, or None when the session is complete
    history: Path
    notes: list[str] = field(default_factory=list)  # problems with the reply file itself
    skipped: bool = False  # a duplicate or a stale reply: nothing was applied


@dataclass
class UndoReport:
    turns: list[int]  # the sequence numbers of the undone turns, newest first
    restored: list[str]  # files put back
    state: SessionState
    outbox: Path


# --- sessions and outboxes ---------------------------------------------------------------


def open_workspace(store: SessionStore, state: SessionState) -> Workspace:
    folder = Path(state.workspace)
    if not folder.is_dir():
        raise SessionError(f"The workspace of session {state.session_id} is gone: {folder}")
    return Workspace(folder, protected=store.agent_dirs)


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
    outbox = write_outbox(store, state, prompt)
    store.save(state)  # what the outbox showed
    return state, outbox


def write_outbox(
    store: SessionStore, state: SessionState, prompt: PromptOptions = DEFAULT_PROMPT
) -> Path:
    """Render the session's current outbox from the workspace as it is now, and write it.

    What it showed goes into the state (the caller saves it): the digest of every file shown
    into ``state.shown_files``, that of the Environment section into ``environment_digest``.
    Over ``prompt.token_budget``, the largest file views are shown in smaller windows first.
    """
    return store.write_outbox(
        state.session_id, state.sequence_number, outbox_text(store, state, prompt)
    )


def outbox_text(store: SessionStore, state: SessionState, prompt: PromptOptions) -> str:
    """The session's current outbox as :func:`write_outbox` would write it."""
    ws = open_workspace(store, state)
    listing = ws.list_files(limit=LISTING_FILES, sizes=LISTING_SIZES)
    views = []
    for request in state.read_file_requests:
        view, seen = _file_view(ws, request, listing.entries)
        views.append(view)
        if seen is not None:
            state.shown_files[_shown_key(ws, view.path)] = seen
    context = OutboxContext(
        files=listing.entries,
        omitted=listing.omitted,
        file_views=views,
        size_of=functools.partial(_size_of, ws),
    )
    environment = environment_section(state, prompt)
    if environment is not None:
        state.environment_digest = digest(environment)
        state.environment_sequence = state.sequence_number
    return _fit(state, context, prompt)


def _fit(state: SessionState, context: OutboxContext, prompt: PromptOptions) -> str:
    """The outbox text, with the largest file views windowed down until it fits the budget
    (or every view is down to ``MIN_WINDOW`` lines: the console then warns)."""
    text = render_outbox(state, context, prompt)
    views = list(context.file_views)
    while estimate_tokens(text) > prompt.token_budget:
        shrinkable = [i for i, v in enumerate(views) if v.text and v.window > MIN_WINDOW]
        if not shrinkable:
            break
        largest = max(shrinkable, key=lambda i: len(views[i].text or "") * views[i].window)
        view = views[largest]
        views[largest] = replace(view, window=max(MIN_WINDOW, view.window // 2))
        text = render_outbox(state, replace(context, file_views=views), prompt)
    return text


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
    if store.journal_path(session_id).exists():
        raise SessionError(f"Session {session_id} has an interrupted turn; resume it first")
    state.follow_ups.append(instruction.strip())
    state.follow_up_sequence = state.sequence_number
    state.is_complete = False
    state.updated_at = utc_now()
    outbox = write_outbox(store, state, prompt)
    store.save(state)
    return outbox


def ensure_outbox(
    store: SessionStore, state: SessionState, prompt: PromptOptions = DEFAULT_PROMPT
) -> Path:
    """The current outbox, rewritten if someone deleted it."""
    path = store.outbox_path(state.session_id, state.sequence_number)
    return path if path.exists() else write_outbox(store, state, prompt)


# --- one turn ------------------------------------------------------------------------------


def apply_reply_file(
    store: SessionStore,
    session_id: str,
    path: Path,
    max_reply_bytes: int = REPLY_SIZE_CAP,
    **options,
) -> TurnReport:
    """Apply a reply saved in a file; ``options`` are :func:`apply_reply`'s.

    At most ``max_reply_bytes + 1`` bytes are read. A reply taken from ``inbox/`` leaves it
    afterwards, unless it was saved again meanwhile (then the new version is the next reply);
    its bytes are in the turn's history by then, and an oversized reply is moved there whole.
    """
    path = Path(path)
    before = path.stat()
    with open(path, "rb") as f:
        data = f.read(max_reply_bytes + 1)
    report = apply_reply(
        store,
        session_id,
        data,
        source=display_name(path.name),
        max_reply_bytes=max_reply_bytes,
        size=before.st_size,
        **options,
    )
    if path.resolve().parent == store.inbox.resolve() and _unchanged(path, before):
        if len(data) > max_reply_bytes and not report.skipped:
            shutil.move(path, report.history / "reply.txt")
        else:
            path.unlink(missing_ok=True)
    return report


def _unchanged(path: Path, before: os.stat_result) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    return (now.st_ino, now.st_size, now.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


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
    state = store.load(session_id)
    if store.journal_path(session_id).exists():
        raise SessionError(
            f"Session {session_id} has an interrupted turn; run 'codingagent resume "
            f"{session_id}' to recover it first"
        )
    reply_sha = reply_digest(data)
    if not force:
        echo = reply_echo(data[:ECHO_BYTES].decode("utf-8", errors="replace"))
        duplicate = _skip_duplicate(store, state, echo[1], reply_sha, prompt)
        if duplicate is not None:
            return duplicate
        if len(data) <= max_reply_bytes:
            stale = _refuse_stale(store, state, echo, data, source, reply_sha, prompt)
            if stale is not None:
                return stale
    if state.is_complete:
        raise SessionError(f"Session {session_id} is complete; it takes no more replies")
    ws = open_workspace(store, state)

    answered = state.sequence_number
    folder = store.turn_dir(session_id, answered)
    if folder.exists():  # left by a crash before the journal was written: never committed
        store.set_aside(session_id, folder, "aborted")
    meta = {
        "sequence": answered,
        "replyFile": source,
        "sha256": hashlib.sha256(data).hexdigest(),
        "normalizedSha256": reply_sha,
        "receivedAt": utc_now().isoformat(),
    }
    store.write_history(
        session_id, answered, {"reply.txt": data, "state-before.json": state.to_json()}
    )
    journal = _Journal(store.journal_path(session_id), folder, answered, source)
    _crash_point("journal")

    text, problem = decode_reply(data, max_reply_bytes, size)
    commands = parse(text) if text is not None else []
    preceding = [problem] if problem else []
    if problem and on_result:
        on_result(problem)
    ws.before_change = journal.record
    outcome = execute(
        commands, ws, shell, _with_crash_point(on_result), preceding, shown=state.shown_files
    )
    ws.before_change = None

    state.sequence_number += 1
    state.last_results = outcome.results
    state.read_file_requests = outcome.read_requests
    state.search_results = outcome.searches
    state.shown_files = outcome.shown
    state.parse_failed = _unreadable(commands)
    state.updated_at = utc_now()
    if outcome.done is not None:
        state.is_complete = True
        state.summary = outcome.done
    store.write_history(
        session_id,
        answered,
        {
            "commands.json": [c.model_dump() for c in commands],
            "results.json": [r.model_dump(by_alias=True) for r in outcome.results],
            "postimages.json": {path: _digest(ws, path) for path in journal.paths},
        },
    )
    _crash_point("history")
    outbox = None if state.is_complete else write_outbox(store, state, prompt)
    meta |= {
        "appliedAt": state.updated_at.isoformat(),
        "durationMs": round((time.perf_counter() - started) * 1000, 1),
        "nextOutbox": outbox.name if outbox else None,
    }
    store.write_history(session_id, answered, {"meta.json": meta})
    _crash_point("outbox")
    store.save(state)  # the commit point
    _crash_point("state")
    journal.close()
    notes = [problem.summary] if problem else []
    return TurnReport(state=state, outcome=outcome, outbox=outbox, history=folder, notes=notes)


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


def _unreadable(commands: Iterable[object]) -> bool:
    """Whether a reply had a command the parser could not read, or no command at all."""
    commands = list(commands)
    return not commands or any(isinstance(c, ParseError) for c in commands)


def _skip_duplicate(
    store: SessionStore,
    state: SessionState,
    named_sequence: int | None,
    digest: str,
    prompt: PromptOptions,
) -> TurnReport | None:
    """A report saying the reply was skipped, if this content was applied before.

    ``named_sequence`` is the sequence the reply's echo names (see ``parser.reply_echo``).
    """
    for folder in store.turns(state.session_id, state.sequence_number):
        meta = store.read_history(folder, "meta.json")
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
        outbox = None if state.is_complete else ensure_outbox(store, state, prompt)
        return TurnReport(state, TurnOutcome(), outbox, folder, notes=[note], skipped=True)
    return None


def _refuse_stale(
    store: SessionStore,
    state: SessionState,
    echo: tuple[str | None, int | None],
    data: bytes,
    source: str,
    digest: str,
    prompt: PromptOptions,
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
    outbox = None if state.is_complete else ensure_outbox(store, state, prompt)
    return TurnReport(state, TurnOutcome(), outbox, folder, notes=[note], skipped=True)


# --- the journal and recovery ------------------------------------------------------------------


class _Journal:
    """The write-ahead record of one turn in flight.

    ``journal.json`` marks the turn as open; ``preimages.jsonl`` in the turn's history folder
    gets one fsynced line per file, written before the file is first changed.
    """

    def __init__(self, path: Path, folder: Path, sequence: int, source: str) -> None:
        self.path = path
        self.folder = folder
        self.paths: list[str] = []
        # The reply's name is all recovery needs besides reply.txt; meta.json comes at the end.
        opened = {"sequence": sequence, "turn": folder.name, "replyFile": source}
        atomic_write(self.path, json.dumps(opened))

    def record(self, pre: PreImage) -> None:
        if pre.path in self.paths:
            return  # the first pre-image is the one that matters
        entry = {
            "path": pre.path,
            "mode": pre.mode,
            "blob": None,
            "createdDirs": list(pre.created_dirs),
        }
        if pre.data is not None and len(pre.data) <= INLINE_PREIMAGE:
            entry["inline"] = base64.b64encode(pre.data).decode("ascii")  # one fsync, not three
        elif pre.existed:
            entry["blob"] = blob = f"pre/{len(self.paths):04d}"
            (self.folder / "pre").mkdir(exist_ok=True)
            content = pre.data if pre.data is not None else pre.stream
            atomic_write(self.folder / blob, content)  # type: ignore[arg-type]
        with open(self.folder / "preimages.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.paths.append(pre.path)
        _crash_point("preimage")

    def close(self) -> None:
        self.path.unlink()


def _preimage_entries(folder: Path) -> list[dict]:
    """The pre-images a turn recorded, in order; a torn last line (crash mid-append) is skipped:
    its file had not been touched yet."""
    try:
        lines = (folder / "preimages.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return entries


def _restore_turn(ws: Workspace, folder: Path) -> list[str]:
    """Put back every file a turn changed, last change first; the paths, in that order.

    Saved contents are streamed back from the history, never read whole into memory.
    """
    restored = []
    for entry in reversed(_preimage_entries(folder)):
        dirs = tuple(entry["createdDirs"])
        with _saved_content(folder, entry) as stream:
            ws.restore(PreImage(entry["path"], None, entry["mode"], dirs, stream=stream))
        restored.append(entry["path"])
    return restored


def _saved_content(folder: Path, entry: dict) -> contextlib.AbstractContextManager:
    """The saved content of a pre-image entry as an open binary stream (None: no file)."""
    if "inline" in entry:
        return io.BytesIO(base64.b64decode(entry["inline"]))
    if entry["blob"]:
        return open(folder / entry["blob"], "rb")
    return contextlib.nullcontext()


def recover(store: SessionStore, session_id: str, **options) -> TurnReport | None:
    """Finish what an agent killed mid-turn left behind; ``None`` if there was nothing.

    A turn whose state was saved is complete: only its journal is removed.  Otherwise its files
    are restored from their pre-images, its unfinished history is set aside (kept in
    ``aborted/``), and its reply is applied afresh. ``options`` are :func:`apply_reply`'s.
    """
    journal_path = store.journal_path(session_id)
    if not journal_path.exists():
        return None
    journal = json.loads(journal_path.read_text(encoding="utf-8"))
    sequence = journal["sequence"]
    state = store.load(session_id)
    folder = store.turn_dir(session_id, sequence)
    if state.sequence_number > sequence:
        journal_path.unlink()
        return None
    ws = open_workspace(store, state)
    restored = _restore_turn(ws, folder)
    store.outbox_path(session_id, sequence + 1).unlink(missing_ok=True)
    data = (folder / "reply.txt").read_bytes()
    source = journal["replyFile"]
    store.set_aside(session_id, folder, "aborted")
    journal_path.unlink()
    report = apply_reply(store, session_id, data, source=source, force=True, **options)
    report.notes.insert(
        0,
        f"Recovered turn {sequence}, interrupted when the agent stopped: put back "
        f"{len(restored)} file(s) and applied {source} again",
    )
    return report


# --- undo --------------------------------------------------------------------------------------


def undo(
    store: SessionStore,
    session_id: str,
    turns: int = 1,
    force: bool = False,
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> UndoReport:
    """Restore the files of the last ``turns`` turns exactly and rewind the session.

    Refuses, changing nothing, if a file those turns wrote was changed since (unless ``force``).
    Undone turns' history is kept in ``undone/``.
    """
    state = store.load(session_id)
    if store.journal_path(session_id).exists():
        raise SessionError(f"Session {session_id} has an interrupted turn; resume it first")
    history = store.turns(session_id, state.sequence_number)
    if not 1 <= turns <= len(history):
        raise SessionError(f"Session {session_id} has {len(history)} turn(s) to undo, not {turns}")
    undoing = history[-turns:]
    ws = open_workspace(store, state)
    expected: dict[str, str | None] = {}
    for folder in undoing:  # oldest first, so the newest post-image of each path wins
        expected |= store.read_history(folder, "postimages.json")
    changed = sorted(path for path, digest in expected.items() if _digest(ws, path) != digest)
    if changed and not force:
        raise SessionError(
            f"Nothing undone: {', '.join(changed)} changed since the agent wrote "
            f"{'it' if len(changed) == 1 else 'them'}; use --force to overwrite those changes"
        )
    restored = [path for folder in reversed(undoing) for path in _restore_turn(ws, folder)]
    rewound = SessionState.model_validate_json((undoing[0] / "state-before.json").read_bytes())
    rewound.updated_at = utc_now()
    for sequence in range(rewound.sequence_number + 1, state.sequence_number + 1):
        store.outbox_path(session_id, sequence).unlink(missing_ok=True)
    outbox = ensure_outbox(store, rewound, prompt)
    store.save(rewound)
    for folder in undoing:
        store.set_aside(session_id, folder, "undone")
    numbers = [int(folder.name) for folder in reversed(undoing)]
    return UndoReport(numbers, list(dict.fromkeys(restored)), rewound, outbox)


# --- helpers -----------------------------------------------------------------------------------


def _digest(ws: Workspace, path: str) -> str | None:
    """sha256 of a workspace file, or None if it does not exist."""
    try:
        return hashlib.sha256(ws.read_bytes(path)).hexdigest()
    except (FileNotFoundError, PathRejected):
        return None


def _file_view(
    ws: Workspace, request: ReadRequest, files: list[tuple[str, int]]
) -> tuple[FileView, str | None]:
    """The view of a requested file, and the sha256 of what it shows, if it shows all of it.
    A folder's view holds the files of the listing ``files`` below it.

    Only the first ``FILE_READ_CAP`` bytes are read: the view shows a window of a file anyway.
    """
    if isinstance(request, str):
        path, start, end = request, None, None
    else:
        path, start, end = request.path, request.start_line, request.end_line
    if ws.is_dir(path):
        base = _shown_key(ws, path).strip("/")
        base = f"{base}/" if base not in ("", ".") else ""
        below = [entry for entry in files if entry[0].startswith(base)]
        return FileView(path, None, folder=below, base=base), None
    try:
        size = ws.file_size(path)
        data = ws.read_bytes(path, limit=FILE_READ_CAP + 1)
    except (OSError, PathRejected) as e:
        reason = getattr(e, "strerror", None) or str(e)
        return FileView(path, None, f"cannot be shown: {reason}"), None
    if b"\0" in data:
        return FileView(path, None, f"binary file, {size:,} bytes, not shown"), None
    if len(data) <= FILE_READ_CAP:
        note, digest = "", hashlib.sha256(data).hexdigest()
    else:  # show whole lines only, and the LLM has not seen all of the file
        data = data[: data.rfind(b"\n", 0, FILE_READ_CAP) + 1] or data[:FILE_READ_CAP]
        note = f"the file has {size:,} bytes; only the lines in its first {len(data):,} are shown"
        digest = None
    text = data.decode("utf-8", errors="replace")
    return FileView(path, text, note, start, end), digest


def _size_of(ws: Workspace, path: str) -> int:
    """The size of a listed file the walk did not stat (UNSIZED if it cannot be had)."""
    try:
        return ws.file_size(path)
    except (OSError, PathRejected):
        return UNSIZED


def _shown_key(ws: Workspace, path: str) -> str:
    """The key of ``state.shown_files`` for a path as the LLM wrote it: its real path."""
    try:
        return ws.relpath(path)
    except (OSError, PathRejected):
        return path


_passed: Counter[str] = Counter()


def _crash_point(name: str) -> None:
    """Test hook for the crash tests: ``CODINGAGENT_CRASH_AT=name:n`` kills this process with
    SIGKILL the n-th time (default: first) it passes the point ``name``."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point == name:
        _passed[name] += 1
        if _passed[name] == int(count or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def _with_crash_point(on_result: OnResult | None) -> OnResult:
    def after_command(result: CommandResult) -> None:
        if on_result is not None:
            on_result(result)
        _crash_point("result")

    return after_command
