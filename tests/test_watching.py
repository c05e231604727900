"""Tests for the inbox watcher (codingagent.sources.watching): which inbox files count as
replies, and when they are handed over.

Tests marked slow run a real watchdog observer in a thread (joined with a timeout, so a failure
never hangs the suite) and write files the way browsers and editors do.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from clocks import ManualClock
from watchdog.events import FileClosedEvent, FileCreatedEvent, FileModifiedEvent, FileMovedEvent

from codingagent.sources.watching import InboxWatcher, is_reply_name

SETTLE = 0.5
QUIET = 0.8  # longer than SETTLE: a file that would be handed over wrongly has had its chance


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("reply.txt", True),
        ("REPLY.TXT", True),
        (".reply.txt.swp", False),
        (".#reply.txt", False),
        ("#reply.txt#", False),
        ("~$reply.txt", False),
        ("reply.txt.part", False),
        ("reply.txt.crdownload", False),
        ("reply.txt~", False),
        ("reply.md", False),
        ("reply.tmp", False),
    ],
)
def test_is_reply_name(name: str, expected: bool) -> None:
    assert is_reply_name(name) is expected


class Recorder:
    """A stand-in turn engine: records what it was handed and, like the real one, moves it away."""

    def __init__(self, inbox: Path, *, move: bool = True, done_after: int | None = None) -> None:
        self.history = inbox.parent / "history"
        self.history.mkdir(exist_ok=True)
        self.move = move
        self.done_after = done_after
        self.handed: list[tuple[str, str]] = []
        self._changed = threading.Condition()

    def __call__(self, path: Path) -> bool:
        content = path.read_text(encoding="utf-8")
        if self.move:
            shutil.move(path, self.history / f"{len(self.handed):03d}_{path.name}")
        with self._changed:
            self.handed.append((path.name, content))
            self._changed.notify_all()
            return self.done_after is not None and len(self.handed) >= self.done_after

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.handed]

    def wait_for(self, count: int, timeout: float = 5.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.handed) >= count, timeout)


def watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if type(t).__module__.startswith("watchdog.")]


class Handing:
    """A watcher and what it hands each ready reply to, as the session loop uses them."""

    def __init__(self, watcher: InboxWatcher, handle: Callable[[Path], bool]) -> None:
        self.watcher = watcher
        self.handle = handle

    def run(self, stop: threading.Event) -> None:
        """Hand over replies until ``handle`` returns True or ``stop`` is set."""
        with self.watcher:
            while (path := self.watcher.next_ready(stop)) is not None:
                if self.handle(path):
                    return


class Running:
    """``Handing.run(stop)`` on a thread; remembers what it raised."""

    def __init__(self, handing: Handing) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(handing,), daemon=True)

    def _run(self, handing: Handing) -> None:
        try:
            handing.run(self.stop)
        except BaseException as exc:
            self.error = exc

    def start(self) -> None:
        self.thread.start()
        # An emitter thread starts only after its watch is in place, so files written after this
        # point are seen by the observer, not only by the initial scan.
        deadline = time.monotonic() + 5
        while self.thread.is_alive() and time.monotonic() < deadline:
            if any(type(t).__name__.endswith("Emitter") for t in watchdog_threads()):
                return
            time.sleep(0.005)

    def join(self, timeout: float = 5.0) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "watcher.run did not return"


@contextmanager
def running(handing: Handing) -> Iterator[Running]:
    """Run the watcher for the body of a with-block, then stop it and check it ended cleanly."""
    runner = Running(handing)
    runner.start()
    try:
        yield runner
    finally:
        runner.stop.set()
        runner.join()
    assert runner.error is None
    assert watchdog_threads() == []


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    return folder


def make_watcher(inbox: Path, handle: Callable[[Path], bool], **options: object) -> Handing:
    options.setdefault("settle", SETTLE)
    options.setdefault("rescan_interval", 0.2)
    return Handing(InboxWatcher(inbox, **options), handle)  # type: ignore[arg-type]


def write_with_mtime(path: Path, text: str, mtime: float) -> None:
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_pending_lists_replies_oldest_first_and_ties_by_name(inbox: Path) -> None:
    write_with_mtime(inbox / "c.txt", "c", 1_000)
    write_with_mtime(inbox / "b.txt", "b", 3_000)
    write_with_mtime(inbox / "a.txt", "a", 3_000)
    write_with_mtime(inbox / "old.md", "not a reply", 10)
    write_with_mtime(inbox / ".c.txt.swp", "vim", 10)
    (inbox / "folder.txt").mkdir()
    (inbox / "empty.TXT").write_bytes(b"")
    watcher = InboxWatcher(inbox, settle=0)

    assert [p.name for p in watcher.pending()] == ["c.txt", "a.txt", "b.txt", "empty.TXT"]
    assert watcher.pending()[0] == inbox / "c.txt"


def test_pending_waits_until_the_file_has_settled(inbox: Path) -> None:
    reply = inbox / "reply.txt"
    reply.write_text("part one\n", encoding="utf-8")
    clock = ManualClock()
    watcher = InboxWatcher(inbox, settle=0.3, clock=clock)

    assert watcher.pending() == []
    clock.advance(0.29)
    assert watcher.pending() == []
    clock.advance(0.06)
    assert watcher.pending() == [reply]
    with reply.open("a", encoding="utf-8") as f:
        f.write("part two\n")
    assert watcher.pending() == []
    clock.advance(0.35)
    assert watcher.pending() == [reply]


def test_a_close_hint_counts_once_confirmed_and_only_while_nothing_was_written(
    inbox: Path,
) -> None:
    """Events fed by hand to the watcher's event handler; settle is too long to matter."""
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    clock = ManualClock()
    watcher = InboxWatcher(inbox, settle=30, clock=clock)
    events = watcher._hints

    events.dispatch(FileClosedEvent(str(reply)))
    assert watcher.pending() == []  # a write event queued behind the close may still come
    clock.advance(0.05)
    assert watcher.pending() == [reply]

    with reply.open("a", encoding="utf-8") as f:  # a write whose events were lost
        f.write("more\n")
    assert watcher.pending() == []

    events.dispatch(FileClosedEvent(str(reply)))
    events.dispatch(FileModifiedEvent(str(reply)))  # reopened and written after the close
    clock.advance(0.05)
    assert watcher.pending() == []


