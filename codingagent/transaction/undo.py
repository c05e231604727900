"""``codingagent undo``: put back the files of the last turns exactly and rewind the session, as
a transaction of its own (an undo journal that recovery finishes after a crash, via
:func:`finish_undo`). What a RUN_COMMAND changed is put back too (docs/undo.md). What undo
cannot put back is named, never guessed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codingagent.fsio import atomic_write
from codingagent.prompt.outbox import ensure_outbox
from codingagent.prompt.render import DEFAULT_PROMPT, PromptOptions
from codingagent.records.history import TurnRecord, digest_of
from codingagent.records.store import SessionStore, open_workspace
from codingagent.state import SessionError, SessionState, utc_now
from codingagent.transaction.crashpoints import crash_point
from codingagent.transaction.journal import Journal, refuse_if_interrupted
from codingagent.transaction.rollback import Restored, restore, unrestorable


@dataclass
class UndoReport:
    turns: list[int]  # the sequence numbers of the undone turns, newest first
    restored: list[str]  # files put back
    state: SessionState
    outbox: Path
    problems: list[str] = field(default_factory=list)  # what could not be put back
    # Ignored folders (build/, node_modules/...) the turns' commands changed: not put back,
    # by rule (docs/undo.md).
    untracked: list[str] = field(default_factory=list)


def undo(
    store: SessionStore,
    session_id: str,
    turns: int = 1,
    force: bool = False,
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> UndoReport:
    """Restore the files of the last ``turns`` turns exactly and rewind the session.

    Refuses, changing nothing, if a file those turns wrote was changed since, or if what
    they saved cannot all be put back (unless ``force``).  Undone turns' history is kept in
    ``undone/``.  Undo is a transaction like a turn: its journal names the turns; an undo
    killed midway is finished by :func:`finish_undo` (a second ``undo`` or ``resume``).
    """
    state = store.load(session_id)
    journal_path = store.journal_path(session_id)
    pending = Journal.read(journal_path)
    if pending is not None and pending.get("kind") == "undo":
        return finish_undo(store, session_id, pending)
    if pending is not None:
        refuse_if_interrupted(store, session_id)
    history = store.turns(session_id, state.sequence_number)
    if not 1 <= turns <= len(history):
        raise SessionError(f"Session {session_id} has {len(history)} turn(s) to undo, not {turns}")
    undoing = [TurnRecord(folder) for folder in history[-turns:]]
    ws = open_workspace(store, state)
    expected: dict[str, str | None] = {}
    for record in undoing:  # oldest first, so the newest post-image of each path wins
        expected |= record.postimages()
    changed = sorted(path for path, digest in expected.items() if digest_of(ws, path) != digest)
    if changed and not force:
        raise SessionError(
            f"Nothing undone: {', '.join(changed)} changed since the agent wrote "
            f"{'it' if len(changed) == 1 else 'them'}; use --force to overwrite those changes"
        )
    lost = [problem for record in undoing for problem in unrestorable(record)]
    if lost and not force:
        raise SessionError(
            f"Nothing undone: cannot restore {'; '.join(lost)}; use --force to restore the rest"
        )
    opened = {
        "kind": "undo",
        "from": state.sequence_number,
        "turns": [r.folder.name for r in undoing],
    }
    atomic_write(journal_path, json.dumps(opened))
    crash_point("undo")
    return finish_undo(store, session_id, opened, prompt)


def finish_undo(
    store: SessionStore,
    session_id: str,
    journal: dict[str, Any],
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> UndoReport:
    """Carry out (or finish, after a crash) the undo ``journal`` describes.

    Every step can be run again: files are put back from their pre-images (the same bytes
    again), the state is rewound once, and the turns still in ``turns/`` are set aside.
    """
    state = store.load(session_id)
    folders = store.sessions / session_id / "turns"
    undoing = [TurnRecord(folders / name) for name in journal["turns"]]
    present = [record for record in undoing if record.folder.is_dir()]
    done = Restored([], [])
    untracked = [path for record in present for path in record.preimages().untracked()]
    rewound = state
    if state.sequence_number == journal["from"]:  # not rewound yet
        ws = open_workspace(store, state)
        for record in reversed(present):
            restored = restore(record, ws)
            done.paths += restored.paths
            done.problems += restored.problems
        rewound = undoing[0].state_before()
        rewound.updated_at = utc_now()
        for sequence in range(rewound.sequence_number + 1, state.sequence_number + 1):
            store.outbox_path(session_id, sequence).unlink(missing_ok=True)
        ensure_outbox(store, rewound, prompt)
        store.save(rewound)
        crash_point("rewound")
    for record in present:
        store.set_aside(session_id, record.folder, "undone")
        crash_point("undone")
    store.journal_path(session_id).unlink()
    numbers = [int(record.folder.name) for record in reversed(undoing)]
    outbox = ensure_outbox(store, rewound)
    paths = list(dict.fromkeys(done.paths))
    return UndoReport(numbers, paths, rewound, outbox, done.problems, sorted(set(untracked)))
