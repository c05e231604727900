"""The protocol's reply source: LLM replies saved as ``.txt`` files into ``inbox/``.

:class:`InboxSource` is the session loop's :class:`~codingagent.session.seams.ReplySource`: the
:class:`~codingagent.sources.watching.InboxWatcher` finds each complete reply; the source reads
it and, once its turn is applied, takes it out of the inbox (:func:`hand_off`).
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from codingagent.faults import Fault, describe
from codingagent.fsio import atomic_write
from codingagent.prompt.render import is_prompt
from codingagent.records.history import TurnRecord, kept_rendered
from codingagent.session.seams import Prompt, Reply, TurnReport
from codingagent.sources.watching import InboxWatcher
from codingagent.sources.writers import open_for_writing
from codingagent.state import SessionError, utc_now
from codingagent.workspace import display_name

# --- the reply source ------------------------------------------------------------------------


@dataclass(frozen=True)
class FileReply(Reply):
    """A reply read from a file: the file's identity when read, to hand it off afterwards."""

    path: Path = Path()
    identity: tuple[int, int, int] = (0, 0, 0)  # (inode, size, mtime_ns) when it was read
    oversized: bool = False  # over the size limit: read no further, moved whole to the history


def read_reply_file(path: Path, max_reply_bytes: int) -> FileReply:
    """The reply saved in ``path``: at most ``max_reply_bytes + 1`` bytes are read."""
    before = path.stat()
    with open(path, "rb") as f:
        data = f.read(max_reply_bytes + 1)
    return FileReply(
        data=data,
        source=display_name(path.name),
        size=before.st_size,
        path=path,
        identity=_identity(before),
        oversized=len(data) > max_reply_bytes,
        rendered=kept_rendered(path),  # a reply the agent kept after reading it from a page
    )


def hand_off(reply: FileReply, report: TurnReport, inbox: Path) -> None:
    """A reply taken from ``inbox`` leaves it once its turn is applied (its bytes are in the
    turn's history by then; an oversized one is moved there whole), unless it was saved again
    meanwhile: then the new version is the next reply. Files elsewhere are left alone."""
    path = reply.path
    if path.resolve().parent != inbox.resolve() or _identity_of(path) != reply.identity:
        return
    if open_for_writing(path):  # someone writes it again: the next version is theirs
        return
    try:
        if reply.oversized and not report.skipped:
            shutil.move(path, TurnRecord(report.history).reply_path)
        else:
            path.unlink(missing_ok=True)
    except OSError as e:
        raise Fault(
            f"The reply {path} was applied, but it could not be taken out of the inbox: "
            f"{describe(e)}. Remove it by hand (given again, it is skipped as a duplicate)",
            passing=True,
        ) from e


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _identity_of(path: Path) -> tuple[int, int, int] | None:
    try:
        return _identity(path.stat())
    except FileNotFoundError:
        return None


def save_reply(inbox: Path, session_id: str, text: str) -> Path:
    """Save a pasted reply into the inbox under a new name (``codingagent paste``)."""
    if not text.strip():
        raise SessionError("Nothing to paste: the clipboard (or stdin) is empty")
    if is_prompt(text):
        raise SessionError(
            "That is the prompt, not the LLM's reply: copy the reply from the chat, then paste"
        )
    inbox.mkdir(parents=True, exist_ok=True)
    base = f"{session_id}_reply_{utc_now():%Y%m%dT%H%M%S}"
    path, n = inbox / f"{base}.txt", 1
    while path.exists():
        n += 1
        path = inbox / f"{base}-{n}.txt"
    atomic_write(path, text)
    return path


class InboxSource:
    """Replies saved as ``.txt`` files into the inbox (any name), applied oldest first."""

    def __init__(self, inbox: Path, max_reply_bytes: int, *, poll: bool = False) -> None:
        self.inbox = inbox
        self._max_reply_bytes = max_reply_bytes
        self._watcher = InboxWatcher(inbox, poll=poll)
        self.description = (
            f"Watching {inbox} ({self._watcher.backend}): save the LLM's reply there as a .txt file"
        )

    def __enter__(self) -> InboxSource:
        self.inbox.mkdir(exist_ok=True)  # the agent's own folder: the user may have removed it
        self._watcher.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._watcher.__exit__(*exc_info)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        while (path := self._watcher.next_ready(stop)) is not None:
            try:
                return self.read(path)
            except FileNotFoundError:  # removed between the scan and the read
                continue
        return None

    def read(self, path: Path) -> FileReply:
        """The reply saved in ``path`` (in the inbox or given by name, as ``step`` does)."""
        return read_reply_file(path, self._max_reply_bytes)

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        """A reply file taken from the inbox leaves it (see :func:`hand_off`)."""
        if isinstance(reply, FileReply):
            hand_off(reply, report, self.inbox)
