"""A model endpoint as the reply source, driven through the command line against a scripted
model: a real HTTP server on 127.0.0.1 speaking the OpenAI wire format (tests/scripted_model.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fake_apis import CopilotFake
from scripted_model import Cut, Fail, Garbage, Say, ScriptedModel, Stall
from terminal import Terminal

from codingagent.frontends.cli import main
from codingagent.protocol.manual import REMINDER, protocol_text
from codingagent.records.store import SessionStore
from codingagent.sources.providers import signin
from codingagent.sources.transcript import without_protocol

SOLVE_1 = """\
[CREATE_FILE path="hello.py"]
print("Hello from the model")
[/CREATE_FILE]

[RUN_COMMAND]
python3 hello.py
[/RUN_COMMAND]
"""
SOLVE_2 = '[MESSAGE]\nThe script runs.\n[/MESSAGE]\n[READ_FILE path="hello.py"]\n'
DONE = "[DONE]\nCreated hello.py.\n[/DONE]\n"
KEY = "local-server-key-0123456789abcdef"  # as vLLM --api-key takes: no known format


APIS = ["openai", "anthropic", "azure", "copilot"]


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config folder (a Copilot sign-in is kept there), not the real one."""
    home = tmp_path.parent / f"{tmp_path.name}-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def agent(root: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """One command, in-process, with ``--root``."""
    return CliRunner().invoke(main, [*args, "--root", str(root)], env=env)


def profile(root: Path, url: str, **fields: object) -> None:
    """Write codingagent.toml with a [models.scripted] profile for ``url``."""
    table = {"base_url": url, "model": "scripted-1", **fields}
    lines = [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    (root / "codingagent.toml").write_text("[models.scripted]\n" + "\n".join(lines) + "\n")


def profile_for(root: Path, model: ScriptedModel, **fields: object) -> None:
    """A [models.scripted] profile for ``model``'s API, signed in where it must be."""
    if model.api == "copilot":
        signin.store(signin.SignIn(CopilotFake.OAUTH, model.root, model.root))
    if model.api == "azure":
        fields |= {"deployment": "scripted-1", "api_version": "2024-10-21"}
    profile(root, model.url, api=model.api, **fields)


def sent(body: dict) -> tuple[str, list[dict]]:
    """The system text and the messages of a request, in any API's shape."""
    if "system" in body:  # Anthropic: the PROTOCOL block is marked cacheable
        (block,) = body["system"]
        assert block["cache_control"] == {"type": "ephemeral"}
        return block["text"], body["messages"]
    system, *messages = body["messages"]
    assert system["role"] == "system"
    return system["content"], messages


def state_of(root: Path) -> dict:
    (path,) = (root / "sessions").glob("*.json")
    return json.loads(path.read_text())


def assert_intact_at_the_first_prompt(root: Path) -> None:
    """No turn was applied: the session waits on its first prompt, with nothing half done."""
    state = state_of(root)
    assert state["sequenceNumber"] == 1 and not state["isComplete"]
    session = state["sessionId"]
    assert SessionStore(root).turns(session) == []
    assert not (root / "sessions" / session / "journal.json").exists()
    assert (root / "outbox" / f"{session}_seq0001.txt").is_file()


ENDPOINT_FAILED = 6  # the exit code of a model run stopped by the endpoint (docs/admission.md)


