"""Admission (docs/admission.md): which text is a reply to which prompt, for every source.

The table of cases is :func:`codingagent.session.admission.rule`; the end-to-end tests drive a
real scripted model over HTTP (tests/scripted_model.py), the real CLI and real turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from scripted_model import Say, ScriptedModel

from codingagent.frontends.cli import main
from codingagent.frontends.exits import Exit
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.admission import Ruling, rule
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply

SID = "ab12cd34"
OTHER = "0badc0de"
NEXT = f"start your next reply with `Session: {SID} Sequence: 5`"

# (echo session, echo sequence, what the source knows it answers) -> the ruling, at prompt 4.
CASES = {
    # --- unbound sources (inbox, step, clipboard): the echo is the evidence -----------------
    "no echo": ((None, None, None), Ruling()),
    "the right echo": ((SID, 4, None), Ruling()),
    "only the sequence, right": ((None, 4, None), Ruling()),
    "another session": (
        (OTHER, 4, None),
        Ruling(True, f"it names session {OTHER}, but it was given to session {SID}"),
    ),
    "an older prompt": (
        (SID, 3, None),
        Ruling(True, "it answers prompt 3, but the session is at prompt 4"),
    ),
    "an older prompt, no session": (
        (None, 1, None),
        Ruling(True, "it answers prompt 1, but the session is at prompt 4"),
    ),
    "a later prompt": (
        (SID, 9, None),
        Ruling(note=f"your reply named Sequence 9, but it answered prompt 4; {NEXT}"),
    ),
    # --- bound sources (endpoint, page): the echo is never a reason to refuse ---------------
    "bound, the right echo": ((SID, 4, 4), Ruling()),
    "bound, no echo": (
        (None, None, 4),
        Ruling(note=f"your reply did not say which prompt it answers (prompt 4); {NEXT}"),
    ),
    "bound, half an echo": (
        (SID, None, 4),
        Ruling(note=f"your reply did not say which prompt it answers (prompt 4); {NEXT}"),
    ),
    "bound, an older sequence": (
        (SID, 3, 4),
        Ruling(note=f"your reply named Sequence 3, but it answered prompt 4; {NEXT}"),
    ),
    "bound, another session": (
        (OTHER, 4, 4),
        Ruling(
            note=f"your reply named Session {OTHER}, but it answered session {SID}, prompt 4; "
            f"{NEXT}"
        ),
    ),
    "bound to a prompt that is gone (a stale page)": (
        (SID, 3, 3),
        Ruling(True, "it was given for prompt 3, but the session is at prompt 4"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_table_of_cases(case: str) -> None:
    (session, sequence, answers), ruling = CASES[case]
    assert rule((session, sequence), SID, 4, answers) == ruling


# The relay bound the reply itself (Reply.tool_bound): a missing echo is no note, a wrong one
# still is, a stale binding is still refused.
TOOL_BOUND = {
    "no echo": ((None, None, 4), Ruling()),
    "half an echo": ((SID, None, 4), Ruling()),
    "the right echo": ((SID, 4, 4), Ruling()),
    "an older sequence": CASES["bound, an older sequence"],
    "another session": CASES["bound, another session"],
    "a prompt that is gone": CASES["bound to a prompt that is gone (a stale page)"],
}


@pytest.mark.parametrize("case", sorted(TOOL_BOUND))
def test_a_reply_the_tool_bound_needs_no_echo(case: str) -> None:
    (session, sequence, answers), ruling = TOOL_BOUND[case]
    assert rule((session, sequence), SID, 4, answers, echo_needed=False) == ruling


# --- through real turns --------------------------------------------------------------------


def session_at_prompt_1(tmp_path: Path) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    state, _ = start_session(store, "t", store.workspace)
    return store, state.session_id


def test_a_bound_reply_with_a_wrong_echo_is_applied_and_the_model_is_told(tmp_path):
    store, sid = session_at_prompt_1(tmp_path)
    reply = f'Session: {OTHER} Sequence: 7\n[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'
    bound = Reply(reply.encode(), "model m", answers=1)
    report = apply_reply(store, sid, bound, TurnOptions(shell=Shell(timeout=5)))
    assert not report.skipped and report.notes == []
    assert (store.workspace / "a.txt").read_text() == "a\n"
    note = (
        f"[NOTE] your reply named Session {OTHER}, but it answered session {sid}, prompt 1; "
        f"start your next reply with `Session: {sid} Sequence: 2`"
    )
    assert report.outcome.results[0].headline == note
    assert report.outbox is not None and note in report.outbox.read_text()


def test_the_same_reply_unbound_is_refused_and_the_user_told_what_to_paste(tmp_path):
    store, sid = session_at_prompt_1(tmp_path)
    reply = f'Session: {OTHER} Sequence: 1\n[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'
    report = apply_reply(store, sid, Reply(reply.encode(), "r.txt"), TurnOptions(shell=Shell()))
    assert report.skipped and not (store.workspace / "a.txt").exists()
    assert report.refusal is not None
    assert report.refusal.to_model == f"it names session {OTHER}, but it was given to session {sid}"
    assert report.notes[0].startswith(
        f"The reply r.txt was not applied: it names session {OTHER}, but it was given to "
        f"session {sid}. It is kept as "
    )
    assert report.notes[0].endswith(
        f"Otherwise paste the reply to prompt 1 (it starts with 'Session: {sid} Sequence: 1')."
    )


# --- a model run, end to end ---------------------------------------------------------------

SOLVE = '[MESSAGE]\nworking\n[/MESSAGE]\n[READ_FILE path="hello.py"]\n'
DONE = "[DONE]\nfinished\n[/DONE]\n"


def agent(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root)])


def profile(root: Path, url: str) -> None:
    (root / "codingagent.toml").write_text(
        f'[models.scripted]\nbase_url = "{url}"\nmodel = "scripted-1"\n'
    )


def session_id(root: Path) -> str:
    (path,) = (root / "sessions").glob("*.json")
    return json.loads(path.read_text())["sessionId"]


def asked(model: ScriptedModel, n: int) -> str:
    return model.requests[n]["messages"][-1]["content"]


def test_a_model_answer_naming_the_wrong_sequence_is_applied_and_the_next_request_says_so(
    tmp_path,
):
    with ScriptedModel(Say("Session: 0badc0de Sequence: 9\n" + SOLVE), Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == 0, result.output
    sid = session_id(tmp_path)
    assert (
        f"[NOTE] your reply named Session 0badc0de, but it answered session {sid}, prompt 1; "
        f"start your next reply with `Session: {sid} Sequence: 2`"
    ) in asked(model, 1)


def test_a_refused_model_answer_is_never_met_with_the_same_request_and_the_run_exits_5(tmp_path):
    with ScriptedModel(Say(SOLVE), Say(SOLVE), Say(SOLVE), Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == Exit.REFUSED == 5, result.output
    sid = session_id(tmp_path)
    assert len(model.requests) == 3  # the third answer, refused again, ends the run
    told = (
        "Your last reply was not applied: it is identical to the one applied in turn 1 (model "
        "scripted-1), so it was not applied again. Answer the prompt below; start your reply "
        f"with `Session: {sid} Sequence: 2`.\n\n"
    )
    assert asked(model, 2) == told + asked(model, 1)
    assert "Stopped: two replies in a row were not applied" in result.output


def test_a_model_run_that_stops_unfinished_exits_with_the_code_of_its_cause(tmp_path):
    with ScriptedModel(Say("Let me think."), Say("More thinking.")) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "t", "--model", "scripted")
    assert result.exit_code == Exit.NO_COMMANDS == 4, result.output
    with ScriptedModel(Say(DONE)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "resume", "--model", "scripted")
    assert result.exit_code == 0, result.output