def test_a_barrier_made_after_a_close_hint_vouches_for_it_and_a_write_before_it_withdraws_it(
    inbox: Path,
) -> None:
    """Events fed by hand, in the order inotify would queue them; the clock never moves, so only
    a barrier can make a hint count."""
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    watcher = InboxWatcher(inbox, settle=30, clock=ManualClock())
    events = watcher._hints

    def barrier() -> FileCreatedEvent:
        events.make_barrier()  # creates and removes a real file; no observer sees it here
        return FileCreatedEvent(str(inbox / f"{events._barrier}{events._made}"))

    events.dispatch(FileClosedEvent(str(reply)))
    earlier_barrier = barrier()
    assert watcher.pending() == []
    events.dispatch(earlier_barrier)
    assert watcher.pending() == [reply]
    assert sorted(os.listdir(inbox)) == ["reply.txt"]  # the barrier file is gone at once

    own = inbox / f"{events._barrier}99"
    own.write_text("", encoding="utf-8")  # a barrier's close, handled before its removal:
    events.dispatch(FileClosedEvent(str(own)))  # no hint, so no call for another barrier
    made = events._made
    events.make_barrier()
    assert events._made == made
    own.unlink()

    events.dispatch(FileClosedEvent(str(reply)))  # a second close: a new hint
    events.dispatch(earlier_barrier)  # a barrier made before the hint says nothing of it
    assert watcher.pending() == []
    queued = barrier()
    events.dispatch(FileModifiedEvent(str(reply)))  # reopened and written: queued before it
    events.dispatch(queued)
    assert watcher.pending() == []


def test_a_hint_whose_barrier_is_lost_or_cannot_be_made_counts_after_a_wait(inbox: Path) -> None:
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    clock = ManualClock()
    lost = InboxWatcher(inbox, settle=30, clock=clock)
    lost._hints.dispatch(FileClosedEvent(str(reply)))
    lost._hints.make_barrier()  # its event never comes (an overflowed queue)
    clock.advance(0.5)
    assert lost.pending() == []
    clock.advance(0.6)
    assert lost.pending() == [reply]

    refused = InboxWatcher(inbox, settle=30, clock=clock)
    events = refused._hints
    (inbox / f"{events._barrier}1").write_text("", encoding="utf-8")  # O_EXCL fails on it
    events.dispatch(FileClosedEvent(str(reply)))
    events.make_barrier()
    clock.advance(0.05)  # past _CONFIRM: the time rule, as where no barrier is made
    assert refused.pending() == [reply]


