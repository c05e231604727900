"""The clipboard loop on a real X clipboard: Xvfb, and xclip to copy as a chat's Copy button does.

What is (and is not) a reply is a pure function, tested on its own; the loop is driven for real,
as ``python -m codingagent start ... --clipboard`` in a subprocess. To know the agent has looked
at a text that must change nothing, the test copies it with ``xclip -loops 1``, which serves one
read and exits: once it has exited, the agent has read the text.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import xserver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invoking import run
from sampling import examples
from terminal import Terminal
from xserver import clipboard_text, copy, xclip_servers

from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Prompt
from codingagent.sources import pasteboard as clipboard
from codingagent.sources.clipboard import SOURCE, ClipboardSource, is_reply
from codingagent.sources.clipboard_events import Polling, X11Changes, open_changes
from codingagent.sources.inbox import InboxSource

needs_x = pytest.mark.skipif(not xserver.available(), reason=xserver.MISSING)

SESSION = "1a2b3c4d"
PROMPT = Prompt(SESSION, 3, Path("outbox/1a2b3c4d_seq0003.txt"), "=== HEADER ===\n...")
CREATE = '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n'

# People copy these while they work; none of them is a reply to PROMPT.
NOT_REPLIES = {
    "code with brackets": "values = [1, 2, 3]\n[x * 2 for x in values]\nprint(values[0])\n",
    "a markdown link": "[the docs](https://example.org) say so\n",
    "[DONE] in a sentence": "Once the tests pass, the model sends [DONE] and we are finished.\n",
    "[DONE] opening a sentence": "[DONE] is the tag that ends a session.\n",
    "a tag that does not read": "[READ_FILE]\n",
    "another session's reply": f"Session: deadbeef Sequence: 3\n{CREATE}",
    "a stale reply": f"Session: {SESSION} Sequence: 2\n{CREATE}",
    "a stale reply without session": f"Sequence: 2\n{CREATE}",
    "a prompt of ours": f"=== HEADER ===\nSession: {SESSION}\nSequence: 3\n\n=== PROTOCOL ===\n"
    f"{CREATE}",
    "blank": "  \n\n",
}


# --- what is a reply -----------------------------------------------------------------------


@pytest.mark.parametrize("text", NOT_REPLIES.values(), ids=NOT_REPLIES.keys())
def test_what_people_copy_while_they_work_is_not_a_reply(text):
    assert not is_reply(text, PROMPT)


@pytest.mark.parametrize(
    "text",
    [
        f"Session: {SESSION} Sequence: 3\nNothing to do yet; I need to think.\n",
        f"**Session:** `{SESSION}` **Sequence:** 3\n\n{CREATE}",
        f"Sequence: 3\n{CREATE}",
        f"I'll add the file.\n\n{CREATE}",
        "All done.\n\n**[DONE]**\nAdded a.txt\n",
        "```\n[RUN_COMMAND]\npytest -q\n[/RUN_COMMAND]\n```\n",
    ],
)
def test_a_reply_echoes_the_prompt_or_holds_a_command_line(text):
    assert is_reply(text, PROMPT)
    assert is_reply(text.replace("\n", "\r\n"), PROMPT)


@pytest.fixture(scope="module")
def real_prompt(tmp_path_factory) -> Prompt:
    root = tmp_path_factory.mktemp("prompt")
    state, outbox = start_session(SessionStore(root), "Create hello.py and run it")
    return Prompt(state.session_id, 1, outbox, outbox.read_text())


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_piece_of_our_prompt_is_a_reply(real_prompt, data):
    text = real_prompt.text
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    piece = data.draw(st.sampled_from([text[start:end], text[start:end].replace("\n", "\r\n")]))
    assert not is_reply(piece, real_prompt, [text])


@settings(max_examples=examples(300))
@given(
    prose=st.text(st.characters(blacklist_characters="[\\"), max_size=300),
    number=st.integers(1, 10**6),
)
def test_text_without_tags_is_a_reply_only_with_the_current_echo(prose, number):
    echo = f"Session: {SESSION} Sequence: {number}\n"
    assert is_reply(echo + prose, PROMPT) == (number == PROMPT.sequence)
    assert not is_reply(prose.replace("Session", "").replace("Sequence", ""), PROMPT)


@settings(max_examples=examples(200))
@given(
    before=st.text(st.characters(blacklist_characters="[\\*_`\r\n\x0b\x0c\x1c\x1d\x1e\x85\ufeff"))
    .map(str.strip)
    .filter(bool),
    session=st.sampled_from([SESSION, "deadbeef", None]),
    sequence=st.sampled_from([1, 2, 3, 4, None]),
)
def test_a_command_counts_unless_the_echo_names_another_prompt(before, session, sequence):
    echo = (f"Session: {session} " if session else "") + (
        f"Sequence: {sequence}" if sequence else ""
    )
    other = session not in (None, SESSION) or sequence not in (None, 3)
    reply = f"{echo}\n{CREATE}"
    assert is_reply(reply, PROMPT) == (not other)
    assert not is_reply(f"{before} {CREATE}", PROMPT), "a tag inside a line is not a command"


# --- the X clipboard -----------------------------------------------------------------------


@contextmanager
def running_agent(root: Path, *args: str) -> Iterator[subprocess.Popen]:
    """``python -m codingagent ARGS --root ROOT`` run in ROOT (not in the project pytest runs
    in), output captured; killed on the way out if it still runs."""
    root.mkdir(parents=True, exist_ok=True)
    agent = subprocess.Popen(
        [sys.executable, "-m", "codingagent", *args, "--root", str(root)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield agent
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()


def wait_for(
    predicate, what: str, agent: subprocess.Popen | None = None, timeout: float = 20.0
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if agent is not None and agent.poll() is not None:
            raise AssertionError(f"the agent ended ({agent.communicate()}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def x_display(monkeypatch) -> Iterator[str]:
    """A private X server as DISPLAY, for this test and the processes it starts."""
    with xserver.xvfb() as display:
        monkeypatch.setenv("DISPLAY", display)
        for name in ("WAYLAND_DISPLAY", "SSH_TTY"):
            monkeypatch.delenv(name, raising=False)
        forget_clipboard_tool(monkeypatch)
        yield display
    wait_for(lambda: not xclip_servers(display), "the xclip processes to end with the X server")


def forget_clipboard_tool(monkeypatch) -> None:
    """The choice the clipboard loop made (read through XWayland) is kept per process: make
    it choose again in this environment."""
    monkeypatch.setattr(clipboard, "_prefer_x11", False)


@pytest.fixture
def wayland_socket(tmp_path, monkeypatch) -> Iterator[str]:
    """A socket where a Wayland compositor's would be (XDG_RUNTIME_DIR), named by
    WAYLAND_DISPLAY; nothing answers on it."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(runtime / "wayland-9"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-9")
    yield "wayland-9"
    server.close()


