"""The session loop (codingagent.session.loop) driven by a scripted reply source and a
recording listener.

The source and the listener are the two seams of the loop: real front ends (the console, the
inbox watcher) are tested through the CLI; here the loop's own decisions are.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import Listener, Prompt, Reply, Stop, StopReason, TurnReport
from codingagent.settings import Settings, SettingsError
from codingagent.state import CommandResult, SessionError
from codingagent.transaction.undo import UndoReport


class ScriptedSource:
    """Hands over the replies it was given, one per prompt, then ends (or raises ``then``)."""

    description = "a script"

    def __init__(self, *replies: str, then: BaseException | None = None) -> None:
        self.replies = list(replies)
        self.then = then
        self.prompts: list[int] = []
        self.done: list[tuple[str, bool]] = []

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        self.prompts.append(prompt.sequence)
        if not self.replies:
            if self.then is not None:
                raise self.then
            return None
        return Reply(self.replies.pop(0).encode(), source=f"script {len(self.prompts)}")

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        self.done.append((reply.source, report.skipped))


class Recording(Listener):
    """A listener that writes down what it was told."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.events: list[str] = []
        self.asked: list[str] = []
        self.stops: list[Stop] = []

    def note(self, text: str) -> None:
        self.events.append(f"note {text}")

    def progress(self, text: str | None) -> None:
        self.events.append(f"progress {text}")

    def reply_received(self, reply: Reply) -> None:
        self.events.append(f"reply {reply.source}")

    @contextmanager
    def running(self, command: str) -> Iterator[None]:
        self.events.append(f"running {command}")
        yield

    def approve(self, command: str) -> bool:
        self.asked.append(command)
        return self.answer

    def answer_question(self, question: str) -> str | None:
        self.events.append(f"question {question}")
        return None

    def result(self, result: CommandResult) -> None:
        self.events.append(f"result {result.headline}")

    def turn_applied(self, report: TurnReport) -> None:
        self.events.append(f"turn {report.state.sequence_number - 1}")

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        self.events.append(f"prompt {prompt.sequence}")

    def undone(self, report: UndoReport) -> None:
        self.events.append(f"undone {report.turns}")

    def watching(self, source: object) -> None:
        self.events.append("watching")

    def stopped(self, stop: Stop) -> None:
        self.stops.append(stop)


def open_loop(
    root: Path, listener: Recording, automatic: bool = False, **settings: object
) -> SessionLoop:
    store = SessionStore(root)
    state, _ = start_session(store, "the task")
    return SessionLoop(
        store,
        Settings(clipboard=False, **settings),
        state.session_id,
        listener,
        automatic=automatic,
        shell=Shell(timeout=10, sandbox="none"),
    )


MESSAGE = "[MESSAGE]\n{}\n[/MESSAGE]\n"


def test_the_loop_applies_each_reply_and_stops_when_the_session_is_complete(tmp_path):
    listener = Recording()
    source = ScriptedSource(MESSAGE.format("one"), "[DONE]\nall done\n[/DONE]\n", "never read")
    with open_loop(tmp_path, listener) as loop:
        stop = loop.run(source)

    assert stop.reason is StopReason.COMPLETE
    assert source.prompts == [1, 2]
    assert source.replies == ["never read"]
    assert source.done == [("script 1", False), ("script 2", False)]
    events = [e for e in listener.events if not e.startswith(("note", "result"))]
    assert events == [
        *("prompt 1", "watching"),
        *("reply script 1", "turn 1", "prompt 2"),
        *("reply script 2", "turn 2"),  # a complete session gets no further prompt
    ]


def test_the_turn_limit_stops_the_loop_after_the_turn_that_reaches_it(tmp_path):
    listener = Recording()
    source = ScriptedSource(MESSAGE.format("a"), MESSAGE.format("b"), MESSAGE.format("c"))
    with open_loop(tmp_path, listener, max_turns=2) as loop:
        stop = loop.run(source)
        assert stop.reason is StopReason.TURN_LIMIT
        assert "reached max_turns (2)" in stop.message
        assert source.prompts == [1, 2]
        with pytest.raises(SessionError, match="reached max_turns"):
            loop.prepare()


def test_ctrl_c_in_the_source_stops_the_loop_and_the_session_resumes(tmp_path):
    listener = Recording()
    source = ScriptedSource(MESSAGE.format("a"), then=KeyboardInterrupt())
    with open_loop(tmp_path, listener) as loop:
        stop = loop.run(source)
    assert stop.reason is StopReason.INTERRUPTED
    assert f"codingagent resume {loop.session_id}" in stop.message
    assert listener.stops == [stop]
    assert loop.store.load(loop.session_id).sequence_number == 2


def test_a_source_that_ends_ends_the_loop(tmp_path):
    with open_loop(tmp_path, Recording()) as loop:
        assert loop.run(ScriptedSource()).reason is StopReason.SOURCE_ENDED


def test_stop_from_another_thread_ends_a_waiting_source(tmp_path):
    class Waiting(ScriptedSource):
        def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
            stop.wait(10)
            return None

    with open_loop(tmp_path, Recording()) as loop:
        threading.Timer(0.05, loop.stop).start()
        assert loop.run(Waiting()).reason is StopReason.SOURCE_ENDED


