"""Putting a turn back when it cannot finish: after a Ctrl-C (:class:`TurnInterrupted`, the
reply kept and applied again only with ``--force``) or after a fault or a bug, every file the
turn changed is restored from its pre-image with SIGINT held off, and the history folder is
set aside."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from codingagent.faults import describe
from codingagent.transaction.history import TurnRecord
from codingagent.transaction.journal import Journal
from codingagent.transaction.store import SessionStore
from codingagent.workspace import Workspace


class TurnInterrupted(KeyboardInterrupt):
    """Ctrl-C during a turn, which was rolled back; ``problems`` names what could not be put
    back (say, a path that now leads out of the workspace)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def interrupted_turn(error: KeyboardInterrupt) -> str:
    """What a Ctrl-C did to the turn it interrupted, for the console."""
    if not isinstance(error, TurnInterrupted):
        return "nothing was applied"
    said = "the turn was rolled back; its reply is applied again only with --force"
    if error.problems:
        said += f"; could not put back {'; '.join(error.problems)}"
    return said


def _put_back(
    store: SessionStore, session_id: str, record: TurnRecord, ws: Workspace, answered: int
) -> list[str]:
    """A turn stopped before its commit point undone: its next prompt removed (that frees
    space first) and its files put back from their pre-images; what could not be, by name."""
    with contextlib.suppress(OSError):
        store.outbox_path(session_id, answered + 1).unlink(missing_ok=True)
    return record.restore(ws).problems


def roll_back_interrupted(
    store: SessionStore, session_id: str, record: TurnRecord, ws: Workspace, answered: int
) -> list[str]:
    """Undo an interrupted (Ctrl-C) turn at once: its files put back, its journal removed and
    its history kept in ``interrupted/``, where the duplicate check finds its reply, so it is
    not applied again unless asked (``--force``).  Ctrl-C is ignored meanwhile; a kill leaves
    the journal, and recovery finishes the job.  What could not be put back, by name."""
    with _sigint_ignored():
        problems = _put_back(store, session_id, record, ws, answered)
        store.journal_path(session_id).unlink()
        store.set_aside(session_id, record.folder, "interrupted")
    return problems


def roll_back_failed(
    store: SessionStore,
    session_id: str,
    record: TurnRecord,
    journal: Journal,
    ws: Workspace,
    answered: int,
) -> tuple[str, Path | None]:
    """Undo a turn a fault of the machine stopped (a full disk, no permission), at once: its
    files put back, its journal removed and its history set aside in ``aborted/``, so the
    reply can be applied afresh.

    Returns what is left ("" when nothing: else the journal stays and recovery, ``resume``,
    finishes the job) and where the reply's copy is kept in ``aborted/``.
    """
    with _sigint_ignored():
        problems = _put_back(store, session_id, record, ws, answered)
        if problems:
            return (
                f"Rolling it back failed too: could not put back {'; '.join(problems)}; its "
                f"journal {journal.path} stays"
            ), None
        try:
            journal.close()
        except OSError as e:
            return (
                f"Its files were put back, but its journal could not be removed ({describe(e)})",
                None,
            )
        try:
            kept = store.set_aside(session_id, record.folder, "aborted")
        except OSError:  # left in place: the next turn sets it aside
            return "", None
    return "", TurnRecord(kept).reply_path


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
