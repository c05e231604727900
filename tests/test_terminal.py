"""The terminal front end leaves no one guessing (issue 26): SESSION is optional where the
latest is the obvious one, every option says what it does, doctor prints readable text, and
``sessions`` lists what it can (a damaged state file is one row saying so)."""

from __future__ import annotations

import re

import click
from click.testing import CliRunner
from invoking import run

from codingagent.frontends.cli import main
from codingagent.records.store import SessionStore
from codingagent.records.summaries import summaries

REPLY = '[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'


def test_step_takes_the_latest_session_when_none_is_named(tmp_path):
    run(tmp_path, "start", "first", "--no-watch", "--sandbox", "none")
    run(tmp_path, "start", "second", "--no-watch", "--sandbox", "none")
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY)
    result = run(tmp_path, "step", str(reply), "--sandbox", "none")
    assert result.exit_code == 0, result.output
    store = SessionStore(tmp_path)
    latest, older = store.ids()
    assert store.load(latest).task == "second"
    assert (store.load(latest).sequence_number, store.load(older).sequence_number) == (2, 1)
    from_stdin = run(
        tmp_path, "step", "-", "--sandbox", "none", input="[MESSAGE]\nhi\n[/MESSAGE]\n"
    )
    assert from_stdin.exit_code == 0, from_stdin.output
    assert store.load(latest).sequence_number == 3


def test_step_says_what_is_wrong_with_its_arguments(tmp_path):
    run(tmp_path, "start", "t", "--no-watch", "--sandbox", "none")
    missing = run(tmp_path, "step", str(tmp_path / "nope.txt"))
    assert missing.exit_code == 2
    assert "is not a file" in missing.stderr
    too_many = run(tmp_path, "step", "a", "b", "c")
    assert too_many.exit_code == 2
    assert "step [SESSION] REPLY" in too_many.stderr


def test_help_says_the_session_is_optional_and_every_option_what_it_does():
    for name, command in main.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and param.name != "help":
                assert param.help and len(param.help.split()) >= 3, (name, param.name)
        text = CliRunner().invoke(main, [name, "--help"]).stdout
        if "[SESSION]" in text.splitlines()[0] and name not in ("doctor",):
            assert "(default: the latest)" in " ".join(text.split()), name


def test_doctor_prints_words_not_python_values(tmp_path):
    (tmp_path / "codingagent.toml").write_text(
        '[models.local]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n'
    )
    result = CliRunner(env={"COLUMNS": "90"}).invoke(main, ["doctor", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert not re.search(r"\bNone\b|\{|\}|\(\)|'auto'|\bTrue\b|\bFalse\b", text), text
    assert re.search(r"^models +\[models\.local\] \(from .*codingagent\.toml\)$", text, re.M)
    assert re.search(r"^max_turns +not set$", text, re.M)
    assert re.search(r"^max_reply_bytes +5,242,880$", text, re.M)
    assert not any(line.startswith(" " * 10) for line in text.splitlines()), "piped: no wrap"


def test_sessions_lists_a_damaged_state_file_and_says_so(tmp_path):
    run(tmp_path, "start", "a good one", "--no-watch", "--sandbox", "none")
    (tmp_path / "sessions" / "0badf00d.json").write_text("{not json")
    result = run(tmp_path, "sessions")
    assert result.exit_code == 0
    assert re.search(r"0badf00d .* damaged", result.stdout)
    assert "a good one" in result.stdout
    assert "damaged session file:" in result.stderr and "0badf00d.json" in result.stderr


def test_the_listed_fields_are_those_of_the_whole_state(tmp_path):
    run(tmp_path, "start", "one", "--no-watch", "--sandbox", "none")
    run(tmp_path, "start", "two", "--no-watch", "--sandbox", "none")
    run(tmp_path, "step", "-", "--sandbox", "none", input="[ASK]\nWhich?\n[/ASK]\n")
    store = SessionStore(tmp_path)
    listed = summaries(store.sessions)
    assert [s.session_id for s in listed] == store.ids()
    for summary in listed:
        state = store.load(summary.session_id)
        assert (summary.task, summary.sequence, summary.complete, summary.question) == (
            state.task,
            state.sequence_number,
            state.is_complete,
            state.question,
        )
        assert summary.updated_at == state.updated_at
    assert [s.status for s in listed] == ["asks", "open"]
