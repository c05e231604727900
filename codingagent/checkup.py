"""What ``codingagent doctor`` checks of a run folder: free space, the agent's folders, and
whether a session's files can all be read back (each damaged or unreadable one is named)."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .faults import describe
from .journal import Journal, TurnRecord
from .session import Damaged, SessionError, SessionStore

LOW_SPACE = 100 * 1024 * 1024  # bytes free in the run folder under which doctor warns


def free_space(root: Path) -> str:
    """The free space where the run folder lives, with a warning when it is low."""
    folder = next((p for p in (root, *root.parents) if p.is_dir()), root)
    try:
        free = shutil.disk_usage(folder).free
    except OSError as e:
        return f"unknown: {describe(e)}"
    text = f"{free / 1e6:,.1f} MB free in {folder}"
    if free < LOW_SPACE:
        text += (
            f"; warning: low (under {LOW_SPACE / 1e6:.0f} MB): a full disk stops a turn, which"
            " is then rolled back; free some space"
        )
    return text


def folder_problems(store: SessionStore) -> list[str]:
    """The agent's folders (and the workspace) that exist but cannot be written in."""
    folders = (store.root, store.workspace, *store.agent_dirs)
    return [
        f"{folder} is not writable: give your user access to it (see: ls -ld)"
        for folder in folders
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK)
    ]


def state_problems(store: SessionStore, session_id: str) -> list[str]:
    """Whether the session's state file reads back: [] or why not."""
    problems: list[str] = []
    _check(lambda: store.load(session_id), problems)
    return problems


def session_problems(store: SessionStore, session_id: str) -> list[str]:
    """Every file of the session that cannot be read back, and why; [] when all are fine."""
    problems: list[str] = []
    check = functools.partial(_check, problems=problems)
    state = check(lambda: store.load(session_id))
    if state is not None and not Path(state.workspace).is_dir():
        problems.append(f"{state.workspace}: the session's workspace is gone")
    journal = store.journal_path(session_id)
    if journal.exists():
        check(lambda: Journal.read(journal))
    # Without a state, every history folder is checked.
    for folder in store.turns(session_id, state.sequence_number if state else 1 << 30):
        record = TurnRecord(folder)
        for read in (record.meta, record.results, record.postimages, record.state_before):
            check(read)
        if not record.reply_path.is_file():
            problems.append(f"{record.reply_path}: it is missing")
    return problems


def _check(read: Callable[[], Any], problems: list[str]) -> Any:
    """What ``read`` returns; None, with the problem added to ``problems``, if it fails."""
    try:
        return read()
    except Damaged as e:
        problems.append(f"{e.path}: {e.reason}")
    except SessionError as e:
        problems.append(str(e))
    except OSError as e:
        problems.append(describe(e))
    return None
