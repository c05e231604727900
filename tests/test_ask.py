"""ASK: the LLM asks the user; the turn ends there, no reply is applied until the user answers
(``codingagent answer`` or the watcher's terminal), and the answer is in the next prompt."""

from __future__ import annotations

from pathlib import Path

from executing import headlines, put, run
from invoking import run as cli
from test_loop import Recording, ScriptedSource, open_loop

from codingagent.protocol.parser import parse
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import StopReason
from codingagent.settings import Settings

ASK = "[ASK]\nShould the port be 8080 or 9090?\n[/ASK]\n"


def test_ask_ends_the_turn_and_later_commands_say_they_did_not_run(ws) -> None:
    put(ws, "a.txt", "a\n")
    reply = f'[MESSAGE]\nfirst\n[/MESSAGE]\n{ASK}[DELETE_FILE path="a.txt"]\n[DONE]\nx\n[/DONE]\n'
    outcome = run(ws, *parse(reply))
    assert headlines(outcome) == [
        "[OK] MESSAGE: Shown to the user",
        "[OK] ASK: Asked the user; the answer comes in the next message under Answers",
        "[FAILED] DELETE_FILE: Not run: the turn ended at the [ASK] on reply line 4; send it "
        "again once you have the answer",
        "[FAILED] DONE: Not run: the turn ended at the [ASK] on reply line 4; send it again "
        "once you have the answer",
    ]
    assert outcome.question == "Should the port be 8080 or 9090?"
    assert (ws.root / "a.txt").exists()
    assert outcome.done is None


def test_an_empty_question_fails_and_the_turn_goes_on(ws) -> None:
    outcome = run(ws, *parse("[ASK][/ASK]\n[MESSAGE]\nhi\n[/MESSAGE]\n"))
    assert headlines(outcome) == [
        "[FAILED] ASK: the question is empty; write it between [ASK] and [/ASK]",
        "[OK] MESSAGE: Shown to the user",
    ]
    assert outcome.question is None


def prompt_of(root: Path, session_id: str, sequence: int) -> Path:
    return root / "outbox" / f"{session_id}_seq{sequence:04d}.txt"


def test_ask_through_step_show_answer_and_the_next_prompt(tmp_path) -> None:
    assert cli(tmp_path, "start", "Make a server", "--no-watch").exit_code == 0
    (session_id,) = SessionStore(tmp_path).ids()

    asked = cli(tmp_path, "step", "latest", "-", input=ASK)
    assert asked.exit_code == 0, asked.output
    assert "The LLM asks: Should the port be 8080 or 9090?" in asked.stderr
    assert not prompt_of(tmp_path, session_id, 2).exists()  # written once answered

    shown = cli(tmp_path, "show")
    assert shown.exit_code == 0
    assert shown.stdout == ""
    assert "waits for your answer to the LLM's question" in shown.stderr
    assert "Should the port be 8080 or 9090?" in shown.stderr
    assert f'codingagent answer {session_id} "..."' in shown.stderr

    early = cli(
        tmp_path, "step", "latest", "-", input='[CREATE_FILE path="x"]\nx\n[/CREATE_FILE]\n'
    )
    assert early.exit_code == 0
    assert "was not applied: the session waits for your answer" in early.stderr
    assert not (tmp_path / "workspace/x").exists()
    (kept,) = (tmp_path / "sessions" / session_id / "refused").glob("*/reply.txt")
    assert "CREATE_FILE" in kept.read_text()
    assert not prompt_of(tmp_path, session_id, 2).exists()

    resumed = cli(tmp_path, "resume", "--no-watch")
    assert resumed.exit_code == 1
    assert "waits for your answer to the LLM's question" in resumed.stderr

    answered = cli(tmp_path, "answer", session_id[:4], "9090, please")
    assert answered.exit_code == 0, answered.output
    prompt = prompt_of(tmp_path, session_id, 2)
    assert f"Next prompt: {prompt}" in answered.stderr
    text = prompt.read_text()
    assert (
        "## Answers\nYou asked: Should the port be 8080 or 9090?\nThe user answered: 9090, please"
    ) in text
    assert "[OK] ASK: Asked the user" in text
    assert cli(tmp_path, "show").stdout == text

    again = cli(tmp_path, "answer", "more")
    assert again.exit_code == 1
    assert "has no question waiting for an answer" in again.stderr

    after = cli(tmp_path, "step", "latest", "-", input="[MESSAGE]\nok\n[/MESSAGE]\n")
    assert after.exit_code == 0
    assert "## Answers" not in prompt_of(tmp_path, session_id, 3).read_text()