def copy_until_read(text: str) -> None:
    """Copy ``text`` and return once something (the agent) has read it."""
    copy(text, reads=1)


@pytest.mark.slow  # a dozen copies, each read on the loop's 0.5 s poll
@needs_x
def test_the_clipboard_loop_end_to_end(tmp_path, x_display):
    """Start with --clipboard, copy replies (and things that are not replies) in turn."""
    command = ["start", "Write hi.txt", "--clipboard", "--commands", "allow"]
    with running_agent(tmp_path, *command) as agent:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "prompt 1 on the clipboard", agent)
        session = next((tmp_path / "sessions").glob("*.json")).stem
        prompt_1 = (tmp_path / "outbox" / f"{session}_seq0001.txt").read_text()
        assert clipboard_text() == prompt_1
        first = (
            f"Session: {session} Sequence: 1\nI'll write the file and look at it.\n\n"
            '[CREATE_FILE path="hi.txt"]\nhello\n[/CREATE_FILE]\n[RUN_COMMAND]\ncat hi.txt\n'
            "[/RUN_COMMAND]\n"
        )
        ignored = [
            prompt_1,  # the prompt itself, as the agent put it there
            *NOT_REPLIES.values(),
            f"Session: deadbeef Sequence: 1\n{CREATE}",  # for another session
            prompt_1.replace("\n", "\r\n"),  # our prompt, as a Windows chat copies it
            prompt_1[prompt_1.index("[CREATE_FILE") :][:300],  # a piece of it, with tags
            first.replace("Sequence: 1", "Sequence: 7"),  # for a prompt not yet written
        ]
        for text in ignored:
            copy_until_read(text)
        assert not (tmp_path / "workspace" / "hi.txt").exists()

        copy(first)  # turn 1
        wait_for(lambda: "Sequence: 2\n" in clipboard_text(), "prompt 2 on the clipboard")
        assert (tmp_path / "workspace" / "hi.txt").read_text() == "hello\n"
        prompt_2 = clipboard_text()
        assert prompt_2 == (tmp_path / "outbox" / f"{session}_seq0002.txt").read_text()
        assert "hello" in prompt_2.split("=== CONTEXT ===")[1], "the command's output is shown"

        copy_until_read(first)  # stale now: its echo names prompt 1
        copy_until_read(prompt_1)  # an earlier prompt of ours
        loose = '[CREATE_FILE path="two.txt"]\n2\n[/CREATE_FILE]\n'  # names no session
        copy_until_read(loose)  # a candidate: without a terminal, not applied (said so)
        assert not (tmp_path / "workspace" / "two.txt").exists()
        second = f"Session: {session}\n{loose}"  # bound by its Session line
        copy(second)  # turn 2
        wait_for(lambda: "Sequence: 3\n" in clipboard_text(), "prompt 3 on the clipboard")
        copy_until_read(second)  # a reply copied twice is applied once

        third = '[CREATE_FILE path="three.txt"]\n3\n[/CREATE_FILE]\n'
        (tmp_path / "inbox" / "third.txt").write_text(third)  # turn 3 comes through inbox/
        wait_for(lambda: "Sequence: 4\n" in clipboard_text(), "prompt 4 on the clipboard")
        copy_until_read(third)  # applied already, from the inbox

        copy(f"Session: {session} Sequence: 4\n[DONE]\nWrote hi.txt, two.txt, three.txt\n")
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert err.count(f"Reply {SOURCE} received") == 3
    assert "Reply third.txt received" in err
    for n in (1, 2, 3, 4):
        assert f"Prompt {n} is on the clipboard: paste it into the chat\n" in err
    assert "Next prompt" not in err and "Copied to" not in err, "one line says it"
    assert (
        "Watching the clipboard (xclip: told of each copy by X11's XFixes events, no polling) "
        "for the LLM's reply; also watching"
    ) in err
    assert "Session complete: Wrote hi.txt, two.txt, three.txt" in err
    assert "Copied text that names no session was not applied" in err
    assert "identical" not in err and "note" not in err
    assert err.count("not applied") == 1
    turns = sorted(p.name for p in (tmp_path / "sessions" / session / "turns").iterdir())
    assert turns == ["0001", "0002", "0003", "0004"]
    history = tmp_path / "sessions" / session / "turns"
    assert (history / "0001" / "reply.txt").read_text() == first
    assert (history / "0002" / "reply.txt").read_text() == second
    assert not (tmp_path / "sessions" / session / "refused").exists()
    assert len(xclip_servers(x_display)) <= 1, "each copy ends the xclip of the one before"


