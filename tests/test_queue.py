"""A queue of tasks (docs/queue.md), driven through the command line: a scripted model on a
real 127.0.0.1 HTTP server answers unattended (tests/scripted_model.py); real ``codingagent``
processes are killed with SIGKILL and resumed, or fed replies through inbox/ and skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from scripted_model import Fail, Say, ScriptedModel, Stall
from terminal import Terminal
from test_clipboard import needs_x, running_agent, wait_for, x_display  # noqa: F401
from xserver import clipboard_text, copy

from codingagent.frontends.cli import main
from codingagent.frontends.exits import Exit
from codingagent.queue.tasks import parse_tasks
from codingagent.records.queues import QueueStore
from codingagent.records.store import SessionStore
from codingagent.state import SessionError

DONE = "[DONE]\nDid task {}.\n[/DONE]\n"
PROSE = "Let me think about it."  # runs no command: two in a row stop a model's session
PROSE_2 = "Still thinking."
AGENT = (sys.executable, "-m", "codingagent")
MODEL = ("--model", "scripted", "--commands", "allow")
UNSANDBOXED = ("--sandbox", "none", "--commands", "deny")
WORK = '[CREATE_FILE path="t{0}.txt"]\ntask {0}\n[/CREATE_FILE]\n'


def agent(root: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root)], env=env)


def profile(root: Path, url: str) -> None:
    (root / "codingagent.toml").write_text(
        f'[models.scripted]\nbase_url = "{url}"\nmodel = "scripted-1"\n'
    )


def the_queue(root: Path) -> dict:
    (path,) = (root / "sessions" / "queues").glob("*.json")
    return json.loads(path.read_text())


def summary(root: Path) -> dict:
    shown = agent(root, "queue", "--json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)


def session_of(root: Path, session_id: str) -> dict:
    return json.loads((root / "sessions" / f"{session_id}.json").read_text())


# --- unattended, with a model ----------------------------------------------------------------


def test_a_model_runs_three_tasks_and_the_second_failing_does_not_stop_the_third(tmp_path):
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("Write t1.txt\n\nWrite t2.txt,\nover two lines\n\nWrite t3.txt\n")
    script = [Say(WORK.format(1)), Say(DONE.format(1)), Say(PROSE), Say(PROSE_2)]
    with ScriptedModel(*script, Say(WORK.format(3)), Say(DONE.format(3))) as model:
        profile(tmp_path, model.url)
        result = agent(
            tmp_path, "start", "--tasks", str(tasks), "--model", "scripted", "--commands", "allow"
        )

    assert result.exit_code == Exit.QUEUE_INCOMPLETE, result.output  # one task did not complete
    assert "Task 1/3: Write t1.txt" in result.output
    assert "Task 2/3: Write t2.txt, over two lines" in result.output
    assert "Task 3/3: Write t3.txt" in result.output
    assert "Task 2/3 stopped: Stopped: two replies in a row ran no command" in result.output
    assert "Task 3/3 completed: Did task 3." in result.output
    queue = summary(tmp_path)
    rows = queue["summary"]
    assert [row["task"] for row in rows] == [
        "Write t1.txt",
        "Write t2.txt,\nover two lines",
        "Write t3.txt",
    ]
    assert [row["outcome"] for row in rows] == ["completed", "stopped", "completed"]
    assert [row["turns"] for row in rows] == [2, 2, 2]
    assert [row["tokensIn"] for row in rows] == [2000, 2000, 2000]
    assert rows[0]["reason"] == "Did task 1." and "ran no command" in rows[1]["reason"]
    assert not queue["succeeded"]
    # One session each, on the same workspace, each with its own history.
    sessions = [row["session"] for row in rows]
    assert len(set(sessions)) == 3
    for number, session_id in enumerate(sessions, start=1):
        state = session_of(tmp_path, session_id)
        assert state["task"] == rows[number - 1]["task"]
        assert state["isComplete"] is (number != 2)
        assert len(SessionStore(tmp_path).turns(session_id)) == 2
    assert sorted(p.name for p in (tmp_path / "workspace").iterdir()) == ["t1.txt", "t3.txt"]
    # Each task's first request is its own session's first prompt.
    first_prompts = [model.requests[i]["messages"][-1]["content"] for i in (0, 2, 4)]
    for session_id, prompt in zip(sessions, first_prompts, strict=True):
        assert prompt.startswith(f"=== HEADER ===\nSession: {session_id}\nSequence: 1\n")
    # The table on the console names all three.
    table = result.output[result.output.index(f"Queue {queue['queueId']}\n") :]
    for session_id in sessions:
        assert session_id in table


def test_every_task_completed_is_exit_0_and_several_arguments_make_a_queue(tmp_path):
    with ScriptedModel(Say(DONE.format(1)), Say(DONE.format(2))) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "one", "two", "--model", "scripted")
    assert result.exit_code == 0, result.output
    assert [t["outcome"] for t in the_queue(tmp_path)["tasks"]] == ["completed", "completed"]
    assert summary(tmp_path)["succeeded"] is True


def test_an_endpoint_failing_for_good_stops_its_task_only(tmp_path):
    fails = [Fail(500, "overloaded", retry_after="0") for _ in range(3)]
    with ScriptedModel(Say(DONE.format(1)), *fails, Say(DONE.format(3))) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "a", "b", "c", "--model", "scripted")
    assert result.exit_code == Exit.QUEUE_INCOMPLETE, result.output
    tasks = the_queue(tmp_path)["tasks"]
    assert [t["outcome"] for t in tasks] == ["completed", "stopped", "completed"]
    assert "answered HTTP 500: overloaded; gave up after 3 attempts" in tasks[1]["reason"]
    assert session_of(tmp_path, tasks[1]["sessionId"])["sequenceNumber"] == 1  # intact


def test_stop_on_failure_halts_the_queue_at_the_first_task_that_stops(tmp_path):
    with ScriptedModel(Say(PROSE), Say(PROSE_2)) as model:
        profile(tmp_path, model.url)
        result = agent(tmp_path, "start", "a", "b", "--model", "scripted", "--stop-on-failure")
        assert result.exit_code == Exit.QUEUE_INCOMPLETE, result.output
        assert "The queue halted: task 1 stopped and --stop-on-failure is set" in result.output
        queue = the_queue(tmp_path)
        assert [t["outcome"] for t in queue["tasks"]] == ["stopped", "pending"]
        assert queue["tasks"][1]["sessionId"] is None and len(model.requests) == 2

        # resume goes on from the task that halted it, then the rest.
        model.steps += [Say(DONE.format(1)), Say(DONE.format(2))]
        again = agent(tmp_path, "resume", "--model", "scripted")
    assert again.exit_code == 0, again.output
    assert "Task 1/2: a" in again.output and "Task 2/2: b" in again.output
    tasks = the_queue(tmp_path)["tasks"]
    assert [t["outcome"] for t in tasks] == ["completed", "completed"]
    assert tasks[0]["sessionId"] == queue["tasks"][0]["sessionId"]
    assert the_queue(tmp_path)["halted"] == ""


def test_tasks_come_from_the_settings_file_when_none_is_given(tmp_path):
    with ScriptedModel(Say(DONE.format(1)), Say(DONE.format(2))) as model:
        profile(tmp_path, model.url)
        settings = tmp_path / "codingagent.toml"
        settings.write_text('tasks = ["from the settings", "and another"]\n' + settings.read_text())
        result = agent(tmp_path, "start", "--model", "scripted")
    assert result.exit_code == 0, result.output
    tasks = the_queue(tmp_path)["tasks"]
    assert [t["task"] for t in tasks] == ["from the settings", "and another"]
    assert [t["outcome"] for t in tasks] == ["completed", "completed"]


def test_no_task_at_all_is_a_usage_error(tmp_path):
    result = agent(tmp_path, "start")
    assert result.exit_code == 2
    assert "Give a TASK" in result.output and not (tmp_path / "sessions").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('["a", 3]', "must be a list of texts"),
        ('["a", ', "is not a valid JSON array"),
        ("tasks = [", "is not valid TOML"),
        ('["a", "  "]', "task 2 is empty"),
        ("\n\n  \n", "holds no task"),
    ],
)
def test_a_bad_task_file_is_one_clear_line_and_nothing_starts(tmp_path, text, problem):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(text)
    result = agent(tmp_path, "start", "--tasks", str(tasks))
    assert result.exit_code == 1, result.output
    assert problem in result.output and "Traceback" not in result.output
    assert not (tmp_path / "sessions" / "queues").exists()


def test_task_files_may_be_json_or_toml_arrays():
    assert parse_tasks('["one", "two\\nlines"]') == ["one", "two\nlines"]
    assert parse_tasks('tasks = ["one", """two\nlines"""]\n') == ["one", "two\nlines"]
    assert parse_tasks("one\r\n\r\ntwo\r\nmore\n \n\nthree") == ["one", "two\nmore", "three"]


line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1).filter(
    lambda t: t.strip() and not t.strip().startswith(("[", "tasks"))
)


@given(st.lists(st.lists(line, min_size=1, max_size=3), min_size=1, max_size=5))
def test_blocks_of_lines_come_back_as_the_tasks_they_were(blocks):
    tasks = ["\n".join(text.strip() for text in block) for block in blocks]
    assert parse_tasks("\n\n".join(tasks)) == tasks


def test_a_settings_file_in_the_workspace_cannot_set_the_tasks(tmp_path):
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "codingagent.toml").write_text('tasks = ["rm -rf"]\n')
    from codingagent.settings import load_settings

    settings = load_settings(tmp_path / "workspace", workspaces=[tmp_path / "workspace"])
    assert settings.tasks == ()
    assert any(line.startswith("Ignored tasks = ") for line in settings.ignored)


# --- durable: kill -9 in task 3, then resume -----------------------------------------------


@pytest.mark.slow  # a whole agent process per case
def test_a_queue_killed_in_task_3_resumes_there_and_runs_4_and_5(tmp_path):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([f"task {n}" for n in range(1, 6)]))
    with ScriptedModel(Say(DONE.format(1)), Say(DONE.format(2)), Stall(WORK.format(3))) as model:
        profile(tmp_path, model.url)
        process = subprocess.Popen(
            [*AGENT, "start", "--tasks", str(tasks), *MODEL, "--root", str(tmp_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
        )
        try:
            deadline = time.monotonic() + 60
            while not model.stalled.is_set() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert model.stalled.is_set()  # task 3's first answer is half sent
            process.send_signal(signal.SIGKILL)
            _, stderr = process.communicate(timeout=20)
        finally:
            process.kill()
            model.release.set()
        assert process.returncode == -signal.SIGKILL, stderr.decode()
        killed = the_queue(tmp_path)["tasks"]
        assert [t["outcome"] for t in killed] == ["completed"] * 2 + ["running"] + ["pending"] * 2
        third = killed[2]["sessionId"]
        assert session_of(tmp_path, third)["sequenceNumber"] == 1

        model.steps += [Say(WORK.format(3)), Say(DONE.format(3))]
        model.steps += [Say(DONE.format(4)), Say(DONE.format(5))]
        result = agent(tmp_path, "resume", "--model", "scripted", "--commands", "allow")

    assert result.exit_code == 0, result.output
    assert "Task 3/5: task 3" in result.output and "Task 1/5" not in result.output
    tasks_after = the_queue(tmp_path)["tasks"]
    assert [t["outcome"] for t in tasks_after] == ["completed"] * 5
    assert tasks_after[2]["sessionId"] == third  # task 3 went on in its own session
    assert len(SessionStore(tmp_path).turns(third)) == 2
    assert (tmp_path / "workspace" / "t3.txt").read_text() == "task 3\n"
    assert len({t["sessionId"] for t in tasks_after}) == 5


# --- replies from inbox/, and a skip -----------------------------------------------------------


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
def test_with_inbox_replies_the_next_prompt_is_written_at_once_and_a_skip_moves_on(tmp_path):
    """A real watcher process runs a 3-task queue on inbox/ files; `queue --skip` (what the
    page's button does) skips task 1, a reply completes task 2, and Ctrl-C then stops it."""
    env = {**os.environ, "NO_COLOR": "1", "CODINGAGENT_CLIPBOARD": "false"}
    process = subprocess.Popen(
        [*AGENT, "start", "one", "two", "three", *UNSANDBOXED, "--poll", "--root", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seen: list[str] = []

    def until(text: str) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"{text!r} never came:\n{''.join(seen)}")

    try:
        until("Task 1/3: one")
        until("Watching")
        skipped = agent(tmp_path, "queue", "--skip")
        assert skipped.exit_code == 0, skipped.output
        until("Task 1/3 skipped: skipped on request")
        until("Task 2/3: two")
        until("Watching")
        second = the_queue(tmp_path)["tasks"][1]["sessionId"]
        assert (tmp_path / "outbox" / f"{second}_seq0001.txt").is_file()
        reply = f"Session: {second} Sequence: 1\n" + DONE.format(2)
        (tmp_path / "inbox" / "reply.txt").write_text(reply)
        until("Task 2/3 completed: Did task 2.")
        until("Task 3/3: three")
        until("Watching")
        third = the_queue(tmp_path)["tasks"][2]["sessionId"]
        assert (tmp_path / "outbox" / f"{third}_seq0001.txt").is_file()
        process.send_signal(signal.SIGINT)
        until(f"stopped. Continue it with: codingagent resume {third}")
        assert process.wait(timeout=20) == 130
    finally:
        process.kill()
        process.wait()
    tasks = the_queue(tmp_path)["tasks"]
    assert [t["outcome"] for t in tasks] == ["skipped", "completed", "running"]
    assert list((tmp_path / "sessions" / "queues").glob("*.skip")) == []  # the request used up


def test_queue_lists_the_latest_queue_and_says_when_there_is_none(tmp_path):
    none = agent(tmp_path, "queue")
    assert none.exit_code == 1 and "No queues yet" in none.output
    assert agent(tmp_path, "start", "a", "b", "--no-watch").exit_code == 0
    shown = agent(tmp_path, "queue")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout
    assert "running" in lines and "pending" in lines and " a " in lines and " b " in lines


def test_a_skip_with_no_task_running_is_refused(tmp_path):
    store = SessionStore(tmp_path)
    queues = QueueStore(store)
    queue = queues.create(["a"], None, False)
    with pytest.raises(SessionError, match="runs no task now"):
        queues.request_skip(queue.queue_id)


@pytest.mark.slow  # a whole agent process per case
def test_ctrl_c_on_a_terminal_offers_to_skip_the_task_and_the_queue_goes_on(tmp_path):
    with ScriptedModel(Stall(WORK.format(1)), Say(DONE.format(2))) as model:
        profile(tmp_path, model.url)
        args = ("start", "one", "two", *MODEL, "--root", str(tmp_path))
        try:
            with Terminal(*args) as terminal:
                deadline = time.monotonic() + 60
                while not model.stalled.is_set() and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert model.stalled.is_set()  # task 1's answer is half sent
                terminal.process.send_signal(signal.SIGINT)
                terminal.wait_for(b"or stop the queue (q)?")
                terminal.send(b"s\n")
                assert terminal.wait(timeout=20) == Exit.QUEUE_INCOMPLETE
        finally:
            model.release.set()
    text = terminal.seen.decode(errors="replace")
    assert "Task 1/2 skipped: skipped with Ctrl-C" in text
    tasks = the_queue(tmp_path)["tasks"]
    assert [t["outcome"] for t in tasks] == ["skipped", "completed"]
    assert session_of(tmp_path, tasks[0]["sessionId"])["sequenceNumber"] == 1  # nothing applied


# --- the clipboard: the next task's first prompt is copied ------------------------------------


@pytest.mark.slow  # a real X clipboard, read on its poll
@needs_x
def test_with_the_clipboard_the_next_tasks_prompt_is_copied_when_one_completes(
    tmp_path,
    x_display,  # noqa: F811
):
    def prompt_copied(task: int) -> bool:
        session_id = the_queue(tmp_path)["tasks"][task]["sessionId"]
        if session_id is None:
            return False
        outbox = tmp_path / "outbox" / f"{session_id}_seq0001.txt"
        return outbox.is_file() and clipboard_text() == outbox.read_text()

    command = ["start", "one", "two", "--clipboard", *UNSANDBOXED]
    with running_agent(tmp_path, *command) as process:
        queues = tmp_path / "sessions" / "queues"
        wait_for(lambda: queues.is_dir() and any(queues.glob("*.json")), "the queue", process)
        wait_for(lambda: prompt_copied(0), "task 1's first prompt on the clipboard", process)
        first = the_queue(tmp_path)["tasks"][0]["sessionId"]
        copy(f"Session: {first} Sequence: 1\n" + DONE.format(1))
        wait_for(lambda: prompt_copied(1), "task 2's first prompt on the clipboard", process)
        second = the_queue(tmp_path)["tasks"][1]["sessionId"]
        copy(f"Session: {second} Sequence: 1\n" + DONE.format(2))
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Task 1/2 completed: Did task 1." in err and "Task 2/2: two" in err
    assert err.count("Prompt 1 is on the clipboard: paste it into the chat") == 2
