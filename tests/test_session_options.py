"""Session options are the session's (issue 25): what `start` was given is kept with the
session and used by `step`, `resume`, `answer`, `undo` and `show`, unless a flag overrides it
(then that is kept); `show --settings` says which hold. Through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

from invoking import run

from codingagent.protocol.manual import REMINDER


def section(text: str, name: str) -> str:
    after = text.split(f"=== {name} ===\n", 1)[1]
    return after.split("\n\n=== ", 1)[0]


def state_of(root: Path) -> dict:
    (path,) = (root / "sessions").glob("*.json")
    return json.loads(path.read_text())


def step(root: Path, text: str, *flags: str):
    result = run(root, "step", "latest", "-", *flags, input=f"[MESSAGE]\n{text}\n[/MESSAGE]\n")
    assert result.exit_code == 0, result.output
    return result


def test_start_protocol_first_then_step_without_the_flag_keeps_it(tmp_path):
    (tmp_path / "codingagent.toml").write_text('protocol = "every"\nsandbox = "none"\n')
    started = run(tmp_path, "start", "t", "--no-watch", "--no-copy", "--protocol", "first")
    assert started.exit_code == 0, started.output
    assert state_of(tmp_path)["options"] == {"protocol": "first", "clipboard": False}
    stepped = step(tmp_path, "one")
    assert "Options kept with the session: --no-copy --protocol first" in stepped.stderr
    assert section(run(tmp_path, "show").output, "PROTOCOL") == REMINDER.rstrip("\n")
    # A flag overrides the kept option, and is kept in its place.
    step(tmp_path, "two", "--protocol", "every")
    assert state_of(tmp_path)["options"]["protocol"] == "every"
    assert section(run(tmp_path, "show").output, "PROTOCOL").startswith("You are a coding agent")
    step(tmp_path, "three")
    assert section(run(tmp_path, "show").output, "PROTOCOL").startswith("You are a coding agent")


def test_the_kept_options_reach_the_shell_and_show_settings_names_them(tmp_path):
    started = run(
        tmp_path, "start", "t", "--no-watch", "--no-copy", "--sandbox", "none", "--timeout", "7"
    )
    assert started.exit_code == 0, started.output
    result = run(tmp_path, "step", "latest", "-", input="[RUN_COMMAND]\necho hi\n[/RUN_COMMAND]\n")
    assert result.exit_code == 0, result.output
    assert "RUN_COMMAND: no OS sandbox" in result.stderr  # the kept --sandbox none
    assert "a time limit of 7 s" in run(tmp_path, "show", "--full").output
    shown = run(tmp_path, "show", "--settings").output.splitlines()
    assert shown[0].endswith(": --no-copy --timeout 7 --sandbox none")
    assert "  sandbox = 'none' (session options)" in shown
    assert "  command_timeout = 7.0 (session options)" in shown
    assert "  protocol = 'first' (default)" in shown


def test_trust_settings_is_never_kept_and_no_model_drops_a_kept_model(tmp_path):
    (tmp_path / "codingagent.toml").write_text(
        '[models.local]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    started = run(
        tmp_path, "start", "t", "--no-watch", "--no-copy", "--trust-settings", "--model", "local"
    )
    assert started.exit_code == 0, started.output
    assert state_of(tmp_path)["options"] == {"clipboard": False, "model_name": "local"}
    resumed = run(tmp_path, "resume", "--no-watch", "--no-model")
    assert resumed.exit_code == 0, resumed.output
    assert state_of(tmp_path)["options"] == {"clipboard": False}