@pytest.mark.parametrize("name", ["4913", "\u00b2", ".codingagent-barrier-1", "x-7"])
def test_only_this_watchers_own_barriers_vouch_and_no_name_breaks_the_handler(
    inbox: Path, name: str
) -> None:
    """Vim's '4913' test file, a digit int() refuses, another watcher's barrier: none counts."""
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    watcher = InboxWatcher(inbox, settle=30, clock=ManualClock())
    events = watcher._hints
    events.dispatch(FileClosedEvent(str(reply)))
    events.make_barrier()
    other = InboxWatcher(inbox, settle=30)._hints._barrier + "1"
    for each in (name, other):
        events.dispatch(FileCreatedEvent(str(inbox / each)))  # raises nothing
    assert watcher.pending() == []
    events.dispatch(FileCreatedEvent(str(inbox / f"{events._barrier}1")))
    assert watcher.pending() == [reply]


def test_a_barrier_that_could_not_be_made_leaves_the_next_hints_their_own(inbox: Path) -> None:
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    clock = ManualClock()
    watcher = InboxWatcher(inbox, settle=30, clock=clock)
    events = watcher._hints
    (inbox / f"{events._barrier}1").write_text("", encoding="utf-8")  # barrier 1 fails
    events.dispatch(FileClosedEvent(str(reply)))
    events.make_barrier()
    clock.advance(0.05)  # the time rule, for the hint whose barrier failed
    assert watcher.pending() == [reply]

    reply.write_text("head\nmore\n", encoding="utf-8")
    events.dispatch(FileClosedEvent(str(reply)))  # a new hint: barriers are made again
    events.make_barrier()
    clock.advance(0.05)
    assert watcher.pending() == []  # barrier 2 was made: its event, not the time, decides
    events.dispatch(FileCreatedEvent(str(inbox / f"{events._barrier}2")))
    assert watcher.pending() == [reply]


@pytest.mark.slow
def test_with_inotify_a_closed_reply_is_handed_over_by_the_barrier_with_the_clock_stopped(
    inbox: Path,
) -> None:
    """No time passes on the watcher's clock, so the ``_CONFIRM`` wait can never end: the reply is
    handed over only because the barrier's event came through the real observer."""
    recorder = Recorder(inbox)
    watcher = make_watcher(inbox, recorder, settle=30.0, rescan_interval=30.0, clock=ManualClock())
    if watcher.watcher.backend != "inotify":
        pytest.skip("barriers need inotify")
    with running(watcher):
        (inbox / "fast.txt").write_text("quick\n", encoding="utf-8")
        assert recorder.wait_for(1, timeout=5.0)

    assert recorder.handed == [("fast.txt", "quick\n")]
    assert not [name for name in os.listdir(inbox) if name.startswith(".")]


def test_a_move_hint_counts_for_the_destination_in_the_inbox_only(
    inbox: Path, tmp_path: Path
) -> None:
    part, reply = inbox / "reply.txt.part", inbox / "reply.txt"
    part.write_text("downloaded\n", encoding="utf-8")
    part.rename(reply)
    clock = ManualClock()
    watcher = InboxWatcher(inbox, settle=30, clock=clock)
    elsewhere = tmp_path / "reply.txt"
    elsewhere.write_text("downloaded\n", encoding="utf-8")
    os.utime(elsewhere, ns=(reply.stat().st_mtime_ns, reply.stat().st_mtime_ns))

    watcher._hints.dispatch(FileClosedEvent(str(elsewhere)))
    clock.advance(0.05)
    assert watcher.pending() == []
    watcher._hints.dispatch(FileMovedEvent(str(part), str(reply)))
    clock.advance(0.05)
    assert watcher.pending() == [reply]


def test_a_file_changed_after_the_scan_is_judged_again(inbox: Path) -> None:
    reply = inbox / "reply.txt"
    reply.write_text("head\n", encoding="utf-8")
    clock = ManualClock()
    watcher = InboxWatcher(inbox, settle=30, clock=clock)
    watcher._hints.dispatch(FileClosedEvent(str(reply)))
    clock.advance(0.05)
    assert watcher.pending() == [reply]
    with reply.open("a", encoding="utf-8") as f:
        f.write("tail\n")
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()

    # The version scanned is not handed out: the new one has not settled yet.
    assert watcher.next_ready(stop) is None
    assert watcher._ready() == []


def test_backend_names_the_observer_in_use(inbox: Path) -> None:
    assert InboxWatcher(inbox, poll=True).backend == "polling"
    if sys.platform.startswith("linux"):
        assert InboxWatcher(inbox).backend == "inotify"


