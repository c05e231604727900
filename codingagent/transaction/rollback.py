"""Putting a turn's files back from its record (:func:`restore`: for a turn that cannot finish,
for recovery and for undo), and a turn that cannot finish rolled back: after a Ctrl-C
(:class:`TurnInterrupted`, the reply kept and applied again only with ``--force``) or after a
fault or a bug, every file the turn changed is restored from its pre-image with SIGINT held
off, and the history folder is set aside."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingagent.faults import describe
from codingagent.records.history import INLINE_PREIMAGE, TurnRecord
from codingagent.records.store import SessionStore
from codingagent.transaction.crashpoints import crash_point
from codingagent.transaction.journal import Journal
from codingagent.transaction.shadow import SHADOW, Shadow, put_back
from codingagent.workspace import PathRejected, PreImage, Workspace
from codingagent.workspace.layer import discard


@dataclass
class Restored:
    paths: list[str]  # put back, in the order restored
    problems: list[str]  # what could not be put back, and why


def restore(record: TurnRecord, ws: Workspace) -> Restored:
    """Put back every file the turn of ``record`` changed, last change first.

    What cannot be put back (a damaged record, a path that now leads outside the workspace, a
    saved content that is gone) is skipped and named in ``problems``; the rest is restored.
    Files that did not exist are removed before any is written back: that frees space first,
    for a rollback on a full disk.  Saved contents are streamed back, never read whole into
    memory.
    """
    records = record.preimages()
    done = Restored([], [_damaged(record, line) for line in records.damaged])
    session = record.folder.parent.parent
    stopped = records.open_command()
    if stopped is not None and "index" in stopped:  # stopped before its changes were kept
        paths, problems = put_back(ws, Shadow(session / SHADOW, 0), stopped["index"])
        done.paths += paths
        done.problems += problems
    for layer in records.layers():  # what a layer still holds was never the workspace's
        discard(session / layer)
    # Created files go first (that frees space), then the folders commands made and removed
    # (a folder made where a file was is gone before the file comes back).
    entries = list(reversed(records.entries))
    for entry in entries:
        if "inline" not in entry and not entry["blob"]:
            _restore_entry(record, ws, entry, done)
    for mark in reversed(records.marks):
        if mark["kind"] == "dirs":
            done.problems += ws.restore_dirs(mark["created"], mark["deleted"])
    for entry in entries:
        if "inline" in entry or entry["blob"]:
            _restore_entry(record, ws, entry, done)
    done.problems += records.unkept()
    return done


def unrestorable(record: TurnRecord) -> list[str]:
    """What :func:`restore` could not put back for sure, read before changing anything:
    damaged records and saved contents that are missing."""
    records = record.preimages()
    problems = [_damaged(record, line) for line in records.damaged] + records.unkept()
    for entry in records.entries:
        if entry["blob"] and not (record.folder / entry["blob"]).is_file():
            problems.append(f"'{entry['path']}' (its saved content {entry['blob']} is gone)")
    return problems


def _restore_entry(
    record: TurnRecord, ws: Workspace, entry: dict[str, Any], done: Restored
) -> None:
    dirs = tuple(entry["createdDirs"])
    if "inline" in entry and not dirs and _holds(ws, entry):
        return  # as it was (a file the reply named but did not change): nothing to put back
    try:
        with record.saved_content(entry) as stream:
            ws.restore(PreImage(entry["path"], None, entry["mode"], dirs, stream=stream))
    except (OSError, PathRejected) as e:
        reason = getattr(e, "strerror", None) or str(e)
        done.problems.append(f"'{entry['path']}' ({reason})")
        return
    done.paths.append(entry["path"])
    crash_point("restored")


def _damaged(record: TurnRecord, line: int) -> str:
    return f"the file saved in record {line} of {record.folder.name}/{record.PREIMAGES} (damaged)"


def _holds(ws: Workspace, entry: dict[str, Any]) -> bool:
    """Whether the workspace file of a pre-image entry saved inline holds that content and
    mode now."""
    try:
        with ws.open_bytes(entry["path"]) as f:
            mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
            data = f.read(INLINE_PREIMAGE + 1)
    except (OSError, PathRejected):
        return False
    return mode == entry["mode"] and data == base64.b64decode(entry["inline"])


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
    return restore(record, ws).problems


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
