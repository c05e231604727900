"""Review (docs/review.md): with the ``review`` setting on, a reply's file changes are held
for the user between admission and the turn, and the user's decision is applied as the
reply's turn.

    reply -> admission -> hold -> sessions/<id>/review/    nothing written, nothing run
    the user decides (terminal, page, codingagent review) -> decide -> the turn, as any other

:func:`hold` is the turn's ``hold`` (:class:`~codingagent.session.turn.TurnOptions`): it
parses the reply as the turn would, works out its file changes without writing
(:mod:`codingagent.review.proposal`) and keeps them (:mod:`codingagent.review.record`); a
reply that changes no file is not held. :func:`decide` checks that the files are as the review
found them (else the review is made again, and the user decides again), keeps the decision,
and applies the reply through :func:`~codingagent.session.turn.apply_admitted` with the
decision's steps. Admission refuses every other reply while a review is held; the loop's
``should_stop`` stops a loop that cannot ask the user (:mod:`codingagent.session.loop`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codingagent.execute import TurnOutcome
from codingagent.prompt.outbox import ensure_outbox
from codingagent.prompt.render import PromptOptions
from codingagent.protocol.commands import Command
from codingagent.protocol.replies import DecodedReply
from codingagent.records.store import SessionStore, open_workspace
from codingagent.session.seams import Received, Reply, TurnReport
from codingagent.session.turn import TurnOptions, apply_admitted
from codingagent.state import SessionError, SessionState
from codingagent.transaction.crashpoints import crash_point
from codingagent.workspace import PathRejected, Workspace

# The review wing is loaded once a review is asked for or found (``store.review_path``): a
# session without review pays nothing for it at start-up.
if TYPE_CHECKING:
    from codingagent.review.decision import Choice, Decided
    from codingagent.review.record import Decision, HeldReview


class Remade(SessionError):
    """The files changed since the review was made: it was made again (``held``; None when
    the reply now changes nothing, and the review was dropped)."""

    def __init__(self, message: str, held: HeldReview | None) -> None:
        super().__init__(message)
        self.held = held


def hold(
    store: SessionStore,
    state: SessionState,
    received: Received,
    options: TurnOptions,
    told: Sequence[str] = (),
) -> TurnReport | None:
    """Hold the ``received`` reply (admitted for the session's current prompt) for review: its
    report, with the review; None when it changes no file (it is applied now)."""
    from codingagent.review import record
    from codingagent.review.proposal import propose

    settle(store, state)
    reply = received.reply
    commands, _ = received.decoded.read()
    ws = open_workspace(store, state)
    proposal = propose(
        commands, ws, store.protected, options.shell, state.shown_files, state.session_id
    )
    if not proposal.files:
        return None
    held = record.held_review(
        state,
        reply.source,
        fingerprints(commands),
        proposal,
        answers=reply.answers,
        tool_bound=reply.tool_bound,
        rendered=reply.rendered,
        size=reply.size,
        meta=dict(reply.meta),
        told=list(told),
    )
    record.save(store, held, reply.data)
    crash_point("review")
    return held_report(store, held)


def waiting(session_id: str, held: HeldReview, then: str = "") -> str:
    """What the user is told while ``held`` waits: how to see and decide it (``then``: before
    what they must)."""
    after = f"; decide it, or drop it with 'codingagent review {session_id} --discard', {then}"
    return (
        f"The changes of the reply {held.source} ({held.summary()}) wait for your review: see "
        f"them with 'codingagent review {session_id}', decide with 'codingagent review "
        f"{session_id} --accept all' (or --accept 1 --accept 2.1, --reject-all; --note TEXT), "
        f"or on the page (codingagent ui){after if then else ''}"
    )


def held_report(store: SessionStore, held: HeldReview) -> TurnReport:
    """The report of a reply held for review: nothing applied, no next prompt."""
    state = store.load(held.session_id)
    folder = store.review_path(held.session_id).parent
    return TurnReport(state, TurnOutcome(), None, folder, review=held)


def current(
    store: SessionStore, session_id: str, state: SessionState | None = None
) -> HeldReview | None:
    """The review the session holds for its current prompt, if any (``state``: the session's,
    where the caller has read it already)."""
    if not store.review_path(session_id).exists():
        return None
    from codingagent.review import record

    return record.current(store, state or store.load(session_id))


def decide(
    store: SessionStore, session_id: str, choice: Choice, options: TurnOptions
) -> TurnReport:
    """Apply the held reply as ``choice`` decides: the turn's report. A SessionError when no
    review is held or ``choice`` names what the review has not; :class:`Remade` when the
    files changed since the review was made (nothing is applied then)."""
    from codingagent.review import record
    from codingagent.review.decision import Stale, accepted_hunks
    from codingagent.review.record import Decision

    state = store.load(session_id)
    held = current(store, session_id, state)
    if held is None:
        raise SessionError(f"Session {session_id} has no review waiting")
    decision = Decision(accepted=accepted_hunks(held, choice.accepted), note=choice.note.strip())
    received = Received.of(_reply(store, held), options.max_reply_bytes)
    ws = open_workspace(store, state)
    try:
        decided = _decided(held, decision, ws, received.decoded)
    except Stale as stale:
        again = hold(store, state, received, options, held.told)
        if again is None:
            record.set_aside(store, session_id, "stale")
        raise Remade(str(stale), again.review if again is not None else None) from None
    record.save(store, held.model_copy(update={"decision": decision}))
    report = apply_admitted(store, state, received, options, held.told, decided)
    settle(store, report.state)
    return report


def discard(store: SessionStore, session_id: str, prompt: PromptOptions) -> TurnReport:
    """Drop the held review: nothing of its reply is applied, and the prompt it answered
    waits for another reply (the report says so, and where the review is kept)."""
    from codingagent.review import record

    state = store.load(session_id)
    if current(store, session_id, state) is None:
        raise SessionError(f"Session {session_id} has no review waiting")
    kept = record.set_aside(store, session_id, "discarded")
    assert kept is not None
    note = f"The review was dropped: nothing of its reply was applied (it is kept in {kept})"
    outbox = ensure_outbox(store, state, prompt)
    return TurnReport(state, TurnOutcome(), outbox, kept, notes=[note], skipped=True)


def decided_again(store: SessionStore, state: SessionState, sequence: int) -> Decided | None:
    """The decision a reviewed turn (for prompt ``sequence``) was applied with, for recovery
    to apply it again after a crash; None when the turn was no reviewed one. :class:`Remade`
    when its files are no longer as the review found them: the decision is dropped, and the
    review is offered again."""
    if not store.review_path(state.session_id).exists():
        return None
    from codingagent.review import record
    from codingagent.review.decision import Stale, decide

    held = record.load(store, state.session_id)
    if held is None or held.sequence != sequence or held.decision is None:
        return None
    ws = open_workspace(store, state)
    try:
        return decide(held, held.decision, _befores(held, ws))
    except Stale as stale:
        record.save(store, held.model_copy(update={"decision": None}))
        raise Remade(str(stale), held) from None


def settle(store: SessionStore, state: SessionState) -> None:
    """Set aside a review whose turn was committed (a crash came before it was)."""
    if not store.review_path(state.session_id).exists():
        return
    from codingagent.review import record

    held = record.load(store, state.session_id)
    if held is not None and (held.sequence < state.sequence_number or state.is_complete):
        record.set_aside(store, state.session_id, "reviewed")


def fingerprints(commands: Sequence[Command]) -> list[str]:
    """Each command as ``NAME@line``: a held reply must parse the same when it is applied."""
    return [f"{command.name}@{command.line}" for command in commands]


def _reply(store: SessionStore, held: HeldReview) -> Reply:
    from codingagent.review.record import reply_of

    data, rendered = reply_of(store, held.session_id)
    return Reply(
        data,
        held.source,
        size=held.size,
        meta=held.meta,
        answers=held.answers,
        tool_bound=held.tool_bound,
        rendered=rendered,
    )


def _decided(held: HeldReview, decision: Decision, ws: Workspace, decoded: DecodedReply) -> Decided:
    from codingagent.review.decision import Stale, decide

    commands, _ = decoded.read()
    if fingerprints(commands) != held.commands:  # another version of the parser
        raise Stale([f.shown for f in held.files])
    return decide(held, decision, _befores(held, ws))


def _befores(held: HeldReview, ws: Workspace) -> dict[str, bytes | None]:
    """Each held file as it is now (None: absent)."""
    found: dict[str, bytes | None] = {}
    for f in held.files:
        try:
            found[f.path] = ws.read_bytes(f.path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PathRejected):
            found[f.path] = None
    return found
