"""The command line, as a user drives it: CliRunner for each command, real processes end to end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from invoking import run

from codingagent import __version__
from codingagent.frontends.cli import main
from codingagent.records.store import SessionStore

REPLY_1 = """\
I'll create the script, run it, and look at it.

[CREATE_FILE path="hello.py"]
print("Hello from the agent")
[/CREATE_FILE]

[RUN_COMMAND]
python3 hello.py
[/RUN_COMMAND]

[READ_FILE path="hello.py"]
"""

REPLY_DONE = """\
The script works.
[DONE]
Created hello.py, which prints a greeting.
[/DONE]
"""


def only_session(root: Path) -> str:
    (state_file,) = (root / "sessions").glob("*.json")
    return state_file.stem


def state_of(root: Path) -> dict:
    return json.loads((root / "sessions" / f"{only_session(root)}.json").read_text())


def wait_for(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def drop_reply(root: Path, name: str, text: str) -> None:
    """Save a reply the way a careful user does: write it elsewhere, then move it in."""
    tmp = root / f".{name}.partial"
    tmp.write_text(text)
    os.replace(tmp, root / "inbox" / name)


# --- one command at a time -------------------------------------------------------------


def test_start_no_watch_writes_the_first_outbox_and_state(tmp_path):
    result = run(tmp_path, "start", "Create hello.py", "--no-watch")
    assert result.exit_code == 0, result.output
    session_id = only_session(tmp_path)
    outbox = tmp_path / "outbox" / f"{session_id}_seq0001.txt"
    text = outbox.read_text()
    assert text.startswith(f"=== HEADER ===\nSession: {session_id}\nSequence: 1\n")
    assert "## Workspace Files\n(empty workspace)" in text
    assert text.endswith("=== PROMPT ===\nCreate hello.py\n")
    assert f"Session {session_id} started" in result.stderr
    assert f"Next prompt: {outbox}" in result.stderr
    state = state_of(tmp_path)
    assert (state["sequenceNumber"], state["isComplete"], state["task"]) == (
        1,
        False,
        "Create hello.py",
    )
    for folder in ("workspace", "outbox", "inbox", "sessions"):
        assert (tmp_path / folder).is_dir()


def test_step_applies_a_reply_file_and_writes_the_next_outbox(tmp_path):
    run(tmp_path, "start", "Create hello.py", "--no-watch")
    session_id = only_session(tmp_path)
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY_1)
    result = run(tmp_path, "step", session_id[:3], str(reply))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "workspace/hello.py").read_text() == 'print("Hello from the agent")\n'
    assert "[OK] CREATE_FILE: Created 'hello.py'" in result.stderr
    assert "Turn 1: 3 commands (1 run), 1 file changed, 0 failed" in result.stderr
    assert reply.exists(), "a reply outside inbox/ is the user's file and stays"
    text = (tmp_path / "outbox" / f"{session_id}_seq0002.txt").read_text()
    assert "[OK] RUN_COMMAND: Ran 'python3 hello.py' (exit code 0)\n" in text
    assert "  Output: Hello from the agent\n" in text
    history = tmp_path / "sessions" / session_id / "turns" / "0001"
    assert (history / "reply.txt").read_text() == REPLY_1
    assert json.loads((history / "meta.json").read_text())["replyFile"] == "reply.txt"


def test_step_from_stdin(tmp_path):
    run(tmp_path, "start", "t", "--no-watch")
    result = run(tmp_path, "step", "latest", "-", input="[MESSAGE]\nhi there\n[/MESSAGE]\n")
    assert result.exit_code == 0, result.output
    assert "Message from the LLM: hi there" in result.stderr
    assert state_of(tmp_path)["sequenceNumber"] == 2


def test_done_completes_the_session_and_writes_no_further_outbox(tmp_path):
    run(tmp_path, "start", "t", "--no-watch")
    result = run(tmp_path, "step", "latest", "-", input=REPLY_DONE)
    assert result.exit_code == 0, result.output
    assert "Session complete: Created hello.py, which prints a greeting." in result.stderr
    state = state_of(tmp_path)
    assert state["isComplete"] is True and state["sequenceNumber"] == 2
    assert sorted(p.name for p in (tmp_path / "outbox").glob("*.txt")) == [
        f"{only_session(tmp_path)}_seq0001.txt"
    ]
    duplicate = run(tmp_path, "step", "latest", "-", input=REPLY_DONE)
    assert duplicate.exit_code == 0 and "identical to the one applied in turn 1" in duplicate.stderr
    again = run(tmp_path, "step", "latest", "-", input="[MESSAGE]\nmore\n[/MESSAGE]\n")
    assert again.exit_code == 1
    assert "is complete; it takes no more replies" in again.stderr
    resumed = run(tmp_path, "resume")
    assert resumed.exit_code == 1 and "is complete" in resumed.stderr


def test_show_prints_the_current_outbox_and_rewrites_a_deleted_one(tmp_path):
    run(tmp_path, "start", "Show me", "--no-watch")
    outbox = next((tmp_path / "outbox").glob("*_seq0001.txt"))
    shown = run(tmp_path, "show")
    assert shown.exit_code == 0 and shown.stdout == outbox.read_text()
    outbox.unlink()
    again = run(tmp_path, "show", "latest")
    assert again.stdout.endswith("=== PROMPT ===\nShow me\n") and outbox.exists()


def test_sessions_lists_each_session(tmp_path):
    empty = run(tmp_path, "sessions")
    assert empty.exit_code == 0 and "No sessions" in empty.stderr
    run(tmp_path, "start", "First task", "--no-watch")
    run(tmp_path, "start", "Second task", "--no-watch")
    run(tmp_path, "step", "latest", "-", input=REPLY_DONE)
    listed = run(tmp_path, "sessions")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    first = next(line for line in lines if "First task" in line)
    second = next(line for line in lines if "Second task" in line)
    assert " open " in first and " done " in second


def test_user_errors_exit_1_with_a_message(tmp_path):
    missing = run(tmp_path, "show", "deadbeef")
    assert missing.exit_code == 1 and "No sessions yet" in missing.stderr
    run(tmp_path, "start", "t", "--no-watch")
    unknown = run(tmp_path, "step", "ffff0000", "-", input="")
    assert unknown.exit_code == 1 and "No session matches 'ffff0000'" in unknown.stderr
    empty_task = run(tmp_path, "start", "  ", "--no-watch")
    assert empty_task.exit_code == 1 and "task is empty" in empty_task.stderr


def test_usage_errors_exit_2(tmp_path):
    assert run(tmp_path, "step", "latest", str(tmp_path / "nope.txt")).exit_code == 2
    assert CliRunner().invoke(main, ["frobnicate"]).exit_code == 2


def test_version_and_help():
    version = CliRunner().invoke(main, ["--version"])
    assert version.exit_code == 0 and __version__ in version.stdout
    help_text = CliRunner().invoke(main, ["-h"]).stdout
    for command in ("start", "resume", "step", "sessions", "show"):
        assert command in help_text


def test_step_is_refused_while_another_process_holds_the_session(tmp_path):
    run(tmp_path, "start", "t", "--no-watch")
    store = SessionStore(tmp_path)
    lock = store.hold(only_session(tmp_path))
    try:
        result = run(tmp_path, "step", "latest", "-", input=REPLY_DONE)
    finally:
        lock.release()
    assert result.exit_code == 1 and "already being watched" in result.stderr
    assert state_of(tmp_path)["isComplete"] is False


def test_start_on_an_existing_project_folder_protects_the_agent_folders(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print(1)\n")
    result = CliRunner().invoke(
        main, ["start", "t", "--no-watch", "--workspace", str(project), "--root", str(project)]
    )
    assert result.exit_code == 0, result.output
    reply = '[CREATE_FILE path="sessions/evil.json"]\n{}\n[/CREATE_FILE]\n'
    stepped = CliRunner().invoke(main, ["step", "latest", "-", "--root", str(project)], input=reply)
    assert "[FAILED] CREATE_FILE: REJECTED: Path is protected (agent folder)" in stepped.stderr
    assert not (project / "sessions/evil.json").exists()
    first = next((project / "outbox").glob("*_seq0001.txt")).read_text()
    assert "  main.py (9 bytes)" in first and "outbox/" not in first
    outbox = next((project / "outbox").glob("*_seq0002.txt")).read_text()
    assert "(unchanged since message 1)" in outbox and "outbox/" not in outbox


# --- the whole loop through real processes and a real observer ---------------------------


def spawn(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "codingagent", *args, "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.slow
def test_whole_session_through_the_watcher(tmp_path):
    agent = spawn(tmp_path, "start", "Create hello.py that prints a greeting")
    try:
        wait_for(lambda: list((tmp_path / "outbox").glob("*_seq0001.txt")))
        session_id = only_session(tmp_path)
        drop_reply(tmp_path, "reply1.txt", REPLY_1)
        second = tmp_path / "outbox" / f"{session_id}_seq0002.txt"
        # The outbox is written before the state (the commit point) and before the reply
        # leaves inbox/: wait for the last of them.
        wait_for(lambda: not (tmp_path / "inbox/reply1.txt").exists())
        assert state_of(tmp_path)["sequenceNumber"] == 2
        text = second.read_text()
        context = text.split("=== CONTEXT ===\n", 1)[1]
        assert context.startswith(
            "## Workspace Files\n"
            '(changes since message 1; READ_FILE path="." lists every file)\n'
            "  added: hello.py (30 bytes)\n"
        )
        assert (
            "## Previous Command Results\n"
            "[OK] CREATE_FILE: Created 'hello.py'\n"
            "[OK] RUN_COMMAND: Ran 'python3 hello.py' (exit code 0)\n"
            "  Output: Hello from the agent\n"
            "[OK] READ_FILE: 'hello.py' is shown under Requested File Contents\n"
        ) in context
        assert (
            "## Requested File Contents\n"
            "--- hello.py ---\n"
            '   1 | print("Hello from the agent")\n'
            "--- end hello.py ---\n"
        ) in context
        drop_reply(tmp_path, "reply2.txt", REPLY_DONE)
        _, stderr = agent.communicate(timeout=20)
    finally:
        agent.kill()
    assert agent.returncode == 0, stderr
    assert "Session complete: Created hello.py, which prints a greeting." in stderr
    state = state_of(tmp_path)
    assert state["isComplete"] is True and state["sequenceNumber"] == 3
    assert not list((tmp_path / "outbox").glob("*_seq0003.txt"))
    assert [p.name for p in SessionStore(tmp_path).turns(session_id)] == ["0001", "0002"]


@pytest.mark.slow
def test_resume_processes_replies_saved_while_nobody_watched_and_ctrl_c_stops(tmp_path):
    assert run(tmp_path, "start", "t", "--no-watch").exit_code == 0
    drop_reply(tmp_path, "early.txt", "[MESSAGE]\nsaved before resume\n[/MESSAGE]\n")
    agent = spawn(tmp_path, "resume")
    try:
        wait_for(lambda: not (tmp_path / "inbox/early.txt").exists())
        second_watcher = run(tmp_path, "resume")
        assert second_watcher.exit_code == 1 and "already being watched" in second_watcher.stderr
        time.sleep(0.2)
        agent.send_signal(signal.SIGINT)
        _, stderr = agent.communicate(timeout=10)
    finally:
        agent.kill()
    assert agent.returncode == 130
    assert "Message from the LLM: saved before resume" in stderr
    assert "codingagent resume" in stderr


def test_console_prints_paths_and_llm_text_literally(tmp_path):
    root = tmp_path / "x[/red]q[bold]"
    result = run(root, "start", "t [red]", "--no-watch")
    assert result.exit_code == 0, result.output
    assert f"Next prompt: {root}" in result.stderr
    stepped = run(
        root, "step", "latest", "-", input="[MESSAGE]\n[bold red]x[/] [link=f]y\n[/MESSAGE]\n"
    )
    assert "Message from the LLM: [bold red]x[/] [link=f]y" in stepped.stderr
    assert "t [red]" in run(root, "sessions").stdout


def test_a_removed_outbox_folder_is_recreated(tmp_path):
    run(tmp_path, "start", "t", "--no-watch")
    for outbox in (tmp_path / "outbox").iterdir():
        outbox.unlink()
    (tmp_path / "outbox").rmdir()
    result = run(tmp_path, "step", "latest", "-", input="[MESSAGE]\nhi\n[/MESSAGE]\n")
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "outbox").glob("*_seq0002.txt"))) == 1