@pytest.mark.slow
@needs_x
def test_resume_with_the_clipboard_takes_the_next_reply(tmp_path, x_display):
    assert run(tmp_path, "start", "t", "--no-watch", "--no-copy").exit_code == 0
    assert clipboard_text() == ""
    with running_agent(tmp_path, "resume", "--clipboard") as agent:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "the prompt on the clipboard")
        session = next((tmp_path / "sessions").glob("*.json")).stem
        copy(f"Session: {session}\nDone already.\n\n[DONE]\nnothing to do\n[/DONE]\n")
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert "Session complete: nothing to do" in err


@pytest.mark.slow
@needs_x
def test_replies_copied_and_saved_at_once_are_both_applied_in_turn(tmp_path, x_display):
    """Both sources at once: one reply is handed over, the other is judged for the next prompt
    and handed over then; neither is lost or handed twice."""
    store = SessionStore(tmp_path)
    state, outbox = start_session(store, "t")
    saved = '[CREATE_FILE path="saved.txt"]\nS\n[/CREATE_FILE]\n'

    def read() -> tuple[str | None, str | None]:
        """The real clipboard, read once the other reply is in the inbox too."""
        (store.inbox / "saved.txt").write_text(saved)
        time.sleep(0.5)
        return clipboard.paste()

    copy(f"Session: {state.session_id}\n{CREATE}")  # bound: applied without a question
    stop = threading.Event()
    with ClipboardSource(InboxSource(store.inbox, 10**6), interval=0.05, read=read) as source:
        prompts = [
            Prompt(state.session_id, n, outbox, f"=== HEADER ===\n(prompt {n})") for n in (1, 2)
        ]
        replies = [source.next_reply(prompt, stop) for prompt in prompts]
        copied = f"Session: {state.session_id}\n{CREATE}"
        assert sorted(r.data.decode() for r in replies if r is not None) == sorted([copied, saved])
        assert {r.source for r in replies if r is not None} == {SOURCE, "saved.txt"}
        stop.set()
        assert source.next_reply(prompts[1], stop) is None


