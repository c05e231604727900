"""Reasoning is never a command (codingagent/protocol/reasoning.py): a leading <think> block,
and the reasoning APIs send apart, are kept and shown, never parsed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples
from scripted_model import Say, ScriptedModel

from codingagent.frontends.cli import main
from codingagent.protocol.reasoning import split_reasoning
from codingagent.protocol.replies import read_reply
from codingagent.records.store import SessionStore

DRAFTS = (
    '[CREATE_FILE path="draft.py"]\nprint("draft")\n[/CREATE_FILE]\n'
    "[RUN_COMMAND]\ntouch ran-in-thinking\n[/RUN_COMMAND]\n"
)
ANSWER = '[CREATE_FILE path="hello.py"]\nprint("hello")\n[/CREATE_FILE]\n'
DONE = "[DONE]\nDone.\n[/DONE]\n"


def agent(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root)])


def model_run(root: Path, model: ScriptedModel) -> Result:
    (root / "codingagent.toml").write_text(
        f'[models.m]\napi = "{model.api}"\nbase_url = "{model.url}"\nmodel = "scripted-1"\n'
        if model.api == "openai"
        else f'[models.m]\nbase_url = "{model.url}"\nmodel = "scripted-1"\n'
    )
    return agent(root, "start", "Write hello.py", "--model", "m", "--commands", "allow")


def turn_meta(root: Path, index: int = 0) -> dict:
    (state,) = (root / "sessions").glob("*.json")
    session = json.loads(state.read_text())["sessionId"]
    return json.loads((SessionStore(root).turns(session)[index] / "meta.json").read_text())


def test_commands_inside_a_leading_think_block_never_run_and_the_answer_after_it_does(tmp_path):
    thinking = f"<think>\nLet me draft it first.\n{DRAFTS}</think>\n{ANSWER}"
    with ScriptedModel(Say(thinking), Say(DONE)) as model:
        result = model_run(tmp_path, model)
    assert result.exit_code == 0, result.output
    workspace = tmp_path / "workspace"
    assert (workspace / "hello.py").is_file()
    assert not (workspace / "draft.py").exists() and not (workspace / "ran-in-thinking").exists()
    log = agent(tmp_path, "log")
    assert "thought for" in log.output and "touch ran-in-thinking" not in log.output
    shown = agent(tmp_path, "log", "--thinking")
    assert "| touch ran-in-thinking" in shown.output
    # The model is not sent its own thinking back with its earlier turns.
    assert "Let me draft it first." not in json.dumps(model.requests[1])


def test_an_unclosed_think_block_runs_nothing_and_the_model_is_told(tmp_path):
    with ScriptedModel(Say(f"<think>\nHmm.\n{DRAFTS}{ANSWER}"), Say(DONE)) as model:
        result = model_run(tmp_path, model)
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "workspace").iterdir()) == []
    told = json.dumps(model.requests[1])
    assert "never closed (no </think>), so nothing in it or after it was run" in told


def test_a_think_after_the_first_command_is_content(tmp_path):
    reply = (
        '[CREATE_FILE path="notes.md"]\n<think>kept</think>\n[/CREATE_FILE]\n'
        "<think>\nthis is prose now\n</think>\n" + ANSWER
    )
    with ScriptedModel(Say(reply), Say(DONE)) as model:
        result = model_run(tmp_path, model)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "workspace" / "notes.md").read_text() == "<think>kept</think>\n"
    assert (tmp_path / "workspace" / "hello.py").is_file()


def test_reasoning_sent_apart_is_kept_and_shown_never_parsed(tmp_path):
    """llama-server's reasoning_content (streamed) and Ollama's message.thinking (NDJSON)."""
    for api in ("llama-server", "ollama"):
        root = tmp_path / api
        root.mkdir()
        step = Say(ANSWER, thinking=f"I could write {DRAFTS}")
        with ScriptedModel(step, Say(DONE), api=api) as model:
            result = model_run(root, model)
        assert result.exit_code == 0, result.output
        assert "scripted-1 thought for" in result.output
        assert not (root / "workspace" / "draft.py").exists()
        assert (root / "workspace" / "hello.py").is_file()
        assert turn_meta(root)["thinking"] == f"I could write {DRAFTS}"
        assert "| touch ran-in-thinking" in agent(root, "log", "--thinking").output


def test_a_pasted_reply_that_starts_with_thinking(tmp_path):
    assert agent(tmp_path, "start", "Write hello.py", "--no-watch").exit_code == 0
    (state,) = (tmp_path / "sessions").glob("*.json")
    session = json.loads(state.read_text())["sessionId"]
    reply = tmp_path / "reply.txt"
    reply.write_text(f"<thinking>\n{DRAFTS}</thinking>\nSession: {session} Sequence: 1\n{ANSWER}")
    result = agent(tmp_path, "step", str(reply), "--commands", "allow")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "workspace" / "hello.py").is_file()
    assert not (tmp_path / "workspace" / "draft.py").exists()


def test_a_closing_tag_the_chat_template_opened_ends_the_thinking():
    reasoned = split_reasoning(f"drafting\n{DRAFTS}</think>\n{DONE}")
    assert "touch ran-in-thinking" in reasoned.thinking
    commands, _ = read_reply(f"drafting\n{DRAFTS}</think>\n{DONE}".encode(), 10**6, None)
    assert [c.name for c in commands] == ["DONE"]
    # ... but not one inside a command's body: that is a file's content.
    body = '[CREATE_FILE path="t.xml"]\n</think>\n[/CREATE_FILE]\n'
    assert split_reasoning(body).answer == body


def test_line_numbers_of_the_answer_stay_those_of_the_reply():
    text = "<think>\na\nb\n</think>\n[DONE]\nok\n[/DONE]\n"
    commands, _ = read_reply(text.encode(), 10**6, None)
    assert commands[0].line == 5


@settings(max_examples=examples(200), deadline=None)
@given(
    drafted=st.lists(
        st.sampled_from(
            [DRAFTS, ANSWER, "[DONE]\nx\n[/DONE]\n", "prose\n", "[PATCH]\n", "<think>\n", "\n"]
        ),
        max_size=8,
    ),
    name=st.sampled_from(["think", "thinking", "reasoning", "THINK"]),
    lead=st.sampled_from(["", "\n", "  ", "Session: 0123abcd Sequence: 1\n"]),
)
def test_nothing_inside_a_leading_thinking_block_is_ever_a_command(drafted, name, lead):
    inside = "".join(drafted)
    reply = f"{lead}<{name}>\n{inside}</{name}>\n{DONE}"
    commands, _ = read_reply(reply.encode(), 10**6, None)
    assert [c.name for c in commands] == ["DONE"]
    unclosed, problems = read_reply(f"{lead}<{name}>\n{inside}".encode(), 10**6, None)
    assert unclosed == [] and any("never closed" in p.summary for p in problems)
