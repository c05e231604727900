"""Reasoning in every model's dress is never a command (codingagent/protocol/reasoning.py and
harmony.py): each dress, closed and unclosed, through `codingagent step` and through a model
endpoint that hands the markers on in ``content``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples, sampled
from scripted_model import Say, ScriptedModel
from test_reasoning import ANSWER, DONE, DRAFTS, agent, turn_meta

from codingagent.protocol.parser import split_lines
from codingagent.protocol.reasoning import BARE_HARMONY, DRESSES, HARMONY, split_reasoning
from codingagent.protocol.replies import read_reply
from codingagent.protocol.scan import COMMANDS
from codingagent.records.store import SessionStore
from codingagent.session.seams import Prompt
from codingagent.sources.clipboard import is_reply, what_it_would_do
from codingagent.sources.providers.wire import Streamed

HARMONY_CLOSED = (
    f"<|channel|>analysis<|message|>Let me draft.\n{DRAFTS}<|end|>"
    f"<|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>"
)
# Each dress as a model writes it: closed (the answer after it) and unclosed (cut off: the
# answer's commands written inside the reasoning, or never reached).
REPLIES = {
    "think": (f"<think>\n{DRAFTS}</think>\n{ANSWER}", f"<think>\n{DRAFTS}{ANSWER}"),
    "thinking": (f"<thinking>\n{DRAFTS}</thinking>\n{ANSWER}", f"<thinking>\n{DRAFTS}{ANSWER}"),
    "reasoning": (
        f"<reasoning>\n{DRAFTS}</reasoning>\n{ANSWER}",
        f"<reasoning>\n{DRAFTS}{ANSWER}",
    ),
    "seed:think": (
        f"<seed:think>Let me draft.\n{DRAFTS}</seed:think>{ANSWER}",
        f"<seed:think>Let me draft.\n{DRAFTS}{ANSWER}",
    ),
    "magistral": (
        f"[THINK]Let me draft.\n{DRAFTS}[/THINK]\n{ANSWER}",
        f"[THINK]\n{DRAFTS}{ANSWER}",
    ),
    "kimi": (f"◁think▷Let me draft.\n{DRAFTS}◁/think▷{ANSWER}", f"◁think▷\n{DRAFTS}{ANSWER}"),
    "begin_of_thought": (
        f"<|begin_of_thought|>\n\n{DRAFTS}\n<|end_of_thought|>\n\n{ANSWER}",
        f"<|begin_of_thought|>\n\n{DRAFTS}{ANSWER}",
    ),
    "harmony": (HARMONY_CLOSED, f"<|channel|>analysis<|message|>Let me draft.\n{DRAFTS}{ANSWER}"),
    "harmony whose server dropped its special tokens": (
        f"analysisWe need hello.py.\n{DRAFTS}assistantfinal{ANSWER}",
        f"analysisWe need hello.py.\n{DRAFTS}{ANSWER}",
    ),
    "harmony with its role and a tool call": (
        f"<|start|>assistant<|channel|>analysis<|message|>Draft.\n{DRAFTS}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.run <|constrain|>json<|message|>"
        f'{{"cmd": "touch ran-in-thinking"}}\n{DRAFTS}<|call|>'
        f"<|start|>assistant<|channel|>final<|message|>\n{ANSWER}<|return|>",
        f"<|start|>assistant<|channel|>analysis<|message|>Draft.\n{DRAFTS}<|end|>"
        "<|start|>assistant<|channel|>final",
    ),
}
CASES = [(dress, closed) for dress in REPLIES for closed in (True, False)]


def test_the_table_of_dresses_is_the_one_these_tests_cover() -> None:
    written = "".join(closed for closed, _ in REPLIES.values())
    for dress in (*DRESSES, HARMONY, BARE_HARMONY):
        assert dress.opening in written and dress.closing in written, dress


def session(root: Path) -> str:
    (state,) = (root / "sessions").glob("*.json")
    return str(json.loads(state.read_text())["sessionId"])


def assert_applied(workspace: Path, closed: bool) -> None:
    """Nothing of the reasoning ran or was written; the answer's file only when it closed."""
    assert not (workspace / "ran-in-thinking").exists()
    assert not (workspace / "draft.py").exists()
    assert (workspace / "hello.py").is_file() is closed
    assert [p.name for p in workspace.iterdir()] == (["hello.py"] if closed else [])