@needs_x
def test_doctor_and_copy_name_the_clipboard_tool(tmp_path, x_display):
    assert clipboard.backend() == "xclip"
    doctor = run(tmp_path, "doctor").stdout.splitlines()
    assert any(
        line.split()[0] == "clipboard" and line.endswith("  xclip (copies prompts, reads replies)")
        for line in doctor
    )
    assert clipboard.copy("copied by the agent") is None
    # xclip returns once its server process is forked; it owns the selection a moment later.
    wait_for(lambda: clipboard_text() == "copied by the agent", "the copy on the clipboard")
    assert clipboard.paste() == ("copied by the agent", None)


@needs_x
def test_the_xclip_left_serving_a_prompt_does_not_hold_our_output_open(tmp_path, x_display):
    """xclip stays behind to serve the copy; a pipe reading our output still ends with us."""
    assert run(tmp_path, "start", "t", "--no-watch", "--no-copy").exit_code == 0
    shown = subprocess.run(
        [sys.executable, "-m", "codingagent", "show", "--copy", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0 and "Copied to the clipboard." in shown.stderr
    assert clipboard_text() == shown.stdout != ""
    assert xclip_servers(x_display), "the copy is still being served"


@pytest.fixture
def no_display(monkeypatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SSH_TTY"):
        monkeypatch.delenv(name, raising=False)
    forget_clipboard_tool(monkeypatch)


def test_without_a_display_the_clipboard_loop_names_the_display(tmp_path, no_display):
    if sys.platform != "linux":
        pytest.skip("a display-less Linux is what this test makes")
    assert shutil.which("xclip"), "the tool is there: the cause is the display"
    result = run(tmp_path, "start", "t", "--clipboard")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: --clipboard (clipboard_watch) cannot watch the clipboard here: no display: "
        "neither DISPLAY nor WAYLAND_DISPLAY is set"
    )
    assert "run codingagent in a terminal of your desktop session" in result.stderr
    assert not (tmp_path / "sessions").exists(), "no session is started"
    assert run(tmp_path, "start", "t", "--no-watch").exit_code == 0
    resumed = run(tmp_path, "resume", "--clipboard")
    assert resumed.exit_code == 1 and "no display: neither DISPLAY" in resumed.stderr
    assert "Traceback" not in result.output + resumed.output
    assert clipboard.backend() is None
    doctor = " ".join(run(tmp_path, "doctor").stdout.split())
    assert "clipboard no display: neither DISPLAY nor WAYLAND_DISPLAY is set" in doctor


@pytest.mark.skipif(sys.platform != "linux", reason="names Linux's clipboard tools")
@pytest.mark.parametrize(
    ("environment", "cause"),
    [
        ({"DISPLAY": ":97"}, "the X display ':97' does not answer"),
        ({"WAYLAND_DISPLAY": "wayland-77"}, "WAYLAND_DISPLAY is 'wayland-77' but there is no"),
        ({"DISPLAY": ":97", "PATH": "/nonexistent"}, "neither xclip nor xsel is installed"),
    ],
)
def test_each_cause_of_no_clipboard_is_named_with_its_fix(
    tmp_path, no_display, monkeypatch, environment, cause
):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    tool, why = clipboard.tool()
    assert tool is None and why is not None and cause in why
    assert clipboard.copy("x") == why and clipboard.paste() == (None, why)


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run codingagent with its output on a pseudo-terminal, as over ssh; its exit code and what
    the terminal received."""
    with Terminal(*args, stdin=subprocess.DEVNULL, env=env) as terminal:
        code = terminal.wait()
    return code, terminal.seen.decode(errors="replace")


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.skipif(sys.platform != "linux", reason="a display-less Linux is what this test makes")
def test_over_ssh_without_a_clipboard_prompts_are_copied_with_osc_52(tmp_path, no_display):
    assert run(tmp_path, "start", "t", "--no-watch").exit_code == 0
    (outbox,) = (tmp_path / "outbox").glob("*.txt")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env |= {"SSH_TTY": "/dev/pts/9", "TERM": "xterm"}

    code, shown = on_a_terminal(["show", "--copy", "--root", str(tmp_path)], env)
    assert code == 0
    assert clipboard.osc52_sequence(outbox.read_text()) in shown
    assert "Copied to the clipboard." in shown

    code, shown = on_a_terminal(["start", "t", "--clipboard", "--root", str(tmp_path)], env)
    assert code == 1
    assert "Over SSH the prompts are still copied (OSC 52), but a reply cannot be read" in shown

    code, shown = on_a_terminal(["doctor", "--root", str(tmp_path)], env)
    shown = " ".join(shown.split())  # doctor wraps long lines to the terminal
    assert "OSC 52 over SSH: prompts are copied through your terminal; replies cannot" in shown

    without_ssh = {k: v for k, v in env.items() if k != "SSH_TTY"}
    code, shown = on_a_terminal(["show", "--copy", "--root", str(tmp_path)], without_ssh)
    assert "\x1b]52" not in shown and "Not copied: no display: neither DISPLAY" in shown


@pytest.mark.slow
@needs_x
def test_ctrl_c_stops_the_clipboard_loop(tmp_path, x_display):
    with running_agent(tmp_path, "start", "t", "--clipboard") as agent:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "the prompt on the clipboard", agent)
        agent.send_signal(signal.SIGINT)
        _, err = agent.communicate(timeout=30)
    assert agent.returncode == 130, err
    assert "Stopped. Continue later with: codingagent resume" in err


@needs_x
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_clipboard_benchmark_prints_latency_and_idle_cpu():
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "clipboard.py"
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"], capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert table[0] == "| measure | median | target | met |"
    assert "| reply-to-next-prompt latency, clipboard loop | " in done.stdout
    assert "| idle CPU, clipboard loop (agent + xclip) | " in done.stdout
    assert all(row.count(" | ") == 3 for row in table)


needs_wl = pytest.mark.skipif(
    shutil.which("wl-copy") is None, reason="needs wl-clipboard (apt-get install wl-clipboard)"
)


@pytest.mark.slow
@needs_x
@needs_wl
def test_on_wayland_with_xwayland_the_loop_reads_through_x11(
    tmp_path, x_display, wayland_socket, monkeypatch
):
    """wl-paste may take the focus to read; xclip reads XWayland's clipboard without it."""
    forget_clipboard_tool(monkeypatch)
    assert clipboard.backend() == "wl-clipboard", "pyperclip's own choice on Wayland"
    with running_agent(tmp_path, "start", "t", "--clipboard") as agent:
        wait_for(lambda: "Sequence: 1\n" in clipboard_text(), "the prompt on the clipboard", agent)
        session = next((tmp_path / "sessions").glob("*.json")).stem
        copy(f"Session: {session}\n[DONE]\nread through X11\n[/DONE]\n")
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert "Watching the clipboard (xclip: told of each copy by X11's XFixes" in err
    assert "Session complete: read through X11" in err


@needs_wl
def test_on_gnome_wayland_without_xclip_the_loop_says_what_to_install(
    tmp_path, no_display, wayland_socket, monkeypatch
):
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "ubuntu:GNOME")
    result = run(tmp_path, "start", "t", "--clipboard")
    assert result.exit_code == 1
    assert "wl-paste takes the keyboard focus each time it reads" in result.stderr
    assert "install xclip" in result.stderr
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "sway")  # wlr-data-control: wl-paste reads quietly
    forget_clipboard_tool(monkeypatch)
    from codingagent.sources.clipboard import require_clipboard

    assert require_clipboard() == "wl-clipboard"


