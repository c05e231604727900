"""What the page shows, as JSON: the sessions, and one session with its prompt and its turns.

Read-only: everything comes from the run directory (state, outbox, each turn's history), so a
turn applied by a terminal watcher shows the same as one applied on the page.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from codingagent.prompt.render import PromptOptions, estimate_tokens
from codingagent.queue.tasks import summary_rows
from codingagent.records.queues import QueueStore
from codingagent.records.store import SessionStore
from codingagent.session import reading
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
    return [session_row(state) for state in reading.states(store)]


def session_view(
    store: SessionStore, session_id: str, token_budget: int, window: int | None = None
) -> dict[str, Any]:
    """One session: its state, the prompt it waits on (None once complete), its turns,
    newest first, each with its results, MESSAGE texts and diffs, and the review it holds
    (docs/review.md), if any. ``window``: the chat's
    window (setting ``context_tokens``), shown as "~N of M tokens"."""
    now = reading.standing(store, session_id)
    state, text = now.state, now.prompt
    prompt = None
    if text is not None:
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
    read = reading.turns(store, state)
    turns = [_turn(turn) for turn in read]
    try:
        diffs = reading.diffs(store, state, read)
    except SessionError as e:  # the workspace folder is gone: the turns show without diffs
        for turn in turns:
            turn["diffsProblem"] = str(e)
    else:
        for turn, changes in zip(turns, diffs, strict=True):
            turn["diffs"] = [asdict(d) for d in changes]
    return {
        "session": session_row(state),
        "prompt": prompt,
        "interrupted": now.interrupted,
        "turns": turns[::-1],
        "review": now.review.as_json() if now.review is not None else None,
    }


def full_prompt(store: SessionStore, session_id: str, prompt: PromptOptions) -> dict[str, Any]:
    """The current prompt with the full PROTOCOL, Environment and listing, for a new chat
    (the page's "Copy for a new chat", as ``show --full``); the prompt file is left as it is."""
    text = reading.full_prompt(store, store.load(session_id), prompt)
    return {"text": text, "chars": len(text)}


def _turn(turn: reading.Turn) -> dict[str, Any]:
    meta = turn.meta
    return {
        "sequence": meta["sequence"],
        "reply": meta["replyFile"],
        "appliedAt": meta.get("appliedAt"),
        "results": [result_json(CommandResult.model_validate(r)) for r in turn.results],
        "messages": turn.messages,
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