@pytest.mark.slow
def test_initial_scan_hands_over_existing_files_oldest_first(inbox: Path) -> None:
    write_with_mtime(inbox / "a_newest.txt", "third", 3_000)
    write_with_mtime(inbox / "b_oldest.txt", "first", 1_000)
    write_with_mtime(inbox / "c_middle.txt", "second", 2_000)
    recorder = Recorder(inbox, done_after=3)
    runner = Running(make_watcher(inbox, recorder))

    runner.start()
    runner.join()  # returns by itself: the callback reported the session done

    assert runner.error is None
    assert recorder.handed == [
        ("b_oldest.txt", "first"),
        ("c_middle.txt", "second"),
        ("a_newest.txt", "third"),
    ]
    assert list(inbox.iterdir()) == []
    assert watchdog_threads() == []


@pytest.mark.slow
def test_a_slowly_written_file_is_handed_over_once_and_whole(inbox: Path) -> None:
    recorder = Recorder(inbox)
    with running(make_watcher(inbox, recorder)):
        with (inbox / "slow.txt").open("w", encoding="utf-8") as f:
            f.write("[MESSAGE]first half\n")
            f.flush()
            time.sleep(0.3)
            f.write("second half[/MESSAGE]\n")
        assert recorder.wait_for(1)
        time.sleep(QUIET)

    assert recorder.handed == [("slow.txt", "[MESSAGE]first half\nsecond half[/MESSAGE]\n")]


@pytest.mark.slow
def test_a_download_renamed_from_part_is_handed_over_but_the_part_file_never(inbox: Path) -> None:
    recorder = Recorder(inbox)
    part = inbox / "reply.txt.part"
    with running(make_watcher(inbox, recorder)):
        part.write_text("downloaded reply\n", encoding="utf-8")
        time.sleep(QUIET)
        assert recorder.handed == []
        part.rename(inbox / "reply.txt")
        assert recorder.wait_for(1)
        time.sleep(QUIET)

    assert recorder.handed == [("reply.txt", "downloaded reply\n")]


TEMP_NAMES = [
    ".reply.txt.swp",
    ".#reply.txt",
    "#reply.txt#",
    "~$reply.txt",
    "reply.txt.crdownload",
    "reply.txt~",
    "reply.md",
    "reply.tmp",
]


@pytest.mark.slow
def test_temp_files_and_other_suffixes_are_never_handed_over(inbox: Path) -> None:
    (inbox / "existing.md").write_text("there before the start\n", encoding="utf-8")
    recorder = Recorder(inbox, done_after=1)
    runner = Running(make_watcher(inbox, recorder))
    runner.start()
    for name in TEMP_NAMES:
        (inbox / name).write_text("not a reply\n", encoding="utf-8")
    time.sleep(QUIET)
    (inbox / "marker.txt").write_text("a reply\n", encoding="utf-8")
    runner.join()

    assert runner.error is None
    assert recorder.names == ["marker.txt"]
    assert sorted(p.name for p in inbox.iterdir()) == sorted([*TEMP_NAMES, "existing.md"])


@pytest.mark.slow
@pytest.mark.parametrize("arrival", ["written", "moved in"])
def test_a_closed_or_moved_in_reply_is_handed_over_without_waiting_to_settle(
    inbox: Path, tmp_path: Path, arrival: str
) -> None:
    recorder = Recorder(inbox)
    watcher = make_watcher(inbox, recorder, settle=30.0, rescan_interval=30.0)
    if watcher.watcher.backend != "inotify":
        pytest.skip("close-write events need inotify")
    with running(watcher):
        started = time.monotonic()
        if arrival == "written":
            (inbox / "fast.txt").write_text("quick\n", encoding="utf-8")
        else:
            outside = tmp_path / "fast.txt"
            outside.write_text("quick\n", encoding="utf-8")
            outside.rename(inbox / "fast.txt")
        assert recorder.wait_for(1, timeout=2.0)
        latency = time.monotonic() - started

    assert recorder.handed == [("fast.txt", "quick\n")]
    assert latency < 0.25


