"""The daily loop as a user meets it: settings, clipboard, paste, limits, colour, completion."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner
from invoking import run

from codingagent.frontends.cli import main
from codingagent.settings import Settings, SettingsError, load_settings


def started(root: Path) -> str:
    """Start a session; its id."""
    before = set((root / "sessions").glob("*.json"))
    result = run(root, "start", "t", "--no-watch")
    assert result.exit_code == 0, result.output
    (state,) = set((root / "sessions").glob("*.json")) - before
    return state.stem


@pytest.fixture
def fake_clipboard(monkeypatch) -> dict:
    """A working clipboard, as on a desktop (CI machines have none): xclip, as far as the
    agent can tell, already handed to pyperclip, whose functions keep the text here."""
    import pyperclip

    from codingagent.sources import pasteboard

    board = {"text": ""}
    monkeypatch.setattr(pasteboard, "tool", lambda: ("xclip", None))
    monkeypatch.setattr(pasteboard, "_handed", "xclip")
    monkeypatch.setattr(pyperclip, "copy", lambda text: board.update(text=text))
    monkeypatch.setattr(pyperclip, "paste", lambda: board["text"])
    return board


@pytest.fixture
def no_display(monkeypatch) -> None:
    """No desktop session: no display, no Wayland, no SSH terminal."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SSH_TTY"):
        monkeypatch.delenv(name, raising=False)


# --- settings ------------------------------------------------------------------------------


