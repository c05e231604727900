"""How a reply file arrives (issue 19, cases 5 and 8): a writer that pauses with the file open,
a reply written in two closes, a reply that vanishes between the scan and the read.

A real watchdog observer watches a real inbox; the session is a real one in tmp_path.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Prompt
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.sources.inbox import FileReply, InboxSource
from codingagent.sources.writers import open_for_writing

needs_proc = pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="needs /proc")


@pytest.fixture
def store(tmp_path) -> SessionStore:
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    return store


@pytest.fixture
def sid(store) -> str:
    return start_session(store, "task")[0].session_id


def prompt(store: SessionStore, sid: str) -> Prompt:
    return Prompt(sid, 1, store.outbox_path(sid, 1), "")


class Taking:
    """``source.next_reply`` on a thread, as the session loop calls it."""

    def __init__(self, source: InboxSource, store: SessionStore, sid: str) -> None:
        self.stop = threading.Event()
        self.reply: FileReply | None = None
        self._thread = threading.Thread(target=self._take, args=(source, store, sid))
        self._thread.start()

    def _take(self, source: InboxSource, store: SessionStore, sid: str) -> None:
        self.reply = source.next_reply(prompt(store, sid), self.stop)  # type: ignore[assignment]

    def result(self, timeout: float = 20) -> FileReply | None:
        self._thread.join(timeout)
        self.stop.set()
        self._thread.join()
        return self.reply


@needs_proc
def test_open_for_writing_sees_writers_only(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("x")
    assert not open_for_writing(path)
    with open(path, "rb"):
        assert not open_for_writing(path)
    with open(path, "ab"):
        assert open_for_writing(path)
    with open(path, "r+b"):
        assert open_for_writing(path)
    assert not open_for_writing(tmp_path / "missing.txt")


@needs_proc
@pytest.mark.slow
@pytest.mark.parametrize("poll", [False, True])
def test_a_writer_pausing_with_the_file_open_is_waited_for(store, sid, poll):
    """The writer pauses three settle times with the file open: the reply is taken whole."""
    with InboxSource(store.inbox, 1_000_000, poll=poll) as source:
        taking = Taking(source, store, sid)
        with open(store.inbox / "slow.txt", "w") as f:
            f.write("[MESSAGE]\nfirst half\n")
            f.flush()
            time.sleep(1.5)  # longer than the 0.5 s settle: the old rule took it here
            assert taking.reply is None
            f.write("second half\n[/MESSAGE]\n")
        reply = taking.result()
    assert reply is not None
    assert reply.data == b"[MESSAGE]\nfirst half\nsecond half\n[/MESSAGE]\n"


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
def test_a_reply_open_for_writing_is_never_removed(store, sid):
    path = store.inbox / "r.txt"
    path.write_text("[MESSAGE]\nhi\n[/MESSAGE]\n")
    with InboxSource(store.inbox, 1_000_000) as source:
        reply = source.next_reply(prompt(store, sid), threading.Event())
        assert reply is not None
        report = apply_reply(store, sid, reply, TurnOptions(shell=Shell()))
        with open(path, "ab"):  # the writer is back, appending
            source.done_with(reply, report)
        assert path.exists()


@pytest.mark.slow
def test_a_reply_written_in_two_closes_is_applied_once_and_its_tail_never_completes(store, sid):
    """The first close makes the file a reply; the rest appended after it was read is not a
    new reply: the grown file is refused, so its DONE completes nothing."""
    path = store.inbox / "r.txt"
    first = '[EDIT_FILE path="missing.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]\n'
    path.write_text(first)
    with InboxSource(store.inbox, 1_000_000) as source:
        reply = source.next_reply(prompt(store, sid), threading.Event())
        assert reply is not None and reply.data == first.encode()
        with open(path, "a") as f:  # the second close
            f.write("[DONE]\nall done\n[/DONE]\n")
        report = apply_reply(store, sid, reply, TurnOptions(shell=Shell()))
        assert not report.outcome.results[0].success
        source.done_with(reply, report)
        grown = source.next_reply(prompt(store, sid), threading.Event())
        assert grown is not None and grown.data.endswith(b"[/DONE]\n")
        refused = apply_reply(store, sid, grown, TurnOptions(shell=Shell()))
        source.done_with(grown, refused)
    assert refused.skipped
    assert "begins with the whole reply applied in turn 1 and goes on" in refused.notes[0]
    state = store.load(sid)
    assert not state.is_complete and state.sequence_number == 2
    assert not path.exists()


@pytest.mark.slow  # real time: a time limit, a kill or a poll
def test_a_reply_that_vanishes_between_scan_and_read_is_passed_over(store, sid):
    """The file the watcher found is gone when the source reads it: the next one is taken."""
    (store.inbox / "gone.txt").write_text("[MESSAGE]\ngone\n[/MESSAGE]\n")
    os.utime(store.inbox / "gone.txt", (1000, 1000))  # the older: handed out first
    (store.inbox / "kept.txt").write_text("[MESSAGE]\nkept\n[/MESSAGE]\n")
    with InboxSource(store.inbox, 1_000_000) as source:
        watcher = source._watcher
        scan = watcher.next_ready

        def racing(stop: threading.Event) -> Path | None:
            path = scan(stop)
            if path is not None and path.name == "gone.txt":
                path.unlink()  # removed by someone else right after the scan
            return path

        watcher.next_ready = racing  # type: ignore[method-assign]
        reply = Taking(source, store, sid).result()
    assert reply is not None and reply.source == "kept.txt"