class Answering(Recording):
    """A listener whose user answers the LLM's questions at the terminal."""

    def __init__(self, reply: str | None) -> None:
        super().__init__()
        self.reply = reply
        self.questions: list[str] = []

    def answer_question(self, question: str) -> str | None:
        self.questions.append(question)
        return self.reply


def terminal_loop(root: Path, listener: Recording) -> SessionLoop:
    """A loop whose user can answer at its front end, as on a terminal."""
    loop = open_loop(root, listener)
    return SessionLoop(
        loop.store,
        Settings(clipboard=False),
        loop.session_id,
        listener,
        interactive=True,
        shell=Shell(timeout=10, sandbox="none"),
    )


def test_the_loop_asks_the_user_at_its_front_end_and_goes_on(tmp_path) -> None:
    listener = Answering("8080")
    source = ScriptedSource(ASK, "[DONE]\nserver on 8080\n[/DONE]\n")
    with terminal_loop(tmp_path, listener) as loop:
        stop = loop.run(source)
    assert stop.reason is StopReason.COMPLETE
    assert listener.questions == ["Should the port be 8080 or 9090?"]
    assert source.prompts == [1, 2]
    (prompt,) = (tmp_path / "outbox").glob("*_seq0002.txt")
    assert "The user answered: 8080" in prompt.read_text()


def test_without_an_answer_the_loop_stops_and_says_how_to_answer(tmp_path) -> None:
    listener = Answering(None)
    source = ScriptedSource(ASK, "never read")
    with terminal_loop(tmp_path, listener) as loop:
        stop = loop.run(source)
        assert stop.reason is StopReason.QUESTION
        assert f'codingagent answer {loop.session_id} "..."' in stop.message
        assert source.replies == ["never read"]
        listener.reply = "9090"
        prompt = loop.prepare()  # `resume` on a terminal asks again
    assert prompt is not None and prompt.sequence == 2
    assert "The user answered: 9090" in prompt.text


def test_a_reply_with_a_diff_and_no_commands_is_told_to_wrap_it_in_patch(tmp_path) -> None:
    listener = Recording()
    reply = "Here is the fix:\n```diff\n--- a/x\n+++ b/x\n@@\n-a\n+b\n```\n"
    with open_loop(tmp_path, listener) as loop:
        loop.run(ScriptedSource(reply))
    (prompt,) = (tmp_path / "outbox").glob("*_seq0002.txt")
    assert (
        "[FAILED] REPLY: Your reply has a diff (reply line 2) but no commands, so nothing was "
        "applied; to apply a diff, put it between a [PATCH] line and a [/PATCH] line"
    ) in prompt.read_text()


def test_the_terminal_prompt_takes_an_answer_and_an_empty_line_or_eof_is_none() -> None:
    from click.testing import CliRunner

    from codingagent.frontends.approval import answer_on_terminal
    from codingagent.frontends.console_listener import ConsoleListener

    listener = ConsoleListener(ask=lambda command: False, answer=answer_on_terminal)
    for typed, expected in (("9090\n", "9090"), ("\n", None), ("", None)):
        with CliRunner().isolation(input=typed):
            assert listener.answer_question("Which port?") == expected
    assert ConsoleListener(ask=lambda command: False).answer_question("Which port?") is None


def test_undo_of_the_asking_turn_drops_the_question(tmp_path) -> None:
    cli(tmp_path, "start", "Make a server", "--no-watch")
    cli(tmp_path, "step", "latest", "-", input=ASK)
    assert "asks" in cli(tmp_path, "sessions").stdout
    assert cli(tmp_path, "undo").exit_code == 0
    (session_id,) = SessionStore(tmp_path).ids()
    state = SessionStore(tmp_path).load(session_id)
    assert (state.question, state.sequence_number) == (None, 1)
    assert cli(tmp_path, "show").stdout.startswith("=== HEADER ===")
