"""Copied text is bound to its session by its Session line (docs/admission.md): text that names
no session is a candidate, applied only on the user's key on a terminal, never by two sessions,
and never without a terminal. Real X clipboard (Xvfb, xclip), real processes, a real pty.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from terminal import Terminal
from test_clipboard import (  # noqa: F401  (x_display is a fixture)
    copy_until_read,
    needs_x,
    running_agent,
    wait_for,
    x_display,
)
from xserver import clipboard_text, copy

from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Prompt
from codingagent.sources.clipboard import SOURCE, ClipboardSource, claim, what_it_would_do
from codingagent.sources.inbox import InboxSource

RM_BUILD = "I'll clean up.\n\n[RUN_COMMAND]\nrm -rf build\necho gone\n[/RUN_COMMAND]\n"


def unique() -> str:
    """A line that makes a copied text a candidate never seen before: a claim lasts 10 minutes,
    so a text another test (or an earlier run) copied would not be offered again."""
    return f"(run {uuid.uuid4().hex})"


ALLOW = ("--commands", "allow", "--root")
CREATE = '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n'


def session_of(root: Path) -> str:
    return next((root / "sessions").glob("*.json")).stem


def test_what_a_candidate_would_do_names_commands_paths_and_first_command_lines():
    text = f'{RM_BUILD}{CREATE}[READ_FILE path="b.py"]\n[DONE]\nfinished\n'
    assert what_it_would_do(text) == (
        "  RUN_COMMAND: rm -rf build\n  CREATE_FILE a.txt\n  READ_FILE b.py\n  DONE"
    )


def test_a_candidate_is_claimed_by_one_session_only(tmp_path):
    assert claim(CREATE, "aaaaaaaa", tmp_path) is None
    assert claim(CREATE, "aaaaaaaa", tmp_path) is None  # its own claim, asked again
    assert claim(CREATE, "bbbbbbbb", tmp_path) == "aaaaaaaa"
    assert claim(CREATE + "more\n", "bbbbbbbb", tmp_path) is None


@pytest.mark.slow  # a real X clipboard, read on its poll
@needs_x
@pytest.mark.usefixtures("x_display")
def test_a_copied_run_command_naming_no_session_never_runs_without_a_terminal(tmp_path):
    (tmp_path / "workspace" / "build").mkdir(parents=True)
    (tmp_path / "workspace" / "build" / "x").write_text("kept")
    command = ["start", "t", "--clipboard", "--commands", "allow"]
    with running_agent(tmp_path, *command) as agent:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "prompt 1 on the clipboard", agent)
        session = session_of(tmp_path)
        copy_until_read(f"{RM_BUILD}\n{unique()}\n")
        copy(f"Session: {session} Sequence: 1\n[DONE]\nnothing ran\n[/DONE]\n")
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert (tmp_path / "workspace" / "build" / "x").read_text() == "kept"
    assert (
        "Copied text that names no session was not applied; it would do:\n"
        "  RUN_COMMAND: rm -rf build\n"
        f"To apply it, have it start with 'Session: {session} Sequence: 1' (the prompt asks the "
        "LLM for that line) and copy it again, or save it into inbox/"
    ) in err
    assert "Session complete: nothing ran" in err
    assert err.count(f"Reply {SOURCE} received") == 1


@pytest.mark.slow  # a real X clipboard, read on its poll
@needs_x
@pytest.mark.usefixtures("x_display")
def test_on_a_terminal_a_candidate_is_shown_and_applied_on_y_only(tmp_path):
    (tmp_path / "workspace" / "build").mkdir(parents=True)
    (tmp_path / "workspace" / "build" / "x").write_text("kept")
    terminal = Terminal("start", "t", "--clipboard", *ALLOW, str(tmp_path))
    seen, agent = terminal.seen, terminal.process

    def press(key: bytes) -> None:
        """Press ``key`` once the question reads it: the terminal is put in raw mode (which
        drops what was typed before) after the question is printed, so press until it is
        echoed back."""
        echoed = b"to ignore it: " + key
        before = seen.count(echoed)
        for _ in range(100):
            terminal.send(key)
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline and seen.count(echoed) == before:
                time.sleep(0.05)
            if seen.count(echoed) > before:
                return
        raise AssertionError(f"the key {key!r} was never read")

    with terminal:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "prompt 1 on the clipboard", agent)
        session = session_of(tmp_path)
        copy(f"{RM_BUILD}\n{unique()}\n")  # not a candidate claimed in a past run
        wait_for(lambda: seen.count(b"Apply it?") == 1, "the first question", agent)
        press(b"n")
        copy(f"{CREATE}\n{unique()}\n")
        wait_for(lambda: seen.count(b"Apply it?") == 2, "the second question", agent)
        press(b"y")
        wait_for(lambda: "Sequence: 2\n" in clipboard_text(), "prompt 2 on the clipboard", agent)
        copy(f"Session: {session} Sequence: 2\n[DONE]\ncreated a.txt\n[/DONE]\n")
        assert terminal.wait() == 0
    text = terminal.text()
    assert "Copied text that names no session would do:\n  RUN_COMMAND: rm -rf build\n" in text
    assert "Copied text that names no session would do:\n  CREATE_FILE a.txt\n" in text
    assert (tmp_path / "workspace" / "build" / "x").read_text() == "kept"
    assert (tmp_path / "workspace" / "a.txt").read_text() == "A\n"
    assert "Session complete: created a.txt" in text


@needs_x
@pytest.mark.usefixtures("x_display")
def test_two_sessions_watching_one_clipboard_never_both_apply_a_candidate(tmp_path):
    stop = threading.Event()
    got: dict[str, object] = {}
    notes: list[str] = []
    sources, prompts = [], []
    for name in ("one", "two"):
        store = SessionStore(tmp_path / name)
        state, outbox = start_session(store, "t")
        prompts.append(Prompt(state.session_id, 1, outbox, outbox.read_text()))
        inbox = InboxSource(store.inbox, 10**6)
        source = ClipboardSource(
            inbox, interval=0.05, confirm=lambda what: True, note=notes.append, claims=tmp_path
        )
        sources.append(source.__enter__())

    def watch(source: ClipboardSource, prompt: Prompt) -> None:
        got[prompt.session_id] = source.next_reply(prompt, stop)

    threads = [
        threading.Thread(target=watch, args=pair, daemon=True)
        for pair in zip(sources, prompts, strict=True)
    ]
    for thread in threads:
        thread.start()
    copy(f"{CREATE}\n{unique()}\n")
    wait_for(lambda: len(got) == 1 and len(notes) == 1, "one taker and one note")
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    for source in sources:
        source.__exit__(None, None, None)
    taken = [sid for sid, reply in got.items() if reply is not None]
    (taker,) = taken
    assert notes == [f"Copied text that names no session was taken by session {taker}"]


@pytest.mark.slow  # a real X clipboard, read on its poll
@needs_x
@pytest.mark.usefixtures("x_display")
def test_resume_takes_a_reply_copied_while_no_session_watched(tmp_path):
    assert (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "codingagent",
                "start",
                "t",
                "--no-watch",
                "--no-copy",
                "--root",
                str(tmp_path),
            ],
            capture_output=True,
        ).returncode
        == 0
    )
    session = session_of(tmp_path)
    copy(f"Session: {session} Sequence: 1\n[DONE]\nanswered while away\n[/DONE]\n")
    with running_agent(tmp_path, "resume", "--clipboard") as agent:
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert f"Reply {SOURCE} received" in err
    assert "Session complete: answered while away" in err
