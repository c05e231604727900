"""A reply starts at its Session line (codingagent/protocol/drafts.py, docs/protocol.md 4.7):
commands written before it are a draft, in any dress, known or not, and never run; the next
prompt says so. Through `codingagent step` and through a scripted model endpoint (a real
HTTP server on 127.0.0.1); a reply without a Session line is read whole, as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_model import Say, ScriptedModel
from test_reasoning import ANSWER, DONE, DRAFTS, agent

from codingagent.protocol.drafts import answer_start
from codingagent.protocol.parser import parse, parse_spans, split_lines
from codingagent.protocol.replies import read_reply
from codingagent.protocol.scan import commands_and_slips, reply_echo
from codingagent.records.store import SessionStore
from codingagent.session.seams import Prompt
from codingagent.sources.clipboard import is_reply, what_it_would_do

NOT_RUN = "2 commands before your reply's Session line"

# Drafts as models write them when nothing marks their thinking: the answer follows a
# Session line. ``{echo}`` is the Session line.
DRAFTED = {
    "plain text": "Here is my thought process:\nI could write:\n{drafts}\nHere is my response:\n"
    "{echo}\n{answer}",
    "Cohere's thinking": "<|START_THINKING|>Let me draft.\n{drafts}<|END_THINKING|>\n"
    "<|START_RESPONSE|>{echo}\n{answer}<|END_RESPONSE|>",
    "a draft with a Session line of its own": "Draft:\n{echo}\n{drafts}\nFinal answer:\n"
    "{echo}\n{answer}",
    "the answer in a code block": "Thinking it through:\n```\n{drafts}```\n```\n{echo}\n"
    "{answer}```\n",
    "drafts in code blocks, the Session line outside": "Plan:\n```\n{drafts}```\n{echo}\n"
    "```\n{answer}```\n",
}


def started(root: Path) -> str:
    assert agent(root, "start", "Write hello.py", "--no-watch").exit_code == 0
    (state,) = (root / "sessions").glob("*.json")
    return str(json.loads(state.read_text())["sessionId"])


def stepped(root: Path, text: str) -> str:
    """``text`` applied with ``codingagent step``; the next prompt."""
    reply = root / "reply.txt"
    reply.write_text(text, encoding="utf-8")
    result = agent(root, "step", str(reply), "--commands", "allow")
    assert result.exit_code == 0, result.output
    (state,) = (root / "sessions").glob("*.json")
    session = json.loads(state.read_text())
    return (
        SessionStore(root).outbox_path(session["sessionId"], session["sequenceNumber"]).read_text()
    )


def ran(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.iterdir())


@pytest.mark.parametrize("shape", DRAFTED)
def test_commands_before_the_session_line_never_run_through_step(tmp_path: Path, shape: str):
    session = started(tmp_path)
    echo = f"Session: {session} Sequence: 1"
    prompt = stepped(tmp_path, DRAFTED[shape].format(drafts=DRAFTS, echo=echo, answer=ANSWER))
    assert ran(tmp_path / "workspace") == ["hello.py"]  # the answer ran, no draft
    assert f"[NOTE] {NOT_RUN}" in prompt
    assert "CREATE_FILE (line" in prompt and "RUN_COMMAND (line" in prompt
    assert "[OK] CREATE_FILE" in prompt


def test_the_echo_is_read_from_the_session_line_after_the_drafts(tmp_path: Path) -> None:
    """A Session line after drafts names the prompt the reply answers: one for another session
    is refused, as a reply that starts with it is (before, the drafts hid it)."""
    started(tmp_path)
    text = DRAFTED["plain text"].format(
        drafts=DRAFTS, echo="Session: 0badc0de Sequence: 1", answer=ANSWER
    )
    reply = tmp_path / "reply.txt"
    reply.write_text(text)
    result = agent(tmp_path, "step", str(reply), "--commands", "allow")
    assert "it names session 0badc0de" in result.output
    assert ran(tmp_path / "workspace") == []


def test_a_session_line_inside_a_file_body_is_content(tmp_path: Path) -> None:
    session = started(tmp_path)
    fixture = (
        '[CREATE_FILE path="fixture.txt"]\nSession: 0badc0de Sequence: 7\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\ntouch after-the-fixture\n[/RUN_COMMAND]\n"
    )
    prompt = stepped(tmp_path, f"Session: {session} Sequence: 1\n{fixture}")
    assert ran(tmp_path / "workspace") == ["after-the-fixture", "fixture.txt"]
    assert NOT_RUN[2:] not in prompt


def test_a_session_line_after_every_command_cuts_nothing(tmp_path: Path) -> None:
    session = started(tmp_path)
    echo = f"Session: {session} Sequence: 1"
    prompt = stepped(tmp_path, f"{echo}\n{ANSWER}All done for {echo}.\n")
    assert ran(tmp_path / "workspace") == ["hello.py"]
    assert "before your reply's Session line" not in prompt


def test_a_reply_that_is_all_draft_runs_nothing_and_says_so(tmp_path: Path) -> None:
    """Commands, then a Session line and nothing after it: the answer was never written (cut
    off); nothing runs."""
    session = started(tmp_path)
    prompt = stepped(tmp_path, f"Draft:\n{DRAFTS}\nSession: {session} Sequence: 1\n")
    assert ran(tmp_path / "workspace") == []
    assert f"[NOTE] {NOT_RUN}" in prompt


def test_a_reply_without_a_session_line_is_read_whole(tmp_path: Path) -> None:
    started(tmp_path)
    prompt = stepped(tmp_path, f"Here is my response:\n{ANSWER}{DRAFTS}")
    assert ran(tmp_path / "workspace") == ["draft.py", "hello.py", "ran-in-thinking"]
    assert "Session line" not in prompt.split("## Previous Command Results")[1]


def endpoint_run(root: Path, *answers: str) -> ScriptedModel:
    with ScriptedModel(*(Say(a) for a in answers)) as model:
        (root / "codingagent.toml").write_text(
            f'[models.m]\napi = "openai"\nbase_url = "{model.url}"\nmodel = "scripted-1"\n'
        )
        result = agent(root, "start", "Write hello.py", "--model", "m", "--commands", "allow")
    assert result.exit_code == 0, result.output
    return model


def test_commands_before_the_session_line_never_run_from_an_endpoint(tmp_path: Path) -> None:
    """The endpoint binds its replies, so the echo decides nothing; the Session line still
    says where the answer starts (here it names no session of ours: applied, noted)."""
    drafted = DRAFTED["Cohere's thinking"].format(
        drafts=DRAFTS, echo="Session: 0123abcd Sequence: 1", answer=ANSWER
    )
    model = endpoint_run(tmp_path, drafted, DONE)
    assert ran(tmp_path / "workspace") == ["hello.py"]
    told = model.requests[1]["messages"][-1]["content"]
    assert f"[NOTE] {NOT_RUN}" in told
    assert "your reply named Session 0123abcd" in told


def test_an_endpoint_reply_without_a_session_line_is_read_whole(tmp_path: Path) -> None:
    model = endpoint_run(tmp_path, f"Here is my thought process:\n{DRAFTS}\n{ANSWER}", DONE)
    assert ran(tmp_path / "workspace") == ["draft.py", "hello.py", "ran-in-thinking"]
    assert "Session line" not in model.requests[1]["messages"][-1]["content"]


def test_line_numbers_and_the_echo_of_a_drafted_reply() -> None:
    text = f"Plan:\n{DRAFTS}Session: 0123abcd Sequence: 4\n{ANSWER}"
    commands, problems = read_reply(text.encode(), 10**6, None)
    assert [(c.name, c.line) for c in commands] == [("CREATE_FILE", 9)]
    assert problems[0].command == "NOTE" and "(reply line 8)" in problems[0].summary
    assert reply_echo(text) == ("0123abcd", 4)
    lines = split_lines(text)
    start = answer_start(lines)
    assert start.line == 7 and [span.command.name for span in start.drafted] == [
        "CREATE_FILE",
        "RUN_COMMAND",
    ]
    assert answer_start(lines, parse_spans(lines)) == start


SESSION = "Session: 0123abcd Sequence: 1\n"


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from([DRAFTS, ANSWER, DONE, "prose\n", "```\n", SESSION])),
    after=st.lists(st.sampled_from([DRAFTS, ANSWER, "prose\n", "```\n"]), min_size=1),
)
def test_only_what_follows_the_last_session_line_a_command_follows_runs(
    before: list[str], after: list[str]
) -> None:
    answer = "".join(after)
    if not parse(answer):
        answer += ANSWER  # the answer holds a command, so its Session line is the one
    reply = "".join(before) + SESSION + answer
    commands = commands_and_slips(reply)[0]
    assert [c.name for c in commands] == [c.name for c in parse(answer)]


def test_the_clipboard_lists_only_the_answer_s_commands(tmp_path: Path) -> None:
    prompt = Prompt("0123abcd", 1, tmp_path / "outbox" / "0123abcd_seq0001.txt", "")
    drafted = DRAFTED["plain text"].format(drafts=DRAFTS, echo=SESSION.strip(), answer=ANSWER)
    assert is_reply(drafted, prompt)  # its Session line names this prompt, after the drafts
    assert what_it_would_do(drafted) == "  CREATE_FILE hello.py"
    stale = drafted.replace("Sequence: 1", "Sequence: 0")
    assert not is_reply(stale, prompt)  # its echo is the Session line's, not missing
