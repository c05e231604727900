"""What the page shows, as JSON: the sessions, and one session with its prompt and its turns.

Read-only: everything comes from the run directory (state, outbox, each turn's history), so a
turn applied by a terminal watcher shows the same as one applied on the page.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from codingagent.prompt.outbox import ensure_outbox, prompt_text
from codingagent.prompt.render import PromptOptions, estimate_tokens
from codingagent.queue.tasks import summary_rows
from codingagent.records.changeset import session_diffs
from codingagent.records.history import TurnRecord
from codingagent.records.queues import QueueStore
from codingagent.records.store import SessionStore, open_workspace
from codingagent.review.record import current as current_review
from codingagent.state import CommandResult, SessionError, SessionState


def result_json(result: CommandResult) -> dict[str, Any]:
    """A command's result, with the line the console shows for it."""
    return {**result.model_dump(by_alias=True), "headline": result.headline}


def session_row(state: SessionState) -> dict[str, Any]:
    return {
        "id": state.session_id,
        "task": state.task,
        "sequence": state.sequence_number,
        "complete": state.is_complete,
        "summary": state.summary,
        "question": state.question,  # the LLM's ASK, waiting for `codingagent answer`
        "workspace": state.workspace,
        "updatedAt": state.updated_at.isoformat(),
    }


def sessions_list(store: SessionStore) -> list[dict[str, Any]]:
    """Every session, most recently updated first."""
    return [session_row(store.load(session_id)) for session_id in store.ids()]


def session_view(
    store: SessionStore, session_id: str, token_budget: int, window: int | None = None
) -> dict[str, Any]:
    """One session: its state, the prompt it waits on (None once complete), its turns,
    newest first, each with its results, MESSAGE texts and diffs, and the review it holds
    (docs/review.md), if any. ``window``: the chat's
    window (setting ``context_tokens``), shown as "~N of M tokens"."""
    # A rewritten prompt's digests are saved only under the lock (a watcher may hold it).
    with store.held_if_free(session_id) as held:
        state = store.load(session_id)
        waiting = state.is_complete or state.question is not None
        outbox = None if waiting else ensure_outbox(store, state, keep_digests=held)
    prompt = None
    if outbox is not None:
        text = outbox.read_text(encoding="utf-8")
        tokens = estimate_tokens(text)
        prompt = {
            "sequence": state.sequence_number,
            "text": text,
            "chars": len(text),
            "tokens": tokens,
            "overBudget": tokens > token_budget,
            "tokenBudget": token_budget,
            "window": window,
        }
    folders = store.turns(session_id, state.sequence_number)
    turns = [_turn(folder) for folder in folders]
    try:
        diffs = session_diffs(open_workspace(store, state), folders)
    except SessionError as e:  # the workspace folder is gone: the turns show without diffs
        for turn in turns:
            turn["diffsProblem"] = str(e)
    else:
        for turn, changes in zip(turns, diffs, strict=True):
            turn["diffs"] = [asdict(d) for d in changes]
    review = current_review(store, state)
    return {
        "session": session_row(state),
        "prompt": prompt,
        "interrupted": store.journal_path(session_id).exists(),
        "turns": turns[::-1],
        "review": review.as_json() if review is not None else None,
    }


def full_prompt(store: SessionStore, session_id: str, prompt: PromptOptions) -> dict[str, Any]:
    """The current prompt with the full PROTOCOL, Environment and listing, for a new chat
    (the page's "Copy for a new chat", as ``show --full``); the prompt file is left as it is."""
    state = store.load(session_id)
    text = prompt_text(store, state, replace(prompt, full_protocol=True))[0]
    return {"text": text, "chars": len(text)}


def _turn(folder: Path) -> dict[str, Any]:
    record = TurnRecord(folder)
    meta, results, commands = record.meta(), record.results(), record.commands()
    return {
        "sequence": meta["sequence"],
        "reply": meta["replyFile"],
        "appliedAt": meta.get("appliedAt"),
        "results": [result_json(CommandResult.model_validate(r)) for r in results],
        "messages": [c["text"] for c in commands if c.get("kind") == "MESSAGE"],
    }


def queue_view(store: SessionStore) -> dict[str, Any] | None:
    """The latest queue (docs/queue.md), for the page's "Task 2/5" banner: its tasks as the
    summary shows them, and the task it runs now (None once it ended); None: no queue."""
    queues = QueueStore(store)
    ids = queues.ids()
    if not ids:
        return None
    queue = queues.load(ids[0])
    rows = summary_rows(store, queue)
    position = queue.position
    return {
        "id": queue.queue_id,
        "total": len(rows),
        "position": None if position is None else position + 1,
        "current": None if position is None else rows[position],
        "completed": sum(row["outcome"] == "completed" for row in rows),
        "halted": queue.halted,
        "tasks": rows,
    }
