"""Faults of the machine, not the reply: a full disk, a missing permission, a read-only
filesystem, a folder that vanished. The one place an ``OSError`` becomes the user's message.

Errors the LLM can fix are results it sees in the next prompt; these it cannot fix. A file
command that meets one of :data:`FAULTS` does not fail on its own: the turn stops, is rolled
back from its pre-images (session/turn.py), and the user is told what happened, which file,
and what to do (:class:`TurnNotApplied`). Anywhere else the CLI turns an ``OSError`` into one
line with :func:`message`, and the session loop shows a :class:`Fault` a watcher can wait out
(``passing``, e.g. ``inbox/`` deleted) as a note and goes on.
"""

from __future__ import annotations

import errno
from pathlib import Path

from codingagent.state import SessionError

# errno -> (what happened, what the user does about it)
FAULTS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the disk is full", "free some space on it"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or raise the quota"),
    errno.EROFS: ("the filesystem is read-only", "make it writable (remount it read-write)"),
    errno.EACCES: ("permission denied", "give your user access to it (see: ls -ld)"),
    errno.EPERM: (
        "the operation is not permitted",
        "give your user access to it, or clear its immutable flag (see: lsattr)",
    ),
    errno.EIO: ("the disk reported an I/O error", "check the disk (see: dmesg)"),
    errno.ESTALE: (
        "the folder was replaced (or its network mount went stale)",
        "put the folder back (or mount it again)",
    ),
}


class Fault(SessionError):
    """A fault of the machine the user must fix. ``passing``: a watcher can wait it out."""

    def __init__(self, message: str, *, passing: bool = False) -> None:
        super().__init__(message)
        self.passing = passing


class TurnNotApplied(Fault):
    """A turn stopped by a fault: rolled back (``left`` is empty), or, where even the rollback
    could not write, left for ``resume`` to finish (``left`` says what is left).

    ``source`` names the reply; ``kept`` is its copy in the session's ``aborted/`` history, if
    one was kept; ``retry`` says how to apply the reply again: the front end that knows where
    the reply came from may set it ("run 'codingagent resume ...'").
    """

    def __init__(
        self,
        session_id: str,
        sequence: int,
        source: str,
        error: Exception,
        left: str = "",
        kept: Path | None = None,
    ) -> None:
        self.session_id = session_id
        self.source = source
        self.error = error
        self.left = left
        self.kept = kept
        self.retry = "apply the reply again"
        if kept is not None:
            self.retry += f" (a copy is kept: codingagent step {session_id} {kept})"
        self._what = (
            f"Turn {sequence} of session {session_id} ({source}) was not applied: {describe(error)}"
        )
        super().__init__(self._what)

    def __str__(self) -> str:
        todo = remedy(self.error).capitalize()
        if self.left:
            return (
                f"{self._what}. {self.left}. {todo}, then run 'codingagent resume "
                f"{self.session_id}': it finishes putting them back and applies the reply again"
            )
        return (
            f"{self._what}. Nothing was changed: the turn was rolled back. "
            f"{todo}, then {self.retry}"
        )


def is_fault(error: BaseException) -> bool:
    """Whether ``error`` is a fault of the machine (not something the LLM did wrong)."""
    return isinstance(error, OSError) and error.errno in FAULTS


def describe(error: BaseException) -> str:
    """What happened, and to which file: ``the disk is full (/run/sessions/x.json)``."""
    if not isinstance(error, OSError):
        return str(error)
    what = FAULTS.get(error.errno or 0, (error.strerror or str(error), ""))[0]
    return f"{what} ({error.filename})" if error.filename else what


def remedy(error: BaseException) -> str:
    """What the user does about it: ``free some space on it``."""
    if not isinstance(error, OSError):
        return "fix that"
    if error.errno in FAULTS:
        return FAULTS[error.errno][1]
    if error.errno == errno.ENOENT:
        return "put it back"
    return "fix that"


def message(error: OSError) -> str:
    """The CLI's line for an ``OSError`` no one closer could explain."""
    return f"{describe(error).capitalize()}: {remedy(error)}, then run the command again"