def test_settings_precedence_file_then_pyproject_then_env_then_flags(tmp_path, monkeypatch):
    assert Settings() == load_settings(tmp_path / "nowhere")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.codingagent]\ncommand-timeout = 5\nmax_output = 900\n"
    )
    assert load_settings(tmp_path).command_timeout == 5
    (tmp_path / "codingagent.toml").write_text("command_timeout = 7\n")
    assert load_settings(tmp_path).command_timeout == 7
    assert load_settings(tmp_path).max_output == 900
    monkeypatch.setenv("CODINGAGENT_COMMAND_TIMEOUT", "9")
    assert load_settings(tmp_path).command_timeout == 9
    settings = load_settings(tmp_path, {"command_timeout": 11.0, "max_turns": None})
    assert (settings.command_timeout, settings.max_turns) == (11.0, None)


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        ("command_timeout = -1\n", {}, "command_timeout (codingagent.toml): Input should be"),
        ("comand_timeout = 1\n", {}, "comand_timeout (codingagent.toml): Extra inputs"),
        ("sandbox = 'docker'\n", {}, "sandbox (codingagent.toml): Input should be 'auto'"),
        ("", {"CODINGAGENT_MAX_TURNS": "many"}, "CODINGAGENT_MAX_TURNS (environment)"),
        ("command_timeout = \n", {}, "is not valid TOML"),
    ],
)
def test_bad_settings_are_one_clear_message(tmp_path, monkeypatch, toml, env, message):
    (tmp_path / "codingagent.toml").write_text(toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(tmp_path, "start", "t", "--no-watch")
    assert result.exit_code == 1
    assert message in result.stderr.replace(str(tmp_path) + os.sep, "")
    assert "Traceback" not in result.output
    with pytest.raises(SettingsError):
        load_settings(tmp_path, {})


def test_bad_flag_value_names_the_command_line(tmp_path):
    result = run(tmp_path, "start", "t", "--no-watch", "--timeout", "0")
    assert result.exit_code == 1
    assert "command_timeout (command line): Input should be greater than 0" in result.stderr


def test_timeout_and_output_settings_reach_run_command(tmp_path):
    (tmp_path / "codingagent.toml").write_text("max_output = 200\n")
    started(tmp_path)
    reply = "[RUN_COMMAND]\nsleep 5\n[/RUN_COMMAND]\n[RUN_COMMAND]\nseq 1 1000\n[/RUN_COMMAND]\n"
    result = run(tmp_path, "step", "latest", "-", "--timeout", "0.5", input=reply)
    assert "[FAILED] RUN_COMMAND: 'sleep 5' timed out after 0.5 s" in result.stderr
    outbox = next((tmp_path / "outbox").glob("*_seq0002.txt")).read_text()
    output = outbox.split("Ran 'seq 1 1000' (exit code 0)\n", 1)[1].split("\n\n")[0]
    assert "    1\n" in output and "    1000" in output and " cut ...]" in output
    assert len(output) < 600  # 200 characters kept, plus the indentation of each line


def test_max_turns_stops_the_session(tmp_path):
    started(tmp_path)
    first = run(
        tmp_path, "step", "latest", "-", "--max-turns", "1", input="[MESSAGE]\na\n[/MESSAGE]"
    )
    assert first.exit_code == 0
    second = run(
        tmp_path, "step", "latest", "-", "--max-turns", "1", input="[MESSAGE]\nb\n[/MESSAGE]"
    )
    assert second.exit_code == 1
    assert "reached max_turns (1)" in second.stderr


@pytest.mark.slow
def test_max_turns_stops_the_watcher(tmp_path):
    started(tmp_path)
    (tmp_path / "inbox" / "r.txt").write_text("[MESSAGE]\nonly one\n[/MESSAGE]\n")
    agent = subprocess.run(
        [
            sys.executable,
            "-m",
            "codingagent",
            "resume",
            "--max-turns",
            "1",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert agent.returncode == 0, agent.stderr
    assert "reached max_turns (1)" in agent.stderr


def test_token_budget_warning(tmp_path):
    (tmp_path / "codingagent.toml").write_text("token_budget = 1000\n")
    started(tmp_path)
    (tmp_path / "workspace" / "big.txt").write_text("word " * 2000)
    result = run(tmp_path, "step", "latest", "-", input='[READ_FILE path="big.txt"]\n')
    assert "warning: the prompt is over the token budget (" in result.stderr
    assert "> 1,000); some chat UIs will cut it" in result.stderr


def test_over_the_budget_the_largest_file_views_are_windowed_first(tmp_path):
    (tmp_path / "codingagent.toml").write_text("token_budget = 5000\n")
    started(tmp_path)
    workspace = tmp_path / "workspace"
    (workspace / "big.txt").write_text("".join(f"{i:04d} " + "x" * 55 + "\n" for i in range(600)))
    (workspace / "small.txt").write_text("".join(f"small line {i}\n" for i in range(30)))
    result = run(
        tmp_path,
        "step",
        "latest",
        "-",
        input='[READ_FILE path="big.txt"]\n[READ_FILE path="small.txt"]\n',
    )
    assert result.exit_code == 0, result.output
    outbox = next((tmp_path / "outbox").glob("*_seq0002.txt")).read_text()
    assert len(outbox) // 4 <= 5000
    big = outbox.split("--- big.txt ---\n", 1)[1].split("--- end big.txt ---", 1)[0]
    shown = big.count(" | ")
    assert 20 <= shown < 400, "the big view is a smaller window"
    assert f'READ_FILE with start_line="{shown + 1}" to see them' in big
    assert "  30 | small line 29\n--- end small.txt ---" in outbox, "the small view is whole"
    assert "over the token budget" not in result.stderr


# --- clipboard and paste -----------------------------------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="a display-less Linux is what this test makes")
def test_without_a_clipboard_there_is_one_note_and_no_error(tmp_path, no_display):
    started(tmp_path)
    result = run(tmp_path, "step", "latest", "-", input="[MESSAGE]\nx\n[/MESSAGE]\n")
    assert result.exit_code == 0
    assert result.stderr.count("note: prompt not copied: no display: neither DISPLAY") == 1
    assert "Copied" not in result.stderr
    no_copy = run(tmp_path, "step", "latest", "-", "--no-copy", input="[MESSAGE]\ny\n[/MESSAGE]\n")
    assert "not copied" not in no_copy.stderr


def test_new_prompts_are_copied_when_a_clipboard_exists(tmp_path, fake_clipboard):
    result = run(tmp_path, "start", "t", "--no-watch")
    assert "Copied to the clipboard." in result.stderr
    (outbox,) = (tmp_path / "outbox").glob("*.txt")
    assert fake_clipboard["text"] == outbox.read_text()
    fake_clipboard["text"] = ""
    shown = run(tmp_path, "show", "--copy")
    assert shown.stdout == fake_clipboard["text"] == outbox.read_text()


def test_paste_takes_the_reply_from_the_clipboard(tmp_path, fake_clipboard, monkeypatch):
    monkeypatch.setattr("codingagent.frontends.cli._stdin_is_terminal", lambda: True)
    empty = CliRunner().invoke(main, ["paste", "--root", str(tmp_path)])
    assert empty.exit_code == 1 and "No sessions yet" in empty.stderr
    session_id = started(tmp_path)
    fake_clipboard["text"] = "[MESSAGE]\nfrom the chat\n[/MESSAGE]\n"
    monkeypatch.setattr("codingagent.frontends.cli._stdin_is_terminal", lambda: True)
    result = CliRunner().invoke(main, ["paste", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (saved,) = (tmp_path / "inbox").glob("*.txt")
    assert saved.name.startswith(f"{session_id}_reply_")
    assert saved.read_text() == fake_clipboard["text"]


def test_paste_from_stdin_and_its_refusals(tmp_path):
    started(tmp_path)
    ok = run(tmp_path, "paste", input="[DONE]\nok\n[/DONE]\n")
    assert ok.exit_code == 0 and "Saved the reply (18 characters)" in ok.stderr
    again = run(tmp_path, "paste", input="second")
    assert again.exit_code == 0
    assert len(list((tmp_path / "inbox").glob("*.txt"))) == 2, "two pastes, two files"
    empty = run(tmp_path, "paste", input="  \n")
    assert empty.exit_code == 1 and "Nothing to paste" in empty.stderr
    prompt = next((tmp_path / "outbox").glob("*.txt")).read_text()
    wrong = run(tmp_path, "paste", input=prompt)
    assert wrong.exit_code == 1 and "That is the prompt, not the LLM's reply" in wrong.stderr


def test_pasted_reply_is_applied_by_step(tmp_path):
    started(tmp_path)
    run(tmp_path, "paste", input='[CREATE_FILE path="p.txt"]\npasted\n[/CREATE_FILE]\n')
    (saved,) = (tmp_path / "inbox").glob("*.txt")
    result = run(tmp_path, "step", "latest", str(saved))
    assert result.exit_code == 0 and (tmp_path / "workspace/p.txt").read_text() == "pasted\n"
    assert not saved.exists()


# --- listing, json, completion, colour ---------------------------------------------------------


def test_sessions_json(tmp_path):
    session_id = started(tmp_path)
    data = json.loads(run(tmp_path, "sessions", "--json").stdout)
    assert [s["sessionId"] for s in data] == [session_id]
    assert data[0]["sequenceNumber"] == 1 and data[0]["isComplete"] is False


def test_shell_completion_lists_session_ids(tmp_path, monkeypatch):
    first, second = started(tmp_path), started(tmp_path)
    monkeypatch.setenv("CODINGAGENT_ROOT", str(tmp_path))
    complete = ShellComplete(main, {}, "codingagent", "_CODINGAGENT_COMPLETE")
    found = {item.value for item in complete.get_completions(["show"], "")}
    assert found == {first, second}
    prefix = first[:3]
    narrowed = {item.value for item in complete.get_completions(["log"], prefix)}
    assert first in narrowed and all(value.startswith(prefix) for value in narrowed)


@pytest.mark.slow  # a whole agent process per case
def test_no_color_is_respected(tmp_path):
    """NO_COLOR (no-color.org) removes colour; bold and dim may stay."""
    colour = re.compile(rb"\x1b\[[0-9;]*(?:3[0-7]|9[0-7]|38;)[0-9;]*m")
    command = [sys.executable, "-m", "codingagent", "start", "t", "--no-watch", "--root"]
    env = {**os.environ, "FORCE_COLOR": "1"}
    env.pop("NO_COLOR", None)
    reply = '[CREATE_FILE path="a"]\nx\n[/CREATE_FILE]\n'
    for name, extra in (("coloured", {}), ("plain", {"NO_COLOR": "1"})):
        root = tmp_path / name
        subprocess.run([*command, str(root)], capture_output=True, env={**env, **extra})
        stepped = subprocess.run(
            [sys.executable, "-m", "codingagent", "step", "latest", "-", "--root", str(root)],
            input=reply.encode(),
            capture_output=True,
            env={**env, **extra},
        )
        assert stepped.returncode == 0
        assert bool(colour.search(stepped.stderr)) is (name == "coloured"), stepped.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="a display-less Linux is what this test makes")
def test_paste_without_a_clipboard_says_how_to_pipe(tmp_path, monkeypatch, no_display):
    started(tmp_path)
    monkeypatch.setattr("codingagent.frontends.cli._stdin_is_terminal", lambda: True)
    result = run(tmp_path, "paste")
    assert result.exit_code == 1
    assert "No clipboard here (no display: neither DISPLAY" in result.stderr
    assert "codingagent paste < reply.txt" in result.stderr


# --- RUN_COMMAND sandbox and approval ----------------------------------------------------------

RUN = "[RUN_COMMAND]\necho ran > ran.txt\n[/RUN_COMMAND]\n"


def test_commands_deny_refuses_every_command(tmp_path):
    started(tmp_path)
    result = run(tmp_path, "step", "latest", "-", "--commands", "deny", input=RUN)
    assert result.exit_code == 0
    assert "[FAILED] RUN_COMMAND: not approved by the user" in result.stderr
    assert "approval: deny" in result.stderr
    assert not (tmp_path / "workspace/ran.txt").exists()


@pytest.mark.parametrize(("answer", "runs"), [("y\n", True), ("n\n", False), ("", False)])
def test_commands_ask_waits_for_the_users_answer(tmp_path, answer, runs):
    started(tmp_path)
    reply = tmp_path / "reply.txt"
    reply.write_text(RUN)
    result = run(tmp_path, "step", "latest", str(reply), "--commands", "ask", input=answer)
    assert result.exit_code == 0
    assert "The LLM wants to run:\necho ran > ran.txt\nRun it? [y/N]" in result.stderr
    assert (tmp_path / "workspace/ran.txt").exists() is runs
    if not runs:
        assert "[FAILED] RUN_COMMAND: not approved by the user" in result.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_console_says_which_sandbox_runs_commands(tmp_path):
    started(tmp_path)
    boxed = run(tmp_path, "step", "latest", "-", "--sandbox", "bwrap", input=RUN)
    assert boxed.exit_code == 0, boxed.output
    assert "RUN_COMMAND: bubblewrap: read-only system" in boxed.stderr
    plain = run(tmp_path, "step", "latest", "-", "--sandbox", "none", input=RUN + "\n")
    assert "RUN_COMMAND: no OS sandbox (sandbox = none): commands run with your permissions" in (
        plain.stderr
    )


def test_sandbox_bwrap_where_it_cannot_work_is_a_clear_error(tmp_path, monkeypatch):
    from codingagent.sandbox.bubblewrap import Bubblewrap

    monkeypatch.setattr(Bubblewrap, "problem", lambda self: "bwrap is absent")
    started(tmp_path)
    result = run(tmp_path, "step", "latest", "-", "--sandbox", "bwrap", input=RUN)
    assert result.exit_code == 1
    assert "sandbox = 'bwrap' was asked for, but" in result.stderr


def test_doctor_reports_what_works(tmp_path):
    result = run(tmp_path, "doctor")
    assert result.exit_code == 0
    for key in ("RUN_COMMAND sandbox", "RUN_COMMAND approval", "inbox watcher", "clipboard"):
        assert key in result.stdout
    assert "command_timeout" in result.stdout and "pydantic" in result.stdout
    grammars = next(line for line in result.stdout.splitlines() if "code map grammars" in line)
    assert "python" in grammars and "typescript" in grammars and "go" in grammars


# --- follow-ups --------------------------------------------------------------------------------


def test_resume_task_reopens_a_completed_session_with_a_follow_up(tmp_path):
    session_id = started(tmp_path)
    run(tmp_path, "step", "latest", "-", input="[DONE]\nfirst part done\n[/DONE]\n")
    result = run(tmp_path, "resume", "--task", "Now add tests", "--no-watch")
    assert result.exit_code == 0, result.output
    state = json.loads((tmp_path / "sessions" / f"{session_id}.json").read_text())
    assert state["isComplete"] is False and state["followUps"] == ["Now add tests"]
    outbox = (tmp_path / "outbox" / f"{session_id}_seq0002.txt").read_text()
    assert "Task: t\nFollow-up: Now add tests\nProtocol: 1.2\n" in outbox
    assert outbox.endswith(
        "=== PROMPT ===\nThe user has a follow-up instruction for this session (the work so far "
        "is above):\nNow add tests\nWork on it, and send [DONE] with a summary when it is "
        "complete.\n"
    )
    run(tmp_path, "step", "latest", "-", input="[MESSAGE]\nworking\n[/MESSAGE]\n")
    later = (tmp_path / "outbox" / f"{session_id}_seq0003.txt").read_text()
    assert "Follow-up: Now add tests\n" in later
    assert "Continue working on the task based on the results above." in later
    assert len(json.loads(run(tmp_path, "log", "--json").stdout)) == 2, "history is kept"


def test_a_completed_session_says_how_to_follow_up(tmp_path):
    started(tmp_path)
    run(tmp_path, "step", "latest", "-", input="[DONE]\nok\n[/DONE]\n")
    result = run(tmp_path, "resume")
    assert result.exit_code == 1
    assert 'give it a follow-up with: codingagent resume --task "..."' in result.stderr
    empty = run(tmp_path, "resume", "--task", " ", "--no-watch")
    assert empty.exit_code == 1 and "follow-up task is empty" in empty.stderr


@pytest.mark.slow
def test_poll_flag_watches_with_the_polling_observer(tmp_path):
    started(tmp_path)
    (tmp_path / "inbox" / "r.txt").write_text("[MESSAGE]\npolled\n[/MESSAGE]\n")
    command = [sys.executable, "-m", "codingagent", "resume", "--poll", "--max-turns", "1"]
    agent = subprocess.run(
        [*command, "--root", str(tmp_path)], capture_output=True, text=True, timeout=30
    )
    assert agent.returncode == 0, agent.stderr
    assert f"Watching {tmp_path / 'inbox'} (polling)" in agent.stderr
    assert "Message from the LLM: polled" in agent.stderr
