"""A model endpoint never leaves the user (or the model) guessing: conflicting flags, a
timeout hint in the terms the user gave, a reply cut by the output limit told to the model, a
key in a settings file refused with the reason, and ``doctor`` checking each profile. Against
scripted servers on 127.0.0.1 (tests/scripted_model.py)."""

from __future__ import annotations

import json

import pytest
from scripted_model import Say, ScriptedModel, Stall
from test_endpoint import (
    DONE,
    ENDPOINT_FAILED,
    agent,
    one_error_line,
    outbox_text,
    profile,
    sent,
    state_of,
)

from codingagent.records.store import SessionStore

CUT_REPLY = """\
[CREATE_FILE path="a.py"]
print("a")
[/CREATE_FILE]

[CREATE_FILE path="b.py"]
print("b"
"""


def test_clipboard_and_model_together_are_a_usage_error(tmp_path):
    for command in (["start", "t"], ["resume"]):
        result = agent(tmp_path, *command, "--model", "m", "--clipboard")
        assert result.exit_code == 2, result.output
        assert "--clipboard and --model (or --base-url) exclude each other" in result.output
    assert not (tmp_path / "sessions").exists()


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@pytest.mark.parametrize("by_flags", [True, False])
def test_the_timeout_hint_names_what_the_user_gave(tmp_path, by_flags):
    with ScriptedModel(Stall(DONE)) as model:
        if by_flags:
            given = ["--base-url", model.url, "--model-id", "scripted-1", "--model-timeout", "0.5"]
        else:
            profile(tmp_path, model.url, timeout=0.5)
            given = ["--model", "scripted"]
        line = one_error_line(agent(tmp_path, "start", "t", *given), ENDPOINT_FAILED)
    assert "scripted-1 at " in line and "did not answer within 0.5 s" in line
    if by_flags:
        assert line.endswith("Give --model-timeout SECONDS to wait longer")
        assert "profile" not in line
    else:
        assert line.endswith("raise timeout in its [models.scripted] profile")


def test_a_reply_cut_by_the_output_limit_is_logged_and_told_to_the_model(tmp_path):
    with ScriptedModel(Say(CUT_REPLY, cut=True), Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == 0, result.output
    assert "the answer stopped at the output limit (max_tokens)" in result.output
    (first, _) = SessionStore(tmp_path).turns(state_of(tmp_path)["sessionId"])
    assert json.loads((first / "meta.json").read_text())["finishReason"] == "length"
    assert (tmp_path / "workspace" / "a.py").is_file()
    assert not (tmp_path / "workspace" / "b.py").exists()
    _, messages = sent(model.requests[1])
    (asked,) = messages
    assert asked["content"].startswith(
        "NOTE: your last reply was cut off by the output limit (max_tokens) after [CREATE_FILE] "
        "at line 1. [CREATE_FILE] at line 5 was left unclosed and was not run. Continue from "
        "there in smaller steps"
    )
    assert asked["content"].endswith(outbox_text(tmp_path, 2).split("=== CONTEXT ===")[1])


@pytest.mark.parametrize("where", ["profile", "top"])
def test_an_api_key_in_a_settings_file_is_refused_with_the_reason(tmp_path, where):
    table = "[models.m]\nbase_url = 'http://127.0.0.1:9/v1'\nmodel = 'x'\n"
    key = 'api_key = "sk-in-the-file"\n'
    text = table + key if where == "profile" else key + table
    (tmp_path / "codingagent.toml").write_text(text)
    line = one_error_line(agent(tmp_path, "start", "t", "--model", "m"))
    assert "API keys are never read from a settings file" in line
    assert 'name that variable with api_key_env = "VARIABLE"' in line
    assert "sk-in-the-file" not in line and "Extra inputs" not in line
    assert not (tmp_path / "sessions").exists()


def test_doctor_checks_each_profiles_key_variable_and_endpoint(tmp_path):
    with ScriptedModel(key="sk-doctor-key") as model:
        lines = [
            "[models.up]",
            f"base_url = '{model.url}'",
            "model = 'scripted-1'",
            "api_key_env = 'DOCTOR_KEY'",
            "[models.nokey]",
            f"base_url = '{model.url}'",
            "model = 'scripted-1'",
            "api_key_env = 'DOCTOR_UNSET_KEY'",
            "[models.gone]",
            "api = 'anthropic'",
            "base_url = 'http://127.0.0.1:9/v1'",
            "model = 'claude'",
        ]
        (tmp_path / "codingagent.toml").write_text("\n".join(lines) + "\n")
        env = {"DOCTOR_KEY": "sk-doctor-key", "DOCTOR_UNSET_KEY": ""}
        online = agent(tmp_path, "doctor", env=env)
        offline = agent(tmp_path, "doctor", "--offline", env=env)
    rows = {line.split("  ")[0]: line for line in online.output.splitlines()}
    assert rows["model up"].endswith(
        "$DOCTOR_KEY is set; it answers; window 128,000 tokens (the default)"
    )
    assert rows["model nokey"].endswith("$DOCTOR_UNSET_KEY is not set: export it with the key")
    assert "anthropic API at http://127.0.0.1:9/v1" in rows["model gone"]
    assert "Cannot connect to http://127.0.0.1:9/v1" in rows["model gone"]
    assert "sk-doctor-key" not in online.output
    assert "$DOCTOR_KEY is set; not asked (--offline)" in offline.output
