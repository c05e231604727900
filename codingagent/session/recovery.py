"""Recovery after a crash: :func:`recover` finishes what an agent killed mid-turn (or mid-undo)
left, from the journal, so the workspace and session are exactly "turn not applied" or "turn
fully applied"."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from codingagent.fsio import atomic_write
from codingagent.records.history import TurnRecord, kept_rendered, turn_record
from codingagent.records.store import SessionStore, open_workspace
from codingagent.session.reviewing import Remade, decided_again, settle
from codingagent.session.seams import Received, Reply, TurnReport
from codingagent.session.turn import TurnOptions, apply_admitted
from codingagent.state import SessionError
from codingagent.transaction.crashpoints import crash_point
from codingagent.transaction.journal import Journal
from codingagent.transaction.rollback import Restored, restore
from codingagent.transaction.undo import finish_undo


def recover(store: SessionStore, session_id: str, options: TurnOptions) -> TurnReport | None:
    """Finish what an agent killed mid-turn (or mid-undo) left behind; ``None`` if there was
    nothing to apply.

    A turn whose state was saved is complete: only its journal is removed.  Otherwise its files
    are restored from their pre-images (what cannot be restored, such as a path that now leads
    out of the workspace, is named in the report), the journal is marked rolled back, and the
    reply is applied afresh (its unfinished history copied into ``aborted/``).  Each step can be
    run again: a kill anywhere in recovery leaves a journal the next recovery completes.
    The reply is applied again with ``options``, as :func:`~codingagent.session.turn.apply_reply`
    would.
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
        restored = restore(record, open_workspace(store, state))
        store.outbox_path(session_id, sequence + 1).unlink(missing_ok=True)
        marked = {**journal, "rolledBack": True, **asdict(restored)}
        atomic_write(journal_path, json.dumps(marked))
        crash_point("rolled-back")
    data = reply.read_bytes()
    rendered = kept_rendered(reply)  # read from a rendered page: refused as then
    try:  # a reviewed turn is applied again as the user decided (docs/review.md)
        decided = decided_again(store, state, sequence)
    except Remade:  # its files are not as the review found them: it is offered again
        journal_path.unlink()
        return None
    again = Received.of(Reply(data, source, rendered=rendered), options.max_reply_bytes)
    report = apply_admitted(store, state, again, options, decided=decided)
    settle(store, report.state)
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