@pytest.mark.parametrize(("dress", "closed"), sampled(CASES))
def test_a_reply_in_each_dress_through_step(tmp_path: Path, dress: str, closed: bool) -> None:
    assert agent(tmp_path, "start", "Write hello.py", "--no-watch").exit_code == 0
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLIES[dress][0 if closed else 1], encoding="utf-8")
    result = agent(tmp_path, "step", str(reply), "--commands", "allow")
    assert result.exit_code == 0, result.output
    assert_applied(tmp_path / "workspace", closed)
    prompt = SessionStore(tmp_path).outbox_path(session(tmp_path), 2).read_text()
    told = re.search(r"\[FAILED\] REPLY: Your reply(?:'s reasoning| starts with)[^\n]*", prompt)
    assert (told is None) is closed, prompt
    assert told is None or "nothing in it or after it was run" in told.group()
    assert "is not a command" not in prompt  # [THINK] read as reasoning is no slip
    log = agent(tmp_path, "log").output
    assert "thought for" in log and "touch ran-in-thinking" not in log
    assert "| touch ran-in-thinking" in agent(tmp_path, "log", "--thinking").output


@pytest.mark.parametrize(("dress", "closed"), sampled(CASES, first=1))
def test_a_reply_in_each_dress_from_an_endpoint(tmp_path: Path, dress: str, closed: bool) -> None:
    with ScriptedModel(Say(REPLIES[dress][0 if closed else 1]), Say(DONE)) as model:
        (tmp_path / "codingagent.toml").write_text(
            f'model_history_turns = 1\n[models.m]\napi = "openai"\nbase_url = "{model.url}"\n'
            'model = "scripted-1"\n'
        )
        result = agent(tmp_path, "start", "Write hello.py", "--model", "m", "--commands", "allow")
    assert result.exit_code == 0, result.output
    assert "characters (never run" in result.output  # the console counts the thinking
    assert_applied(tmp_path / "workspace", closed)
    assert "thinking" not in turn_meta(tmp_path)  # the API sent none apart: it was in the text
    told = model.requests[1]["messages"][-1]["content"]
    assert ("nothing in it or after it was run" in told) is not closed
    # The model is sent its answer back with the turn, never its reasoning or harmony's markers.
    (answered,) = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "assistant"]
    assert "ran-in-thinking" not in answered and "<|" not in answered
    assert answered.startswith(ANSWER) if closed else answered.strip() != ""


def test_harmony_whose_server_left_out_the_opening_channel_is_still_thinking() -> None:
    """A template or server that wrote ``<|channel|>analysis<|message|>`` itself."""
    reply = (
        f"We need hello.py.\n{DRAFTS}<|end|><|start|>assistant<|channel|>final<|message|>{ANSWER}"
    )
    reasoned = split_reasoning(reply)
    assert "touch ran-in-thinking" in reasoned.thinking
    assert not reasoned.thinking.endswith(("<|end|>", "assistant"))
    commands, problems = read_reply(reply.encode(), 10**6, None)
    assert [(c.name, c.target) for c in commands] == [("CREATE_FILE", "hello.py")]
    assert commands[0].line == reply.count("\n", 0, reply.index('[CREATE_FILE path="hello')) + 1
    assert all(p.success for p in problems)


@pytest.mark.parametrize("dress", DRESSES, ids=lambda dress: dress.opening)
def test_a_closing_tag_the_template_opened_ends_the_thinking(dress) -> None:
    reply = f"drafting\n{DRAFTS}{dress.closing}\n{DONE}"
    assert [c.name for c in read_reply(reply.encode(), 10**6, None)[0]] == ["DONE"]
    body = f'[CREATE_FILE path="t.txt"]\n{dress.closing}\n[/CREATE_FILE]\n'
    assert split_reasoning(body).answer == body  # a file that holds the tag


def test_a_think_line_read_as_reasoning_is_no_slip_and_one_after_a_command_still_is() -> None:
    reply = f"[THINK]\nplan\n[/THINK]\n{DONE}"
    commands, problems = read_reply(reply.encode(), 10**6, None)
    assert [c.name for c in commands] == ["DONE"] and problems == []
    later = f"{DONE}[THINK]\nplan\n"
    notes = [p.summary for p in read_reply(later.encode(), 10**6, None)[1]]
    ignored = "[THINK] is not a command, so the line was ignored"
    assert notes == [f"reply line 4: {ignored}; the commands are {COMMANDS}"]


MARKERS = [d.opening for d in DRESSES] + [d.closing for d in DRESSES]
HARMONY_MARKERS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>"]
PIECES = [DRAFTS, ANSWER, DONE, "prose\n", "\n", "  ", "analysis", "final", "<", "|", "[", "\r\n"]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=12))
def test_text_without_a_dress_marker_is_returned_unchanged(pieces: list[str]) -> None:
    text = "".join(pieces)
    if any(m.lower() in text.lower() for m in [*MARKERS, *HARMONY_MARKERS, "analysis"]):
        return  # "analysis" opens harmony whose tokens were dropped
    assert split_reasoning(text).answer == text and split_reasoning(text).thinking == ""


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.sampled_from(PIECES + MARKERS + HARMONY_MARKERS), max_size=16))
def test_the_answer_keeps_the_replys_lines(pieces: list[str]) -> None:
    text = "".join(pieces)
    reasoned = split_reasoning(text)
    assert len(split_lines(reasoned.answer)) == len(split_lines(text))
    if reasoned.unclosed is not None:  # nothing of an unclosed reply may run
        assert read_reply(text.encode(), 10**6, None)[0] == [] or text.strip() == ""


