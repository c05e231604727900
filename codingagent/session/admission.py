"""Admission: which text is a reply to which prompt, for every source (docs/admission.md).

A reply arrives decoded once (:class:`~codingagent.protocol.replies.DecodedReply`: its echo and
digest are read there), with what its source knows about the prompt it answers (``answers``): the
endpoint knows (it sent the request), the page knows (it posts the turn it displayed); the
inbox, ``step`` and the clipboard do not, and there the reply's ``Session: <id> Sequence: <n>``
echo is the evidence. :func:`rule` is the one table of those cases:

- While the LLM's question (ASK) waits for the user's answer, no reply is applied; nor while
  a reply's file changes wait for the user's review (docs/review.md).
- A reply whose content (BOM, line endings, trailing blanks aside) was already applied in the
  session, or rolled back by a Ctrl-C, is skipped, whatever Sequence it names.
- A bound reply (``answers`` given) is refused only when it was given for another prompt than
  the current one; a wrong or missing echo is applied and noted to the model (a missing one
  not when the tool bound it itself: the relay).
- An unbound reply that names another session or an older prompt, or that is the last reply
  applied with more written after it, is refused; one naming a later prompt is applied, noted.

``force`` applies a duplicate or stale reply anyway; never one while a question waits.
Refused replies are kept in ``sessions/{id}/refused/``, in a folder named by the prompt they
came to and their content (the same reply twice is kept once). Every refusal has two texts: the
note for the user (what to paste instead) and ``to_model``, what a model source sends with its
next request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codingagent.protocol.replies import reply_digest
from codingagent.records.history import TurnRecord, keep_reply, turn_record
from codingagent.records.store import SessionStore
from codingagent.session.seams import Received, Refusal
from codingagent.state import SessionState

REFUSED = "refused"  # the session's folder of replies not applied


@dataclass(frozen=True)
class Admission:
    """The verdict on one reply: refused, or applied with ``notes`` the model sees first in
    its next prompt (a wrong or missing echo on a bound reply)."""

    refusal: Refusal | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ruling:
    """What the echo rules: ``refuse`` with ``why``, or apply (with ``note`` for the model)."""

    refuse: bool = False
    why: str = ""
    note: str = ""


def rule(
    echo: tuple[str | None, int | None],
    session_id: str,
    current: int,
    answers: int | None,
    echo_needed: bool = True,
) -> Ruling:
    """The one table of cases: the reply's echo, the session and its current prompt, and the
    prompt the source knows the reply answers (None: it does not know). ``echo_needed``
    False: the tool bound the reply itself (the relay), so a missing echo is no note."""
    session, sequence = echo
    if answers is not None and answers != current:
        return Ruling(
            True, f"it was given for prompt {answers}, but the session is at prompt {current}"
        )
    if answers is None and session not in (None, session_id):
        return Ruling(True, f"it names session {session}, but it was given to session {session_id}")
    if answers is None and sequence is not None and sequence < current:
        return Ruling(True, f"it answers prompt {sequence}, but the session is at prompt {current}")
    nxt = f"start your next reply with `Session: {session_id} Sequence: {current + 1}`"
    if session not in (None, session_id):
        return Ruling(
            note=f"your reply named Session {session}, but it answered session "
            f"{session_id}, prompt {current}; {nxt}"
        )
    if sequence not in (None, current):
        return Ruling(
            note=f"your reply named Sequence {sequence}, but it answered prompt {current}; {nxt}"
        )
    if answers is not None and echo_needed and (session is None or sequence is None):
        return Ruling(
            note=f"your reply did not say which prompt it answers (prompt {current}); {nxt}"
        )
    return Ruling()


def check(
    store: SessionStore, state: SessionState, received: Received, force: bool = False
) -> Admission:
    """Whether the ``received`` reply is applied to the session: by its echo and digest (read
    from its decoding) and what its source knows (:class:`~.seams.Reply`: ``answers``, the
    prompt it knows the reply answers, None when it does not; ``tool_bound``, the tool bound
    it itself, so a missing echo is no note). A reply read from a rendered page is kept so if
    refused (``history.keep_reply``)."""
    reply, decoded = received.reply, received.decoded
    data, source, rendered = reply.data, reply.source, reply.rendered
    if state.question is not None:
        why = f"the session waits for your answer to the LLM's question ({state.question})"
        how = f"Answer it with 'codingagent answer {state.session_id} \"...\"'"
        said = "the user must first answer your question"  # (the prompt it answers is not yet)
        return Admission(_waiting(store, state, received, why, how, said))
    if store.review_path(state.session_id).exists():  # (its wing loaded only then)
        from codingagent.review.record import current

        held = current(store, state)
        if held is not None:
            why = f"the changes of the reply {held.source} ({held.summary()}) wait for your review"
            how = f"Decide with 'codingagent review {state.session_id}' (or on the page)"
            said = "the user is still reviewing your last reply's changes"  # (its turn first)
            return Admission(_waiting(store, state, received, why, how, said))
    if force:
        return Admission()
    digest = decoded.digest
    duplicate = _duplicate(store, state, digest)
    if duplicate is not None or decoded.over_cap:
        return Admission(duplicate)
    echo_needed, answers = not reply.tool_bound, reply.answers
    ruling = rule(decoded.echo, state.session_id, state.sequence_number, answers, echo_needed)
    if ruling.refuse:
        kept = _keep_refused(store, state, data, digest, rendered)
        return Admission(_refuse(state, ruling.why, kept, source))
    grown = _grown_from(store, state, data) if answers is None else None
    if grown is not None:
        why = (
            f"it begins with the whole reply applied in turn {grown} and goes on: the same file, "
            "written to again after it was read. Send the rest as a reply of its own"
        )
        kept = _keep_refused(store, state, data, digest, rendered)
        return Admission(_refuse(state, why, kept, source))
    return Admission(notes=(ruling.note,) if ruling.note else ())


def _duplicate(store: SessionStore, state: SessionState, digest: str) -> Refusal | None:
    """Why the reply is skipped, if this content was applied before in the session (whatever
    its echo says), or rolled back by a Ctrl-C. The state keeps the applied replies' digests;
    a session begun before it did has each turn's record read."""
    if len(state.reply_digests) == state.sequence_number - 1:
        turns = [
            turn_record(store, state.session_id, n).folder
            for n, kept in enumerate(state.reply_digests, 1)
            if kept == digest
        ]
    else:
        turns = store.turns(state.session_id, state.sequence_number)
    for folder in turns:
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
    return Refusal(note, folder, f"it is {why}, so it was not applied again")