def test_a_duplicate_reply_is_skipped_and_gets_no_new_prompt(tmp_path):
    listener = Recording()
    source = ScriptedSource(MESSAGE.format("same"), MESSAGE.format("same"))
    with open_loop(tmp_path, listener) as loop:
        loop.run(source)
    assert source.done == [("script 1", False), ("script 2", True)]
    assert listener.events.count("prompt 2") == 1


def test_approval_ask_goes_to_the_listener_and_deny_refuses_without_asking(tmp_path):
    reply = "[RUN_COMMAND]\necho hi > ran.txt\n[/RUN_COMMAND]\n"
    asked = Recording(answer=False)
    with open_loop(tmp_path / "ask", asked, commands="ask") as loop:
        loop.run(ScriptedSource(reply))
    assert asked.asked == ["echo hi > ran.txt"]
    assert "result [FAILED] RUN_COMMAND: not approved by the user" in asked.events
    [note] = [e for e in asked.events if e.startswith("note RUN_COMMAND:")]
    assert note.startswith("note RUN_COMMAND: no OS sandbox") and note.endswith("approval: ask")

    denied = Recording(answer=True)
    with open_loop(tmp_path / "deny", denied, commands="deny") as loop:
        loop.run(ScriptedSource(reply))
    assert denied.asked == []
    assert not (tmp_path / "deny/workspace/ran.txt").exists()


def test_a_second_loop_on_the_same_session_is_refused_by_the_lock(tmp_path):
    with open_loop(tmp_path, Recording()) as loop:
        other = SessionLoop(loop.store, loop.settings, loop.session_id, Recording())
        with pytest.raises(SessionError, match="already being watched"), other:
            pass


def test_undo_rewinds_and_offers_the_prompt_again(tmp_path):
    listener = Recording()
    create = '[CREATE_FILE path="a.txt"]\nhello\n[/CREATE_FILE]\n'
    with open_loop(tmp_path, listener) as loop:
        loop.run(ScriptedSource(create))
        assert (tmp_path / "workspace/a.txt").exists()
        loop.undo()
    assert not (tmp_path / "workspace/a.txt").exists()
    assert listener.events[-2:] == ["undone [1]", "prompt 1"]


# --- automatic runs (a model answers): they end by themselves ---------------------------------


def test_an_automatic_run_stops_after_model_max_turns(tmp_path):
    replies = [MESSAGE.format(n) for n in range(5)]
    listener = Recording()
    with open_loop(tmp_path, listener, automatic=True, model_max_turns=3, commands="deny") as loop:
        stop = loop.run(ScriptedSource(*replies))
        assert stop.reason is StopReason.TURN_LIMIT
        assert stop.message.startswith("Stopped after 3 model turns (model_max_turns)")
        assert loop.store.load(loop.session_id).sequence_number == 4
        # The limit is per run: the next run takes up to three more.
        assert loop.run(ScriptedSource(*replies[3:])).reason is StopReason.SOURCE_ENDED


def test_a_run_by_hand_has_no_model_turn_limit_and_no_idle_stop(tmp_path):
    replies = ["prose", "more prose", *(MESSAGE.format(n) for n in range(3))]
    with open_loop(tmp_path, Recording(), model_max_turns=1) as loop:
        assert loop.run(ScriptedSource(*replies)).reason is StopReason.SOURCE_ENDED
        assert loop.store.load(loop.session_id).sequence_number == 6


def test_two_replies_in_a_row_without_commands_stop_an_automatic_run(tmp_path):
    source = ScriptedSource("prose", MESSAGE.format("a"), "prose", "", "never asked")
    with open_loop(tmp_path, Recording(), automatic=True, commands="deny") as loop:
        stop = loop.run(source)
    assert stop.reason is StopReason.NO_COMMANDS
    assert "two replies in a row ran no command" in stop.message
    assert source.replies == ["never asked"]  # an empty reply counts as one without commands


def test_two_refused_replies_in_a_row_stop_an_automatic_run_saying_why(tmp_path):
    same = MESSAGE.format("same")
    source = ScriptedSource(same, same, same, "never asked")
    with open_loop(tmp_path, Recording(), automatic=True, commands="deny") as loop:
        stop = loop.run(source)
    assert stop.reason is StopReason.REFUSED
    assert stop.message.startswith(
        "Stopped: two replies in a row were not applied; the last: This reply is identical to "
        "the one applied in turn 1 (script 1); it was skipped."
    )
    assert source.done == [("script 1", False), ("script 2", True), ("script 3", True)]


def test_an_automatic_run_without_sandbox_or_terminal_needs_the_commands_setting(tmp_path):
    with (
        open_loop(tmp_path / "a", Recording(), automatic=True) as loop,
        pytest.raises(SettingsError, match="unattended, and no OS sandbox"),
    ):
        loop.run(ScriptedSource(MESSAGE.format("a")))
    for policy in ("allow", "deny"):
        with open_loop(tmp_path / policy, Recording(), automatic=True, commands=policy) as loop:
            assert loop.run(ScriptedSource()).reason is StopReason.SOURCE_ENDED
