"""Notice LLM replies saved into ``inbox/`` and hand complete ones, one at a time, to a callback.

How a reply is found
--------------------
Filesystem events are *hints*, never the truth. Event queues overflow, network and WSL mounts
deliver nothing, polling misses short-lived states, and a file may already be in the inbox before
the observer starts. So the loop never acts on an event: every event only records a hint and wakes
the loop, and the loop lists the folder (``os.scandir``) to decide what is there. It also lists it
every ``rescan_interval`` seconds without any event, so a missed event costs latency, never a reply.

When a reply is complete
------------------------
A reply is read only when it is complete (SPEC §3 "Partial files"). Two kinds of evidence count:

* a *close-after-write* (inotify ``IN_CLOSE_WRITE``) or a *moved-into-place* event (a rename onto
  a ``*.txt`` name, as browsers and atomic writers do at the end of a download or save) for the
  file, provided its ``(size, mtime_ns)`` is still what it was when the event was handled and no
  write event has come since. This is the fast path. The event is handled a moment after the
  close, so a writer that reopens the file at once (``echo a > r.txt; slow-tool >> r.txt``) may
  have written again before the signature is taken; its write event is then already queued behind
  the close. The hint is therefore trusted only after ``_CONFIRM`` seconds without a write event,
  which lets those queued events arrive and costs a human-paced workflow nothing noticeable.
* the fallback, for platforms or mounts without such events and for files that were there before
  the start: ``(size, mtime_ns)`` unchanged for ``settle`` seconds across successive scans. Any
  write moves ``mtime``, so an unchanged signature after ``settle`` means nothing was written in
  that time. A writer that pauses longer than ``settle`` defeats this, which is why downloads are
  best written under a temporary name (``.part``, ``.crdownload``) that :func:`is_reply_name`
  rejects, then renamed.

Latency
-------
With inotify a reply written and closed is handed over within milliseconds: the event stores the
hint and sets a ``threading.Event`` the loop waits on; there is no sleep on that path. One
watchdog detail adds up to 0.5 s: a file renamed *out* of the inbox is held that long while
watchdog looks for the matching half of the move, and later events queue behind it. The turn
engine therefore deletes a reply it has archived (its bytes are already in the history) rather
than moving it; only an oversized reply is moved whole, and only a user's ``mv`` pays the delay.

The signature is checked once more right before the hand-over, and every version handed over is
remembered by ``(name, size, mtime_ns)`` so a reply the callback leaves in place is not handed
twice, while the same name saved again with new content is.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from .session import SessionStore
from .turn import TurnReport, apply_reply_file

# watchdog logs an error when its inotify thread is stopped while events are still queued,
# which happens whenever a session ends; it is harmless and must not reach the console.
logging.getLogger("watchdog.observers.inotify_buffer").addHandler(logging.NullHandler())
logging.getLogger("watchdog.observers.inotify").addHandler(logging.NullHandler())

_Signature = tuple[int, int]
"""``(size, mtime_ns)`` of a regular file: what "unchanged" means here."""

# Editors and downloaders mark their temporary files with these leading characters:
# vim ``.x.swp``, emacs ``.#x`` and ``#x#``, Office ``~$x``; hidden files are never replies either.
_TEMP_PREFIXES = (".", "~", "#")

# Events that make a reply appear, complete or vanish, and writes that cancel a completion hint.
# Opens and plain reads are left out of the inotify mask: they say nothing about completeness.
_EVENTS: list[type[FileSystemEvent]] = [
    FileClosedEvent,
    FileMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
]

# Seconds a completion hint must stand without a write event before the loop trusts it.
_CONFIRM = 0.010

# Seconds a set stop Event may go unnoticed while the loop waits.
_STOP_CHECK = 0.1


def is_reply_name(name: str) -> bool:
    """Whether a file called ``name`` in the inbox is an LLM reply (``*.txt``, any suffix case).

    Editor and download temp files are not: they start with ``.``, ``~`` or ``#``, or do not end
    in ``.txt`` at all (``x.txt.part``, ``x.txt.crdownload``, ``x.txt~``).
    """
    return name.lower().endswith(".txt") and not name.startswith(_TEMP_PREFIXES)


def _signature(path: str | Path) -> _Signature | None:
    """The signature of a regular file at ``path``; None when it is gone or not a regular file.

    Symlinks are not followed: a link's target could change without the inbox seeing it.
    """
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def backend_name(poll: bool = False) -> str:
    """The file-event backend a watcher would use here ("inotify", "polling", ...)."""
    return _backend_name(PollingObserver if poll else Observer)


def _backend_name(observer_class: type) -> str:
    """``InotifyObserver`` -> ``inotify``, ``PollingObserver`` -> ``polling``, and so on."""
    return observer_class.__name__.removesuffix("Observer").lower()


def _observer_factory(poll: bool) -> Callable[[], BaseObserver]:
    """The observer to build for each :meth:`InboxWatcher.run` (an observer cannot restart)."""
    if poll:
        return PollingObserver
    if Observer.__name__ == "InotifyObserver":
        # Full events report a file moved in from another folder (``mv ~/Downloads/r.txt
        # inbox/``) as a move, a completion hint, instead of as a bare creation.
        return functools.partial(Observer, generate_full_events=True)
    return Observer


class _HintRecorder(FileSystemEventHandler):
    """Runs on the observer thread: records completion hints and wakes the loop, decides nothing.

    A hint is the file's signature when its close-write or move-in event was handled, and the
    monotonic time of that; a later write event for the file withdraws it.
    """

    def __init__(self, inbox: str, wake: threading.Event) -> None:
        self._inbox = inbox
        self._wake = wake
        self._lock = threading.Lock()
        self._hints: dict[str, tuple[_Signature, float]] = {}

    def hint(self, name: str) -> tuple[_Signature, float] | None:
        """``(signature, when)`` of the last close-write or move-in of ``name`` not yet undone."""
        with self._lock:
            return self._hints.get(name)

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

    def on_moved(self, event: FileMovedEvent) -> None:
        self._forget(event.src_path)
        self._mark(event.dest_path)

    def on_deleted(self, event: FileDeletedEvent) -> None:
        self._forget(event.src_path)

    def on_modified(self, event: FileModifiedEvent) -> None:
        self._forget(event.src_path)

    def _name(self, raw: bytes | str) -> str | None:
        """The file name of an event path that lies directly in the inbox, else None."""
        path = os.fsdecode(raw)
        if not path or os.path.dirname(os.path.abspath(path)) != self._inbox:
            return None
        return os.path.basename(path)

    def _mark(self, raw: bytes | str) -> None:
        name = self._name(raw)
        if name is None:
            return
        signature = _signature(os.path.join(self._inbox, name))
        with self._lock:
            if signature is None:
                self._hints.pop(name, None)
            else:
                self._hints[name] = (signature, time.monotonic())

    def _forget(self, raw: bytes | str) -> None:
        name = self._name(raw)
        if name is not None:
            with self._lock:
                self._hints.pop(name, None)


class InboxWatcher:
    """Hands each complete reply in ``inbox`` to ``handle``, oldest first, one at a time.

    ``handle(path)`` normally moves the reply out of the inbox and returns True when the session
    is done. ``poll=True`` uses watchdog's PollingObserver, for mounts where native events do not
    work. ``backend`` names the observer in use ("inotify", "polling", ...) for the console.
    """

    def __init__(
        self,
        inbox: Path,
        handle: Callable[[Path], bool],
        *,
        poll: bool = False,
        settle: float = 0.5,
        rescan_interval: float = 1.0,
    ) -> None:
        # Absolute, so event paths (built from the watched path) compare equal to it.
        self.inbox = Path(os.path.abspath(inbox))
        self.backend = backend_name(poll)
        self._handle = handle
        self._settle = settle
        self._rescan_interval = rescan_interval
        self._new_observer = _observer_factory(poll)
        self._wake = threading.Event()
        self._hints = _HintRecorder(str(self.inbox), self._wake)
        self._first_seen: dict[str, tuple[_Signature, float]] = {}
        self._handed: dict[str, _Signature] = {}

    def run(self, stop: threading.Event | None = None) -> None:
        """Process replies until ``handle`` returns True or ``stop`` is set.

        Exceptions from ``handle`` propagate: the turn engine turns bad replies into results
        itself, so an exception is a bug. The observer is stopped on every way out, including
        KeyboardInterrupt.
        """
        stop = stop if stop is not None else threading.Event()
        observer = self._new_observer()
        try:
            observer.schedule(self._hints, str(self.inbox), recursive=False, event_filter=_EVENTS)
            observer.start()
            self._loop(stop)
        finally:
            observer.stop()
            if observer.is_alive():
                observer.join()

    def pending(self) -> list[Path]:
        """The complete replies ready now, oldest modification time first (ties by name).

        Each call is one scan: it also advances the ``settle`` clock of the files it sees. Call it
        from the thread that runs :meth:`run`, or while nothing runs.
        """
        return [self.inbox / name for name, _ in self._ready()]

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            # Clear before scanning: an event arriving during the scan makes the wait return.
            self._wake.clear()
            ready = self._ready()
            if not ready:
                self._sleep(stop)
            elif self._hand_over(*ready[0]):
                return

    def _sleep(self, stop: threading.Event) -> None:
        """Wait for an event, the next settle deadline or the periodic rescan, whichever is first.

        The wait is cut into short slices so a set ``stop`` is noticed promptly however long
        ``rescan_interval`` is: Python cannot wait on two Events at once.
        """
        deadline = time.monotonic() + self._wait_timeout()
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._wake.wait(min(left, _STOP_CHECK)):
                return

    def _hand_over(self, name: str, signature: _Signature) -> bool:
        """Give one reply to ``handle`` if it is still the version the scan judged complete.

        Returns True when the session is done. A file that changed since the scan is left for
        the next scan to judge again.
        """
        path = self.inbox / name
        if _signature(path) != signature:
            return False
        done = self._handle(path)
        self._handed[name] = signature
        return bool(done)

    def _ready(self) -> list[tuple[str, _Signature]]:
        now = time.monotonic()
        present = self._scan(now)
        ready = [(n, sig) for n, sig in present.items() if self._ready_in(n, sig, now) <= 0]
        return sorted(ready, key=lambda item: (item[1][1], item[0]))

    def _scan(self, now: float) -> dict[str, _Signature]:
        """List the candidate replies and their signatures; note when each signature appeared."""
        present: dict[str, _Signature] = {}
        with os.scandir(self.inbox) as entries:
            for entry in entries:
                if is_reply_name(entry.name):
                    signature = _signature(entry.path)
                    if signature is not None:
                        present[entry.name] = signature
        for name, signature in present.items():
            seen = self._first_seen.get(name)
            if seen is None or seen[0] != signature:
                self._first_seen[name] = (signature, now)
        # A name that left the inbox starts afresh if it comes back, even with the same signature:
        # the turn engine recognises a re-dropped reply by its content and says so.
        self._first_seen = {n: s for n, s in self._first_seen.items() if n in present}
        self._handed = {n: s for n, s in self._handed.items() if n in present}
        return present

    def _ready_in(self, name: str, signature: _Signature, now: float) -> float:
        """Seconds until this version of ``name`` counts as complete if nothing changes (<= 0:
        it is complete now); infinite for a version already handed over."""
        if self._handed.get(name) == signature:
            return math.inf
        waits = [self._first_seen[name][1] + self._settle - now]
        hint = self._hints.hint(name)
        if hint is not None and hint[0] == signature:
            waits.append(hint[1] + _CONFIRM - now)
        return min(waits)

    def _wait_timeout(self) -> float:
        """Seconds until the next file could become complete, or the periodic rescan is due."""
        now = time.monotonic()
        waits = [self._ready_in(name, sig, now) for name, (sig, _) in self._first_seen.items()]
        return max(0.0, min([self._rescan_interval, *waits]))


def session_watcher(
    store: SessionStore,
    session_id: str,
    *,
    poll: bool = False,
    on_reply: Callable[[Path], None] | None = None,
    on_turn: Callable[[TurnReport], bool] | None = None,
    **options,
) -> InboxWatcher:
    """A watcher on ``store.inbox`` that applies each complete reply to the session as one turn,
    and stops once the session is complete or ``on_turn`` returns True.
    ``options`` are ``turn.apply_reply_file``'s."""

    def handle(path: Path) -> bool:
        if on_reply is not None:
            on_reply(path)
        report = apply_reply_file(store, session_id, path, **options)
        stop = on_turn(report) if on_turn is not None else False
        return report.state.is_complete or stop

    return InboxWatcher(store.inbox, handle, poll=poll)