def _refuse(state: SessionState, why: str, kept: Path, source: str) -> Refusal:
    """The refusal of a reply for another session or prompt (docs/admission.md), or grown
    after it was read; the reply is ``kept`` (see :func:`_keep_refused`)."""
    note = (
        f"The reply {source} was not applied: {why}. It is kept as {kept}; if it is right "
        f"after all, apply it with 'codingagent step {state.session_id} {kept} --force'. "
        f"Otherwise paste the reply to prompt {state.sequence_number} (it starts with "
        f"'Session: {state.session_id} Sequence: {state.sequence_number}')."
    )
    return Refusal(note, kept.parent, why)


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


def _waiting(
    store: SessionStore, state: SessionState, received: Received, why: str, how: str, said: str
) -> Refusal:
    """Why the reply is not applied while the session waits for the user (``why``: for what;
    ``how``: what they do; ``said``: what the model is told), even with ``force``: the reply
    is kept in ``refused/``."""
    reply = received.reply
    kept = _keep_refused(store, state, reply.data, received.decoded.digest, reply.rendered)
    note = f"The reply {reply.source} was not applied: {why}. {how}; the reply is kept as {kept}."
    return Refusal(note, kept.parent, said)


def _keep_refused(
    store: SessionStore, state: SessionState, data: bytes, digest: str, rendered: bool
) -> Path:
    """Keep a refused reply in ``refused/``, in a folder named by the prompt it came to and
    its content (the same reply twice is kept once), marked when it was read from a rendered
    page; its path."""
    name = f"{state.sequence_number:04d}-{digest[:12]}"
    folder = store.sessions / state.session_id / REFUSED / name
    folder.mkdir(parents=True, exist_ok=True)
    return keep_reply(folder, data, rendered)
