"""Which replies a session does not apply, and why: the note the user (and the LLM) sees.

- While the LLM's question (ASK) waits for the user's answer, no reply is applied.
- A reply whose content (BOM, line endings, trailing blanks aside) was already applied in the
  session, or rolled back by a Ctrl-C, is skipped, whatever Sequence it names.
- A reply that names (``Session: <id> Sequence: <n>``) another session or an older prompt, or
  that is the last reply applied with more written after it, is refused.

``force`` applies a duplicate or stale reply anyway; never one while a question waits.
Refused replies are kept in ``sessions/{id}/refused/``, in a folder named by the prompt they
came to and their content (the same reply twice is kept once).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from codingagent.fsio import atomic_write
from codingagent.protocol.parser import reply_echo
from codingagent.session.history import TurnRecord, turn_record
from codingagent.session.store import SessionStore
from codingagent.state import SessionState

REFUSED = "refused"  # the session's folder of replies not applied
ECHO_BYTES = 65536  # bytes of a reply decoded to find its Session/Sequence echo


@dataclass(frozen=True)
class Refusal:
    """A reply not applied: the note saying why, and the folder that keeps it."""

    note: str
    folder: Path


def check(
    store: SessionStore,
    state: SessionState,
    data: bytes,
    source: str,
    max_reply_bytes: int,
    force: bool,
) -> Refusal | None:
    """Why the reply ``data`` is not applied to the session, or None: apply it."""
    if state.question is not None:
        return _while_asking(store, state, data, source)
    if force:
        return None
    digest = reply_digest(data)
    duplicate = _duplicate(store, state, digest)
    if duplicate is not None or len(data) > max_reply_bytes:
        return duplicate
    echo = reply_echo(data[:ECHO_BYTES].decode("utf-8", errors="replace"))
    return _stale(store, state, echo, data, source, digest)


def reply_digest(data: bytes) -> str:
    """sha256 of the reply without BOM, line-ending differences, trailing spaces and tabs at
    line ends and final blank lines: a re-saved or re-pasted copy matches."""
    normal = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    normal = _TRAILING_BLANKS.sub(b"\n", normal).rstrip(b" \t\n")
    return hashlib.sha256(normal).hexdigest()


_TRAILING_BLANKS = re.compile(rb"[ \t]+\n")


def _duplicate(store: SessionStore, state: SessionState, digest: str) -> Refusal | None:
    """Why the reply is skipped, if this content was applied before in the session (whatever
    its echo says), or rolled back by a Ctrl-C."""
    for folder in store.turns(state.session_id, state.sequence_number):
        meta = TurnRecord(folder).meta()
        if meta.get("normalizedSha256") == digest:
            why = f"identical to the one applied in turn {meta['sequence']} ({meta['replyFile']})"
            return _skipped(state, folder, why)
    for folder in sorted((store.sessions / state.session_id / "interrupted").glob("*")):
        reply = TurnRecord(folder).reply_path
        if reply.is_file() and reply_digest(reply.read_bytes()) == digest:
            why = f"the one interrupted by Ctrl-C in turn {int(folder.name[:4])} and rolled back"
            return _skipped(state, folder, why)
    return None


def _skipped(state: SessionState, folder: Path, why: str) -> Refusal:
    note = (
        f"This reply is {why}; it was skipped. To apply it again, use 'codingagent step "
        f"{state.session_id} FILE --force'."
    )
    return Refusal(note, folder)


def _stale(
    store: SessionStore,
    state: SessionState,
    echo: tuple[str | None, int | None],
    data: bytes,
    source: str,
    digest: str,
) -> Refusal | None:
    """Why the reply is not applied, if it names another session or an older prompt than
    the current one (docs/protocol.md §7), or is the last reply applied with more written after
    it (a reply file appended to after it was read); the reply is kept (see
    :func:`_keep_refused`)."""
    session, sequence = echo
    current = state.sequence_number
    if session is not None and session != state.session_id:
        why = f"it names session {session}, but it was given to session {state.session_id}"
    elif sequence is not None and sequence < current:
        why = f"it answers prompt {sequence}, but the session is at prompt {current}"
    elif (grown := _grown_from(store, state, data)) is not None:
        why = (
            f"it begins with the whole reply applied in turn {grown} and goes on: the same file, "
            "written to again after it was read. Send the rest as a reply of its own"
        )
    else:
        return None
    kept = _keep_refused(store, state, data, digest)
    note = (
        f"The reply {source} was not applied: {why}. It is kept as {kept}; if it is right "
        f"after all, apply it with 'codingagent step {state.session_id} {kept} --force'."
    )
    return Refusal(note, kept.parent)


def _grown_from(store: SessionStore, state: SessionState, data: bytes) -> int | None:
    """The sequence of the last turn, if ``data`` is its reply with more after it."""
    last = state.sequence_number - 1
    if last < 1:
        return None
    try:
        with open(turn_record(store, state.session_id, last).reply_path, "rb") as f:
            applied = f.read(len(data))
    except FileNotFoundError:  # undone, or never committed
        return None
    return (
        last if applied.strip() and len(applied) < len(data) and data.startswith(applied) else None
    )


def _while_asking(store: SessionStore, state: SessionState, data: bytes, source: str) -> Refusal:
    """Why the reply is not applied: the LLM's question waits for the user's answer (even with
    ``force``: the prompt it answers does not exist yet)."""
    kept = _keep_refused(store, state, data, reply_digest(data))
    note = (
        f"The reply {source} was not applied: the session waits for your answer to the LLM's "
        f"question ({state.question}). Answer it with 'codingagent answer "
        f'{state.session_id} "..."\'; the reply is kept as {kept}.'
    )
    return Refusal(note, kept.parent)


def _keep_refused(store: SessionStore, state: SessionState, data: bytes, digest: str) -> Path:
    """Keep a refused reply in ``refused/``, in a folder named by the prompt it came to and
    its content (the same reply twice is kept once); its path."""
    name = f"{state.sequence_number:04d}-{digest[:12]}"
    folder = store.sessions / state.session_id / REFUSED / name
    folder.mkdir(parents=True, exist_ok=True)
    kept = TurnRecord(folder).reply_path
    atomic_write(kept, data)
    return kept
