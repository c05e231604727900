"""Completion hints: what the inbox watcher's file events say of each reply, and barriers.

The event handler, :class:`HintRecorder`, runs on watchdog's observer thread: it records, for
each reply name, the last close-write or move-in not undone since (a :class:`Hint`), and which
names were written and not closed since; it decides nothing. The watcher
(:mod:`codingagent.sources.watching`, whose docstring says when a reply is complete) asks it when
a hint may be trusted: once a barrier made after the hint has come through the same event queue,
or after a wait where there is no barrier.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

# Events that make a reply appear, complete or vanish, and writes that cancel a completion hint:
# the ones the recorder reads, and the watcher asks for. Opens and plain reads are left out of
# the inotify mask: they say nothing about completeness.
EVENTS: list[type[FileSystemEvent]] = [
    FileClosedEvent,
    FileMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
]

Signature = tuple[int, int]
"""``(size, mtime_ns)`` of a regular file: what "unchanged" means here."""


class Hint(NamedTuple):
    """A close-write or move-in of a reply, as the event handler saw it."""

    signature: Signature  # the file's, when the event was handled
    when: float  # then, on the watcher's clock
    barriers: int  # how many barriers had been made by then


Clock = Callable[[], float]
"""Seconds on a clock that never goes back (:func:`time.monotonic`)."""

# Seconds a completion hint must stand without a write event before the loop trusts it, where
# no barrier tells when the events queued behind it have come (codingagent.sources.watching).
_CONFIRM = 0.010

# Seconds after which a hint whose barrier event never came is trusted all the same.
_BARRIER_LOST = 1.0

# The name of a barrier file starts so; a leading dot keeps it from ever being taken as a reply.
_BARRIER = ".codingagent-barrier-"


def file_signature(path: str | Path) -> Signature | None:
    """The signature of a regular file at ``path``; None when it is gone or not a regular file.

    Symlinks are not followed: a link's target could change without the inbox seeing it.
    """
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


class HintRecorder(FileSystemEventHandler):
    """Runs on the observer thread: records completion hints and wakes the loop, decides nothing.

    A hint is the file's signature when its close-write or move-in event was handled, and the
    monotonic time of that; a later write event for the file withdraws it. It also notes how
    many barriers had been made by then: only a barrier made after it vouches for it.
    """

    def __init__(
        self,
        inbox: str,
        wake: threading.Event,
        clock: Clock,
        closes: bool,
        wanted: Callable[[str], bool],
    ) -> None:
        """``closes``: the backend reports close-writes (inotify), so a write not yet followed
        by one means the file may still be open. ``wanted``: the names hints are kept for."""
        self._inbox = inbox
        self._wanted = wanted
        self._clock = clock
        self._wake = wake
        self._closes = closes
        self._lock = threading.Lock()
        self._hints: dict[str, Hint] = {}
        self._unclosed: set[str] = set()  # written (created, modified) and not closed since
        # This recorder's barriers: the prefix, random (another watcher's never count), and
        # a number; nothing else is one of them.
        self._barrier = f"{_BARRIER}{secrets.token_hex(8)}-"
        self._ours = re.compile(re.escape(self._barrier) + r"([0-9]{1,18})")
        self._made = 0  # barriers made so far (numbered from 1)
        self._passed = 0  # the highest-numbered barrier whose event has come
        self._failed = 0  # the number of the last barrier that could not be made (0: none)

    def make_barrier(self) -> None:
        """Make a barrier if a hint waits for one: create and remove a hidden file in the inbox,
        whose creation event comes after every event queued before it.

        Call it only while an inotify observer watches the inbox (no other kind keeps order).
        """
        with self._lock:
            if all(hint.barriers < self._made for hint in self._hints.values()):
                return
            self._made += 1
            number = self._made
        path = os.path.join(self._inbox, f"{self._barrier}{number}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            os.unlink(path)
        except OSError:  # the hints waiting on it fall back to the time rule; later ones retry
            with self._lock:
                self._failed = max(self._failed, number)

    def hint(self, name: str) -> tuple[Hint, float] | None:
        """The last close-write or move-in of ``name`` not yet undone, and when it counts, on
        the clock (both read at once: an event handled meanwhile cannot come between them):
        once a barrier made after it has come through; ``_BARRIER_LOST`` after it when that
        barrier's event does not come; ``_CONFIRM`` after it where no barrier was made, or the
        last one made could not be."""
        with self._lock:
            hint = self._hints.get(name)
            if hint is None:
                return None
            if self._passed > hint.barriers:
                return hint, hint.when
            if self._made > hint.barriers and self._failed != self._made:
                return hint, hint.when + _BARRIER_LOST
            return hint, hint.when + _CONFIRM

    def unclosed(self, name: str) -> bool:
        """Whether ``name`` was written since its last close-write or move-in."""
        with self._lock:
            return name in self._unclosed

    def dispatch(self, event: FileSystemEvent) -> None:
        # Wake the loop only after the hint is stored, or it could scan without it and sleep.
        # Writes only withdraw hints and cannot make a reply ready: no need to wake for them.
        try:
            super().dispatch(event)
        finally:
            if not isinstance(event, FileModifiedEvent):
                self._wake.set()

    def on_closed(self, event: FileClosedEvent) -> None:
        self._mark(event.src_path)

    def on_moved(self, event: DirMovedEvent | FileMovedEvent) -> None:
        self._forget(event.src_path)
        self._mark(event.dest_path)

    def on_deleted(self, event: DirDeletedEvent | FileDeletedEvent) -> None:
        self._forget(event.src_path)

    def on_created(self, event: DirCreatedEvent | FileCreatedEvent) -> None:
        path = os.fsdecode(event.src_path)
        ours = self._ours.fullmatch(os.path.basename(path))
        if ours is not None and self._in_inbox(path):  # one of ours has come through
            with self._lock:
                self._passed = max(self._passed, int(ours.group(1)))
        self._forget(event.src_path, written=True)

    def on_modified(self, event: DirModifiedEvent | FileModifiedEvent) -> None:
        self._forget(event.src_path, written=True)

    def _in_inbox(self, path: str) -> bool:
        return bool(path) and os.path.dirname(os.path.abspath(path)) == self._inbox

    def _name(self, raw: bytes | str) -> str | None:
        """The file name of an event path that lies directly in the inbox, else None; None too
        for a barrier file (any watcher's): its events are no hints of anything."""
        path = os.fsdecode(raw)
        name = os.path.basename(path)
        return name if self._in_inbox(path) and not name.startswith(_BARRIER) else None

    def _mark(self, raw: bytes | str) -> None:
        name = self._name(raw)
        if name is None or not self._wanted(name):
            return
        found = file_signature(os.path.join(self._inbox, name))
        with self._lock:
            self._unclosed.discard(name)
            if found is None:
                self._hints.pop(name, None)
            else:
                self._hints[name] = Hint(found, self._clock(), self._made)

    def _forget(self, raw: bytes | str, written: bool = False) -> None:
        name = self._name(raw)
        if name is not None:
            with self._lock:
                self._hints.pop(name, None)
                if written and self._closes:
                    self._unclosed.add(name)
                else:
                    self._unclosed.discard(name)
