"""Finding complete replies in ``inbox/``, one at a time: :class:`InboxWatcher`.

:class:`~codingagent.sources.inbox.InboxSource`, the session loop's reply source, is built on it.

How a reply is found
--------------------
Filesystem events are *hints*, never the truth. Event queues overflow, network and WSL mounts
deliver nothing, polling misses short-lived states, and a file may already be in the inbox before
the observer starts. So the loop never acts on an event: every event only records a hint and wakes
the loop, and the loop lists the folder (``os.scandir``) to decide what is there. It also lists it
every ``rescan_interval`` seconds without any event, so a missed event costs latency, never a reply.

When a reply is complete
------------------------
A reply is read only when it is complete (docs/guarantees.md §4). Two kinds of evidence count:

* a *close-after-write* (inotify ``IN_CLOSE_WRITE``) or a *moved-into-place* event (a rename onto
  a ``*.txt`` name, as browsers and atomic writers do at the end of a download or save) for the
  file, provided its ``(size, mtime_ns)`` is still what it was when the event was handled and no
  write event has come since. This is the fast path. The event is handled a moment after the
  close, so a writer that reopens the file at once (``echo a > r.txt; slow-tool >> r.txt``) may
  have written again before the signature is taken; its write event is then already queued behind
  the close. The hint is therefore trusted only once every event queued before it has been
  handled. With inotify that is known, not guessed: one inotify queue hands out its events in the
  order they happened, and watchdog keeps that order, so the watcher makes an event of its own
  (it creates and at once removes a hidden *barrier* file, ``.codingagent-barrier-*``, in the
  inbox) and trusts the hint when that event comes through, a fraction of a millisecond later.
  Other backends, and inotify when the barrier cannot be made, trust the hint after
  ``_CONFIRM`` seconds without a write event instead; a barrier whose event is lost (an
  overflowed queue) is given up after ``_BARRIER_LOST`` seconds, and the hint trusted then.
  An overflow can also drop write events and let a later barrier through: then, as under the
  time rule, only the checks at the hand-over below (the signature again, and no writer left)
  stand between a reopened file and the loop.
* the fallback, for platforms or mounts without such events and for files that were there before
  the start: ``(size, mtime_ns)`` unchanged for ``settle`` seconds across successive scans. Any
  write moves ``mtime``, so an unchanged signature after ``settle`` means nothing was written in
  that time. Where close-writes are reported (inotify), a file seen being written waits for its
  close instead (or, should the close event be lost, ``_UNCLOSED_SETTLE`` seconds unchanged).

Whatever the evidence, a file some process still has open for writing
(:func:`~codingagent.sources.writers.open_for_writing`, Linux ``/proc``) is never handed over,
deleted or moved: a writer that pauses with the file open is waited for.  Downloads are still
best written under a temporary name (``.part``, ``.crdownload``) that :func:`is_reply_name`
rejects, then renamed.

A reply is one close: a writer that closes the file and opens it again later to append has
written two replies as far as the inbox can tell.  If the first was already applied and the file
has grown meanwhile (it still begins with that reply), the grown file is refused by the turn
(see ``turn.apply_reply``), never applied again; once the first was applied and removed, the
appended rest arrives as a new file and is a reply of its own.  Write a reply in one go, or under
a temporary name and rename it.

Latency
-------
With inotify a reply written and closed is handed over within milliseconds: the event stores the
hint and sets a ``threading.Event`` the loop waits on; there is no sleep on that path. One
watchdog detail adds up to 0.5 s: a file renamed *out* of the inbox is held that long while
watchdog looks for the matching half of the move, and later events queue behind it.
:func:`~codingagent.sources.inbox.hand_off` therefore deletes a reply once its turn is
applied (its bytes are already in the history) rather than moving it; only an oversized reply
is moved whole, and only a user's ``mv`` pays the delay.

When the inbox goes
-------------------
The folder deleted or moved away under a running watcher is said once (a passing
:class:`~codingagent.faults.Fault`), then waited for; when it is back, or another folder took
its place, a new observer watches it (each scan checks the folder's device and inode).

The signature is checked once more right before the hand-over, and every version handed over is
remembered by ``(name, size, mtime_ns)`` so a reply left in place is not handed out twice,
while the same name saved again with new content is.
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

from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from codingagent.faults import Fault
from codingagent.sources.hints import EVENTS, Clock, HintRecorder, Signature, file_signature
from codingagent.sources.writers import open_for_writing

# watchdog logs an error when its inotify thread is stopped while events are still queued,
# which happens whenever a session ends; it is harmless and must not reach the console.
logging.getLogger("watchdog.observers.inotify_buffer").addHandler(logging.NullHandler())
logging.getLogger("watchdog.observers.inotify").addHandler(logging.NullHandler())

# Editors and downloaders mark their temporary files with these leading characters:
# vim ``.x.swp``, emacs ``.#x`` and ``#x#``, Office ``~$x``; hidden files are never replies either.
_TEMP_PREFIXES = (".", "~", "#")

# Seconds a file written while watched, whose close-write never came (an overflowed event
# queue), must stay unchanged before the settle rule takes it anyway.
_UNCLOSED_SETTLE = 5.0

# Seconds a set stop Event may go unnoticed while the loop waits.
_STOP_CHECK = 0.1

# Seconds to wait for the observer's threads after stopping them. They are daemon threads, so
# one that does not finish in time never keeps the agent from exiting (Ctrl-C on a loaded
# machine must end the process, not wait on a thread).
_JOIN_TIMEOUT = 2.0


def is_reply_name(name: str) -> bool:
    """Whether a file called ``name`` in the inbox is an LLM reply (``*.txt``, any suffix case).

    Editor and download temp files are not: they start with ``.``, ``~`` or ``#``, or do not end
    in ``.txt`` at all (``x.txt.part``, ``x.txt.crdownload``, ``x.txt~``).
    """
    return name.lower().endswith(".txt") and not name.startswith(_TEMP_PREFIXES)


def backend_name(poll: bool = False) -> str:
    """The file-event backend a watcher would use here ("inotify", "polling", ...)."""
    return _backend_name(PollingObserver if poll else Observer)


def _backend_name(observer_class: object) -> str:
    """``InotifyObserver`` -> ``inotify``, ``PollingObserver`` -> ``polling``, and so on."""
    return str(getattr(observer_class, "__name__", "")).removesuffix("Observer").lower()


def _observer_factory(poll: bool) -> Callable[[], BaseObserver]:
    """The observer to build for each watch (an observer cannot restart)."""
    if poll:
        return PollingObserver
    if _backend_name(Observer) == "inotify":
        # Full events report a file moved in from another folder (``mv ~/Downloads/r.txt
        # inbox/``) as a move, a completion hint, instead of as a bare creation.
        return functools.partial(Observer, generate_full_events=True)  # type: ignore[call-arg]
    return Observer


class InboxWatcher:
    """Finds the complete replies in ``inbox``, oldest first, one at a time.

    Use it as a context manager (the observer runs inside it) and call :meth:`next_ready`.
    ``poll=True`` uses watchdog's PollingObserver, for mounts where native events do not work.
    ``backend`` names the observer in use ("inotify", "polling", ...) for the console.
    ``clock`` gives the seconds the settle, confirm and rescan times count in (tests pass one
    they advance by hand).
    """

    def __init__(
        self,
        inbox: Path,
        *,
        poll: bool = False,
        settle: float = 0.5,
        rescan_interval: float = 1.0,
        clock: Clock = time.monotonic,
    ) -> None:
        # Absolute, so event paths (built from the watched path) compare equal to it.
        self.inbox = Path(os.path.abspath(inbox))
        self.backend = backend_name(poll)
        self._settle = settle
        self._rescan_interval = rescan_interval
        self._clock = clock
        self._new_observer = _observer_factory(poll)
        self._observer: BaseObserver | None = None
        self._folder: tuple[int, int] | None = None  # the folder the observer watches
        self._entered = False
        self._wake = threading.Event()
        inotify = self.backend == "inotify"
        self._hints = HintRecorder(str(self.inbox), self._wake, clock, inotify, is_reply_name)
        self._first_seen: dict[str, tuple[Signature, float]] = {}
        self._handed: dict[str, Signature] = {}
        # Versions found open for writing, and when: looked at again on the writer's next
        # close (a new hint) or after ``rescan_interval``.
        self._busy: dict[str, tuple[Signature, float]] = {}

    def __enter__(self) -> InboxWatcher:
        self._watch()
        self._entered = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stops the observer on every way out, KeyboardInterrupt included."""
        self._entered = False
        self._unwatch()

    def _watch(self) -> None:
        """Start an observer on the inbox folder as it is now."""
        self._folder = _folder_identity(self.inbox)  # first: a swap meanwhile is noticed
        observer = self._new_observer()
        try:
            observer.schedule(self._hints, str(self.inbox), recursive=False, event_filter=EVENTS)
            observer.start()
        except BaseException:
            _stop_observer(observer)
            raise
        self._observer = observer

    def _watching_the_folder(self) -> bool:
        """Whether the observer watches the inbox folder that is there now: one that came back
        or was replaced is watched afresh; a folder gone raises a passing :class:`Fault`, once,
        then False until it is back."""
        folder = _folder_identity(self.inbox)
        if folder is None:
            self._unwatch()
            if self._folder is not None:
                self._folder = None
                raise Fault(
                    f"{self.inbox} is gone (deleted or moved away); waiting for it to come "
                    "back: make the folder again, or move it back",
                    passing=True,
                )
            return False
        if folder != self._folder:
            self._unwatch()
            self._watch()
        return True

    def _unwatch(self) -> None:
        if self._observer is not None:
            _stop_observer(self._observer)
            self._observer = None

    def next_ready(self, stop: threading.Event) -> Path | None:
        """The next complete reply, once it is complete; None once ``stop`` is set.

        A version of a file is handed out once: the same name saved again with new content is
        handed out again.

        The inbox folder deleted (or moved away) raises a passing :class:`Fault` once; the next
        call waits for the folder to come back.  A folder that comes back, or is replaced by
        another, is watched afresh.
        """
        while not stop.is_set():
            # Clear before scanning: an event arriving during the scan makes the wait return.
            self._wake.clear()
            if self._entered and not self._watching_the_folder():
                self._sleep(stop)
                continue
            try:
                ready = self._ready()
            except (FileNotFoundError, NotADirectoryError):
                if not self._entered:
                    raise
                continue  # gone since it was looked at: the next pass says so
            if not ready:
                self._sleep(stop)
                continue
            name, signature = ready[0]
            if file_signature(self.inbox / name) != signature:  # changed since the scan
                continue
            if open_for_writing(self.inbox / name):  # a writer that paused: not complete
                self._busy[name] = (signature, self._clock())
                continue
            self._handed[name] = signature
            return self.inbox / name
        return None

    def pending(self) -> list[Path]:
        """The complete replies ready now, oldest modification time first (ties by name).

        Each call is one scan: it also advances the ``settle`` clock of the files it sees. Call it
        from the thread that calls :meth:`next_ready`, or while nothing does.
        """
        return [self.inbox / name for name, _ in self._ready()]

    def _sleep(self, stop: threading.Event) -> None:
        """Wait for an event, the next settle deadline or the periodic rescan, whichever is first.

        The wait is cut into short slices so a set ``stop`` is noticed promptly however long
        ``rescan_interval`` is: Python cannot wait on two Events at once.
        """
        deadline = self._clock() + self._wait_timeout()
        while not stop.is_set():
            left = deadline - self._clock()
            if left <= 0 or self._wake.wait(min(left, _STOP_CHECK)):
                return

    def _ready(self) -> list[tuple[str, Signature]]:
        now = self._clock()
        present = self._scan(now)
        if self._observer is not None and self.backend == "inotify":
            self._hints.make_barrier()
        ready = [(n, sig) for n, sig in present.items() if self._ready_in(n, sig, now) <= 0]
        return sorted(ready, key=lambda item: (item[1][1], item[0]))

    def _scan(self, now: float) -> dict[str, Signature]:
        """List the candidate replies and their signatures; note when each signature appeared."""
        present: dict[str, Signature] = {}
        with os.scandir(self.inbox) as entries:
            for entry in entries:
                if is_reply_name(entry.name):
                    signature = file_signature(entry.path)
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
        self._busy = {n: b for n, b in self._busy.items() if present.get(n) == b[0]}
        return present

    def _ready_in(self, name: str, signature: Signature, now: float) -> float:
        """Seconds until this version of ``name`` counts as complete if nothing changes (<= 0:
        it is complete now); infinite for a version already handed over."""
        if self._handed.get(name) == signature:
            return math.inf
        settled = self._first_seen[name][1] + self._settle
        if self._hints.unclosed(name):  # written while watched: its close is the evidence
            settled = self._first_seen[name][1] + max(self._settle, _UNCLOSED_SETTLE)
        waits = [settled - now]
        found = self._hints.hint(name)
        if found is not None and found[0].signature == signature:
            waits.append(found[1] - now)
        ready_in = min(waits)
        busy = self._busy.get(name)
        if busy is not None and (found is None or found[0].when <= busy[1]):
            ready_in = max(ready_in, busy[1] + self._rescan_interval - now)
        return ready_in

    def _wait_timeout(self) -> float:
        """Seconds until the next file could become complete, or the periodic rescan is due."""
        now = self._clock()
        waits = [self._ready_in(name, sig, now) for name, (sig, _) in self._first_seen.items()]
        return max(0.0, min([self._rescan_interval, *waits]))


def _folder_identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the folder ``path``; None when it is gone or no folder."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _stop_observer(observer: BaseObserver) -> None:
    """Stop the observer and wait for it, but never longer than ``_JOIN_TIMEOUT``.

    watchdog's ``stop()`` itself joins its emitter and inotify threads without a time limit and
    takes a lock the dispatch thread holds while a handler runs; so it runs on a daemon thread
    of its own, and the agent goes on (and can exit) whatever a stuck thread does.
    """

    def stop_and_join() -> None:
        observer.stop()
        if observer.is_alive():
            observer.join()

    stopper = threading.Thread(target=stop_and_join, name="inbox-observer-stop", daemon=True)
    stopper.start()
    stopper.join(_JOIN_TIMEOUT)