@settings(max_examples=examples(300), deadline=None)
@given(
    drafted=st.lists(st.sampled_from([DRAFTS, ANSWER, "prose\n", "\n", *HARMONY_MARKERS[2:]])),
    dress=st.sampled_from(DRESSES),
    lead=st.sampled_from(["", "\n", "  ", "Session: 0123abcd Sequence: 1\n"]),
)
def test_nothing_inside_leading_reasoning_in_any_dress_is_a_command(drafted, dress, lead):
    inside = "".join(d for d in drafted if dress.closing.lower() not in d.lower())
    reply = f"{lead}{dress.opening}\n{inside}{dress.closing}\n{DONE}"
    assert [c.name for c in read_reply(reply.encode(), 10**6, None)[0]] == ["DONE"]
    commands, problems = read_reply(f"{lead}{dress.opening}\n{inside}".encode(), 10**6, None)
    assert commands == [] and any("never closed" in p.summary for p in problems)


ADVERSARIAL = {
    "100k closed blocks": "<think>\n</think>\n" * 100_000 + DONE,
    "100k closed blocks on one line": "<think></think>" * 100_000 + "\n" + DONE,
    "100k openers, never closed": "[THINK]\n" * 100_000,
    "100k analysis messages": "<|channel|>analysis<|message|>x<|end|>" * 100_000 + DONE,
    "100k ends before an orphan final": "<|end|>" * 100_000 + "<|channel|>final<|message|>x",
    "100k orphan closers in bodies": "[MESSAGE]\n" + "</think>\n" * 100_000 + "[/MESSAGE]\n",
    "2 MB of spaces before a marker": " " * 2_000_000 + "x<think>",
}


@pytest.mark.timeout(60)  # the guard against a quadratic scan: no wall-clock assertion
@pytest.mark.parametrize("name", ADVERSARIAL)
def test_adversarial_reasoning_splits_in_linear_time(name: str) -> None:
    text = ADVERSARIAL[name]
    assert len(split_lines(split_reasoning(text).answer)) == len(split_lines(text))


def test_an_echo_in_the_reasoning_is_not_the_replys_echo(tmp_path: Path) -> None:
    """A draft may name any prompt; the answer's echo is the one that counts."""
    assert agent(tmp_path, "start", "Write hello.py", "--no-watch").exit_code == 0
    echo = f"Session: {session(tmp_path)} Sequence: 1"
    reply = tmp_path / "reply.txt"
    reply.write_text(
        f"[THINK]\nLike Session: deadbeef Sequence: 9\n{DRAFTS}[/THINK]\n{echo}\n{ANSWER}"
    )
    result = agent(tmp_path, "step", str(reply), "--commands", "allow")
    assert result.exit_code == 0, result.output
    assert_applied(tmp_path / "workspace", closed=True)


def test_the_clipboard_judges_a_copied_reply_by_its_answer(tmp_path: Path) -> None:
    prompt = Prompt("1a2b3c4d", 3, tmp_path / "outbox" / "1a2b3c4d_seq0003.txt", "")
    final = "<|end|><|start|>assistant<|channel|>final<|message|>"
    harmony = f"<|channel|>analysis<|message|>Plan.{final}[DONE]\nok\n[/DONE]"
    assert is_reply(harmony, prompt)  # its command stands after the markers, on their line
    assert what_it_would_do(harmony) == "  DONE"
    drafted = f"<think>\nSession: 1a2b3c4d Sequence: 2\n{DRAFTS}</think>\n{ANSWER}"
    assert is_reply(drafted, prompt)  # the draft's echo names an older prompt: not its echo
    assert what_it_would_do(drafted) == "  CREATE_FILE hello.py"  # never the drafts


@pytest.mark.parametrize("dress", [*DRESSES, HARMONY], ids=lambda dress: dress.opening)
def test_the_live_line_says_thinking_while_the_text_is_thinking_in_any_dress(dress) -> None:
    streamed = Streamed("m", parts=[dress.opening[:3], dress.opening[3:], "let me see"])
    assert streamed.thinking
    streamed.parts += ["more", dress.closing[:4], dress.closing[4:], "[DONE]"]
    assert not streamed.thinking
    streamed.parts += ["answer"] * 100  # long after the closing: still not thinking
    assert not streamed.thinking
    assert not Streamed("m", parts=["[DONE]\n", dress.opening]).thinking


def test_harmony_without_its_tokens_is_read_only_where_it_cannot_be_prose() -> None:
    prose = f"analysis of the bug: the import is wrong.\n{ANSWER}"
    assert split_reasoning(prose).answer == prose  # no assistantfinal, no capital run in
    streamed = Streamed("m", parts=["analysisWe", " need hello.py"])
    assert streamed.thinking
    streamed.parts += ["assistant", "final", ANSWER]
    assert not streamed.thinking
