"""A queue's tasks: read from a file or the settings, and summed up from their sessions
(docs/queue.md). The queue file itself is :mod:`codingagent.records.queues`.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from codingagent.records.history import turn_log
from codingagent.records.queues import QueueState
from codingagent.records.store import SessionStore
from codingagent.state import SessionError


def parse_tasks(text: str, name: str = "the task list") -> list[str]:
    """The tasks in ``text``: a JSON array of strings, a TOML file with ``tasks = [...]``, or
    plain text with one task per block (blank lines between tasks; a task may span lines)."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value: Any = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise SessionError(f"{name} is not a valid JSON array: {e}") from None
        return checked_tasks(value, name)
    if re.match(r"tasks\s*=", stripped):
        try:
            value = tomllib.loads(stripped).get("tasks")
        except tomllib.TOMLDecodeError as e:
            raise SessionError(f"{name} is not valid TOML: {e}") from None
        return checked_tasks(value, name)
    blocks = re.split(r"\n[ \t]*\n", stripped.replace("\r\n", "\n"))
    return checked_tasks([block for block in blocks if block.strip()], name)


def checked_tasks(value: Any, name: str) -> list[str]:
    """``value`` as a list of tasks, each stripped; a clear message when it is not one."""
    if not isinstance(value, list) or not all(isinstance(task, str) for task in value):
        raise SessionError(f"{name} must be a list of texts, one per task")
    tasks = [task.strip() for task in value]
    if not tasks:
        raise SessionError(f"{name} holds no task")
    empty = [str(n) for n, task in enumerate(tasks, start=1) if not task]
    if empty:
        raise SessionError(f"{name}: task {', '.join(empty)} is empty")
    return tasks


# --- the summary ---------------------------------------------------------------------------------


def summary_rows(store: SessionStore, queue: QueueState) -> list[dict[str, Any]]:
    """One row per task: task, session, turns, outcome, why, seconds, tokens where known
    (summed over the turns a model answered). Turns and tokens come from the sessions."""
    rows = []
    for number, entry in enumerate(queue.tasks, start=1):
        turns, tokens_in, tokens_out = 0, None, None
        if entry.session_id is not None:
            try:
                log = turn_log(store, entry.session_id)
            except SessionError:  # the session was removed by hand: the row says what is known
                log = []
            turns = len(log)
            tokens_in = _total(turn.get("tokensIn") for turn in log)
            tokens_out = _total(turn.get("tokensOut") for turn in log)
        seconds = entry.seconds
        rows.append(
            {
                "number": number,
                "task": entry.task,
                "session": entry.session_id,
                "turns": turns,
                "outcome": entry.outcome.value,
                "reason": entry.reason,
                "seconds": None if seconds is None else round(seconds, 1),
                "tokensIn": tokens_in,
                "tokensOut": tokens_out,
            }
        )
    return rows


def _total(values: Any) -> int | None:
    known = [value for value in values if isinstance(value, int)]
    return sum(known) if known else None