@pytest.mark.slow
@pytest.mark.parametrize("loop", ["idle", "busy"])
def test_a_file_reopened_right_after_its_close_waits_for_its_next_close(
    inbox: Path, loop: str
) -> None:
    """Like ``echo head > r.txt; slow-writer >> r.txt``: the first close is not the end."""
    busy = threading.Event()
    release = threading.Event()
    recorder = Recorder(inbox)

    def handle(path: Path) -> bool:
        if path.name == "first.txt":
            busy.set()
            release.wait(5)  # the loop stays in here while second.txt is closed and reopened
        return recorder(path)

    watcher = make_watcher(inbox, handle)
    if watcher.watcher.backend != "inotify":
        pytest.skip("close-write events need inotify")
    second = inbox / "second.txt"
    with running(watcher):
        if loop == "busy":
            (inbox / "first.txt").write_text("first\n", encoding="utf-8")
            assert busy.wait(5)
        else:
            release.set()
        second.write_text("head\n", encoding="utf-8")
        with second.open("a", encoding="utf-8") as f:
            f.write("middle\n")
            f.flush()
            release.set()
            time.sleep(0.3)
            f.write("tail\n")
        assert recorder.wait_for(2 if loop == "busy" else 1)
        time.sleep(QUIET)

    assert recorder.handed[-1:] == [("second.txt", "head\nmiddle\ntail\n")]
    assert recorder.names == (["first.txt"] if loop == "busy" else []) + ["second.txt"]


@pytest.mark.slow
def test_stop_event_ends_run_promptly(inbox: Path) -> None:
    runner = Running(make_watcher(inbox, Recorder(inbox), rescan_interval=30.0))
    runner.start()
    time.sleep(0.1)
    started = time.monotonic()
    runner.stop.set()
    runner.join(timeout=2.0)

    assert time.monotonic() - started < 2.0
    assert runner.error is None
    assert watchdog_threads() == []


@pytest.mark.slow
def test_polling_observer_hands_over_replies(inbox: Path) -> None:
    recorder = Recorder(inbox, done_after=2)
    watcher = make_watcher(inbox, recorder, poll=True, settle=0.2)
    assert watcher.watcher.backend == "polling"
    write_with_mtime(inbox / "before.txt", "there before the start\n", 1_000)
    runner = Running(watcher)
    runner.start()
    (inbox / "after.txt").write_text("written while polling\n", encoding="utf-8")
    runner.join()

    assert runner.error is None
    assert recorder.handed == [
        ("before.txt", "there before the start\n"),
        ("after.txt", "written while polling\n"),
    ]


@pytest.mark.slow
def test_a_reply_left_in_the_inbox_is_not_handed_again_until_it_changes(inbox: Path) -> None:
    recorder = Recorder(inbox, move=False)
    reply = inbox / "reply.txt"
    with running(make_watcher(inbox, recorder)):
        reply.write_text("version one\n", encoding="utf-8")
        assert recorder.wait_for(1)
        time.sleep(QUIET)
        assert recorder.names == ["reply.txt"]
        reply.write_text("version two, saved again\n", encoding="utf-8")
        assert recorder.wait_for(2)
        time.sleep(QUIET)

    assert recorder.handed == [
        ("reply.txt", "version one\n"),
        ("reply.txt", "version two, saved again\n"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("error", [RuntimeError("bug in the turn engine"), KeyboardInterrupt()])
def test_an_exception_from_handle_propagates_and_stops_the_observer(
    inbox: Path, error: BaseException
) -> None:
    def handle(path: Path) -> bool:
        raise error

    runner = Running(make_watcher(inbox, handle))
    runner.start()
    (inbox / "reply.txt").write_text("anything\n", encoding="utf-8")
    runner.join()

    assert runner.error is error
    assert watchdog_threads() == []


def test_a_missing_inbox_raises_and_leaves_no_observer_thread(tmp_path: Path) -> None:
    watcher = InboxWatcher(tmp_path / "missing")

    with pytest.raises(FileNotFoundError), watcher:
        pass
    assert watchdog_threads() == []


@pytest.mark.slow
def test_leaving_the_watch_never_waits_long_on_a_stuck_observer_thread(inbox: Path) -> None:
    """Ctrl-C must end the agent even if a watchdog thread hangs: here the event handler
    blocks, holding the lock watchdog's stop() needs."""
    release = threading.Event()
    entered = threading.Event()
    watcher = InboxWatcher(inbox)

    def stuck(event: object) -> None:
        entered.set()
        release.wait(30)

    watcher._hints.dispatch = stuck  # type: ignore[method-assign]
    try:
        with watcher:
            (inbox / "reply.txt").write_text("anything\n", encoding="utf-8")
            assert entered.wait(5)
            started = time.monotonic()
        assert time.monotonic() - started < 5  # the with-block was left (bounded at 2 s)
    finally:
        release.set()