# --- noticing a copy ----------------------------------------------------------------------


@pytest.mark.slow  # real time: a time limit, X events, a stalled stream
@needs_x
def test_x11_tells_of_each_copy_and_nothing_else(x_display):
    changes = open_changes("xclip")
    try:
        assert isinstance(changes, X11Changes)
        assert changes.description == "told of each copy by X11's XFixes events, no polling"
        # Idle: each wait ends after a slice with nothing to read (no xclip, no poll).
        assert [changes.wait() for _ in range(3)] == [False, False, False]
        copy("copied in the chat")
        assert any(changes.wait() for _ in range(10))
        assert clipboard.paste() == ("copied in the chat", None)
        changes.wake()  # another thread ends a wait at once
        assert changes.wait() is False
    finally:
        changes.close()


def test_where_nothing_tells_of_a_copy_the_clipboard_is_polled(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    polling = open_changes("pbcopy", interval=0.01)
    try:
        assert polling.description == "read every 0.01 s, no change notification here"
        assert any(polling.wait() for _ in range(100))
    finally:
        polling.close()


@needs_x
def test_without_xfixes_access_the_loop_polls_and_says_why(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":96")  # no X server there
    polling = open_changes("xclip")
    try:
        assert type(polling) is Polling
        assert polling.description.startswith("read every 0.5 s, no change notification: ")
    finally:
        polling.close()