def one_error_line(result: Result, code: int = 1) -> str:
    """The output of a command that failed: exit ``code`` (1: a user error), one 'error:'
    line."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [True, False])
def test_a_scripted_model_solves_a_task_to_done_through_every_api(
    tmp_path, api, stream, monkeypatch
):
    import pyperclip

    copied: list[str] = []  # a working clipboard, which a model's prompts must not touch
    monkeypatch.setattr(pyperclip, "copy", copied.append)
    with ScriptedModel(Say(SOLVE_1), Say(SOLVE_2), Say(DONE), api=api) as model:
        profile_for(tmp_path, model, stream=stream, max_tokens=2000, temperature=0.2)
        result = agent(
            tmp_path, "start", "Write hello.py", "--model", "scripted", "--commands", "allow"
        )

    assert result.exit_code == 0, result.output
    assert "Session complete: Created hello.py." in result.output
    assert "scripted-1 answered: " in result.output
    assert "Paste it" not in result.output and copied == []
    state = state_of(tmp_path)
    assert state["isComplete"] and state["sequenceNumber"] == 4
    assert (tmp_path / "workspace" / "hello.py").is_file()
    session = state["sessionId"]
    # The PROTOCOL is the system text, the same in every request; each prompt goes without
    # it, as one user message.
    protocol = protocol_text(30, 4000)
    for n, body in enumerate(model.requests, start=1):
        assert body["model"] == "scripted-1"
        assert body["max_tokens"] == 2000 and body["temperature"] == 0.2
        assert body.get("stream", False) is stream
        outbox = (tmp_path / "outbox" / f"{session}_seq{n:04d}.txt").read_text()
        system, messages = sent(body)
        # The prompt file has the full PROTOCOL first, then its short form (docs/prompts.md).
        assert system == protocol
        assert (protocol.rstrip() if n == 1 else REMINDER.rstrip()) in outbox
        assert messages == [{"role": "user", "content": without_protocol(outbox)}]
        assert "=== PROTOCOL ===" not in messages[0]["content"]
        assert messages[0]["content"].startswith("=== HEADER ===\nSession: ")
    assert "[OK] RUN_COMMAND: Ran 'python3 hello.py' (exit code 0)" in outbox_text(tmp_path, 2)
    # The answers are kept like pasted replies, with the model's numbers in meta.json.
    turns = SessionStore(tmp_path).turns(session)
    assert [(t / "reply.txt").read_text() for t in turns] == [SOLVE_1, SOLVE_2, DONE]
    meta = json.loads((turns[0] / "meta.json").read_text())
    assert meta["replyFile"] == "model scripted-1"
    assert (meta["model"], meta["tokensOut"], meta["finishReason"]) == (
        "scripted-1",
        len(SOLVE_1) // 4,
        "stop",
    )
    assert meta["tokensIn"] > 0 and meta["endpoint"] == model.url and meta["modelSeconds"] >= 0
    log = agent(tmp_path, "log")
    assert f"model scripted-1: {meta['tokensIn']:,} tokens in, 30 out" in log.output
    assert log.output.count("model scripted-1: ") == 3, log.output


def test_anthropic_reports_the_protocol_read_from_its_cache(tmp_path):
    with ScriptedModel(Say(SOLVE_2), Say(DONE), api="anthropic") as model:
        profile_for(tmp_path, model)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == 0, result.output
    cached = len(protocol_text(30, 4000)) // 4
    assert f"({cached:,} from the provider's cache)" in result.output  # the second request


def outbox_text(root: Path, sequence: int) -> str:
    session = state_of(root)["sessionId"]
    return (root / "outbox" / f"{session}_seq{sequence:04d}.txt").read_text()


def test_history_turns_send_the_last_turns_before_the_prompt(tmp_path):
    with ScriptedModel(Say(SOLVE_2), Say(DONE)) as model:
        profile(tmp_path, model.url)
        env = {"CODINGAGENT_MODEL_HISTORY_TURNS": "1"}
        result = agent(tmp_path, "start", "t", "--model", "scripted", env=env)
    assert result.exit_code == 0, result.output
    (_, first), (_, second) = (sent(body) for body in model.requests)
    asked_1, asked_2 = (without_protocol(outbox_text(tmp_path, n)) for n in (1, 2))
    assert first == [{"role": "user", "content": asked_1}]
    # The second request starts as the first did: a provider's prompt cache holds the prefix.
    assert second == [
        {"role": "user", "content": asked_1},
        {"role": "assistant", "content": SOLVE_2},
        {"role": "user", "content": asked_2},
    ]


def test_500_three_times_is_a_clear_failure_and_the_session_goes_on_later(tmp_path):
    fails = [Fail(500, "overloaded", retry_after="0") for _ in range(3)]
    with ScriptedModel(*fails, Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
        line = one_error_line(result, ENDPOINT_FAILED)
        assert "answered HTTP 500: overloaded; gave up after 3 attempts" in line
        assert len(model.requests) == 3
        assert_intact_at_the_first_prompt(tmp_path)

        again = agent(tmp_path, "resume", "--model", "scripted")
    assert again.exit_code == 0, again.output
    assert state_of(tmp_path)["isComplete"]


@pytest.mark.slow  # real time: a time limit, X events, a stalled stream
def test_a_stream_cut_in_the_middle_is_not_applied_and_is_asked_again(tmp_path):
    with ScriptedModel(Cut(SOLVE_1), Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == 0, result.output
    assert "dropped" in result.output and "retrying in 1.0 s" in result.output
    assert len(model.requests) == 2
    (turn,) = SessionStore(tmp_path).turns(state_of(tmp_path)["sessionId"])
    assert (turn / "reply.txt").read_text() == DONE
    assert not (tmp_path / "workspace" / "hello.py").exists()


def free_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_endpoint_that_is_down_is_reported_before_a_session_is_made(tmp_path):
    port = free_port()
    profile(tmp_path, f"http://127.0.0.1:{port}/v1")
    line = one_error_line(agent(tmp_path, "start", "t", "--model", "scripted"))
    assert f"Cannot connect to http://127.0.0.1:{port}/v1" in line
    assert "is the server running" in line
    assert not (tmp_path / "sessions").exists() and not (tmp_path / "outbox").exists()


def test_an_answer_not_in_the_apis_shape_leaves_the_session_intact(tmp_path):
    with ScriptedModel(Garbage("<html>Bad gateway</html>")) as model:
        profile(tmp_path, model.url)
        line = one_error_line(agent(tmp_path, "start", "t", "--model", "scripted"), ENDPOINT_FAILED)
    assert "is not OpenAI chat-completions JSON: '<html>Bad gateway</html>'" in line
    assert_intact_at_the_first_prompt(tmp_path)


def test_two_replies_in_a_row_without_commands_stop_the_run(tmp_path):
    with ScriptedModel(Say("Let me think."), Say("Still thinking."), Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == 4, result.output  # no commands (docs/admission.md)
    assert "Stopped: two replies in a row ran no command" in result.output
    assert len(model.requests) == 2
    state = state_of(tmp_path)
    assert state["sequenceNumber"] == 3 and not state["isComplete"]


def test_a_run_stops_at_model_max_turns_and_copy_paste_takes_over(tmp_path):
    with ScriptedModel(Say(SOLVE_2), Say(DONE)) as model:
        profile(tmp_path, model.url)
        env = {"CODINGAGENT_MODEL_MAX_TURNS": "1"}
        result = agent(tmp_path, "start", "t", "--model", "scripted", env=env)
    assert result.exit_code == 3, result.output  # the turn limit (docs/admission.md)
    assert "Stopped after 1 model turns (model_max_turns)" in result.output
    assert len(model.requests) == 1
    reply = tmp_path / "done.txt"
    reply.write_text(DONE)
    step = agent(tmp_path, "step", state_of(tmp_path)["sessionId"], str(reply))
    assert step.exit_code == 0, step.output
    assert state_of(tmp_path)["isComplete"]


def test_a_copy_paste_session_is_finished_by_a_model(tmp_path):
    assert agent(tmp_path, "start", "t", "--no-watch").exit_code == 0
    reply = tmp_path / "r.txt"
    reply.write_text(SOLVE_2)
    assert agent(tmp_path, "step", "latest", str(reply)).exit_code == 0
    with ScriptedModel(Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "resume", "--model", "scripted")
    assert result.exit_code == 0, result.output
    _, messages = sent(model.requests[0])
    assert messages == [{"role": "user", "content": without_protocol(outbox_text(tmp_path, 2))}]
    assert state_of(tmp_path)["isComplete"]


def test_base_url_and_model_id_work_without_a_profile(tmp_path):
    with ScriptedModel(Say(DONE)) as model:
        result = agent(tmp_path, "start", "t", "--base-url", model.url, "--model-id", "scripted-1")
    assert result.exit_code == 0, result.output
    assert state_of(tmp_path)["isComplete"]


def test_an_unknown_profile_names_the_known_ones(tmp_path):
    profile(tmp_path, "http://127.0.0.1:9/v1")
    line = one_error_line(agent(tmp_path, "start", "t", "--model", "other"))
    assert "No model profile 'other' in the settings (profiles: scripted)" in line
    assert not (tmp_path / "sessions").exists()


def test_an_unknown_model_lists_what_the_server_offers(tmp_path):
    with ScriptedModel(models=("llama3", "qwen2.5-coder")) as model:
        profile(tmp_path, model.url, model="gpt-9")
        line = one_error_line(agent(tmp_path, "start", "t", "--model", "scripted"))
    assert f"{model.url} does not offer the model 'gpt-9'" in line
    assert line.endswith("It offers: llama3, qwen2.5-coder")
    assert not (tmp_path / "sessions").exists() and model.requests == []


def test_a_refused_key_names_the_variable_and_never_shows_the_key(tmp_path):
    with ScriptedModel(Say(DONE), key=KEY) as model:
        profile(tmp_path, model.url, api_key_env="MY_LLM_KEY")
        result = agent(
            tmp_path, "start", "t", "--model", "scripted", env={"MY_LLM_KEY": "sk-wrong-key"}
        )
        line = one_error_line(result)
        assert "refused the API key (HTTP 401): check the key in $MY_LLM_KEY" in line
        assert "sk-wrong-key" not in result.output
        unset = agent(tmp_path, "start", "t", "--model", "scripted", env={"MY_LLM_KEY": ""})
    assert "The API key variable $MY_LLM_KEY is not set" in one_error_line(unset)
    assert model.requests == [] and not (tmp_path / "sessions").exists()


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "MY_LLM_CREDENTIAL", "PYTHON_LLM_PASS"])
def test_the_key_is_nowhere_in_the_run_folder_the_output_or_a_commands_env(tmp_path, variable):
    """PYTHON_LLM_PASS passes the shell's allowlist, and neither its name nor the key looks
    like a secret: only taking the key out of the environment keeps it from a RUN_COMMAND."""
    show_env = "[RUN_COMMAND]\nenv\n[/RUN_COMMAND]\n"
    with ScriptedModel(Say(show_env), Say(DONE), key=KEY) as model:
        profile(tmp_path, model.url, api_key_env=variable)
        env = {variable: KEY, "PYTHONSAFEPATH": "visible"}
        result = agent(
            tmp_path, "start", "t", "--model", "scripted", "--commands", "allow", env=env
        )
    assert result.exit_code == 0, result.output
    assert len(model.requests) == 2  # the key was sent, and accepted
    (first, _) = SessionStore(tmp_path).turns(state_of(tmp_path)["sessionId"])
    env_output = (first / "results.json").read_text()
    assert "PYTHONSAFEPATH=visible" in env_output  # the command did print its environment
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(KEY.encode() not in p.read_bytes() for p in files)
    assert KEY not in result.output
    assert KEY not in agent(tmp_path, "log").output
    assert KEY not in agent(tmp_path, "log", "--json").output


def test_an_unattended_model_without_a_sandbox_needs_an_explicit_commands_setting(tmp_path):
    with ScriptedModel(Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted", "--sandbox", "none")
        line = one_error_line(result)
        assert "A model would run RUN_COMMANDs unattended, and no OS sandbox" in line
        assert model.requests == []
        denied = agent(
            tmp_path, "resume", "--model", "scripted", "--sandbox", "none", "--commands", "deny"
        )
    assert denied.exit_code == 0, denied.output
    assert state_of(tmp_path)["isComplete"]


@pytest.mark.slow
def test_ctrl_c_while_the_model_answers_stops_cleanly(tmp_path):
    with ScriptedModel(Stall(SOLVE_1)) as model:
        profile(tmp_path, model.url)
        root = ("--root", str(tmp_path))
        agent_process = subprocess.Popen(
            [sys.executable, "-m", "codingagent", "start", "t", *("--model", "scripted"), *root],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
        try:
            deadline = time.monotonic() + 20
            while not model.stalled.is_set() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert model.stalled.is_set()
            agent_process.send_signal(signal.SIGINT)
            _, stderr = agent_process.communicate(timeout=20)
        finally:
            agent_process.kill()
            model.release.set()
    assert agent_process.returncode == 130, stderr
    assert "Stopped. Continue later with: codingagent resume" in stderr
    assert "Traceback" not in stderr
    assert_intact_at_the_first_prompt(tmp_path)


def test_a_missing_key_stops_start_before_a_session_is_made(tmp_path):
    profile(tmp_path, "http://127.0.0.1:9/v1", api_key_env="MY_LLM_KEY")
    line = one_error_line(agent(tmp_path, "start", "t", "--model", "scripted"))
    assert line == "error: The API key variable $MY_LLM_KEY is not set; export it with the key"
    assert not (tmp_path / "sessions").exists()


def test_a_base_url_without_a_scheme_is_one_clear_line(tmp_path):
    result = agent(tmp_path, "start", "t", "--base-url", "localhost:1/v1", "--model-id", "m")
    line = one_error_line(result)
    assert line.startswith("error: The request to localhost:1/v1 failed: ")
    assert "'http://' or 'https://'" in line


@pytest.mark.slow  # a whole agent process per case
def test_a_terminal_shows_a_live_line_while_the_model_answers(tmp_path):
    with ScriptedModel(Say(DONE)) as model:
        profile(tmp_path, model.url)
        root = ("--root", str(tmp_path), "--commands", "deny")
        args = ("start", "t", "--model", "scripted", *root)
        with Terminal(*args, stdin=subprocess.DEVNULL) as terminal:
            assert terminal.wait(timeout=20) == 0
    text = terminal.seen.decode(errors="replace")
    # The line is redrawn in place; when the answer is complete it shows its last state: the
    # tokens as the API counted them (8, sent in 5 chunks).
    assert re.search(r"\S scripted-1: 8 tokens received, \d+\.\d s\r", text)
    assert "Session complete" in text
