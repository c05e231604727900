"""A whole session through the relay: ``codingagent start --relay`` in a subprocess, driven as
the extension drives it (pair, long-poll /prompt, post /reply) with scripted replies; then the
same behind a forwarded port, as with ``ssh -L`` for an agent on another machine
(docs/relay.md)."""

from __future__ import annotations

import signal
import socket
import sys
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from invoking import run
from relaying import Agent, Forwarder, RelayClient, relay_agent

from codingagent.frontends.cli import main

ARGS = ("--commands", "allow", "--sandbox", "none")
CREATE = '[CREATE_FILE path="notes/a.txt"]\nfirst line\n[/CREATE_FILE]\n'
RUN = "[RUN_COMMAND]\ncp notes/a.txt b.txt && echo copied\n[/RUN_COMMAND]\n"
DONE = "[DONE]\nmade a.txt and its copy\n[/DONE]\n"


def three_turns(agent: Agent, client: RelayClient, workspace: Path) -> None:
    """Pair, then CREATE_FILE, RUN_COMMAND and DONE, one prompt each; a stale answer to
    the first prompt, posted again after it, is refused and changes nothing."""
    paired = client.pair(agent.code)
    session = paired["session"]
    first = client.prompt()
    assert first["prompt_id"] == f"{session}:1"
    assert f"Session: {session}" in first["text"]

    turn1 = client.reply(first["prompt_id"], CREATE)  # no Session/Sequence line: none needed
    assert turn1["applied"] is True and turn1["refused"] is None
    assert turn1["results"] == ["[OK] CREATE_FILE: Created 'notes/a.txt'"], "no [NOTE] about it"
    assert turn1["next_prompt_id"] == f"{session}:2" and turn1["done"] is False

    stale = client.reply(first["prompt_id"], RUN)
    assert stale["applied"] is False
    assert stale["refused"] == "it was given for prompt 1, but the session is at prompt 2"
    assert stale["next_prompt_id"] == f"{session}:2"
    assert not (workspace / "b.txt").exists(), "a stale answer runs nothing"

    second = client.prompt(after=first["prompt_id"])
    assert second["prompt_id"] == turn1["next_prompt_id"]
    assert "Created 'notes/a.txt'" in second["text"], "the prompt carries the results"
    assert "did not say which prompt" not in second["text"]
    turn2 = client.reply(second["prompt_id"], RUN)
    assert turn2["applied"] is True
    assert any(line.startswith("[OK] RUN_COMMAND") for line in turn2["results"])

    third = client.prompt(after=second["prompt_id"])
    assert "copied" in third["text"]
    turn3 = client.reply(third["prompt_id"], DONE)
    assert turn3 == {
        "applied": True,
        "refused": None,
        "results": turn3["results"],
        "next_prompt_id": None,
        "done": True,
        "review": None,
    }
    assert agent.process.wait(20) == 0
    assert (workspace / "notes" / "a.txt").read_text() == "first line\n"
    assert (workspace / "b.txt").read_text() == "first line\n"
    agent.wait_for("Session complete: made a.txt and its copy")
    assert "was not applied: it was given for prompt 1" in agent.output, "the user is told"


@pytest.mark.slow  # a whole agent process per case
def test_a_three_turn_session_through_the_relay(tmp_path: Path) -> None:
    with relay_agent(tmp_path, *ARGS) as agent:
        client = RelayClient(agent.port, chromium=True)
        try:
            three_turns(agent, client, tmp_path / "workspace")
        finally:
            client.close()
    log = run(tmp_path, "log")
    assert log.exit_code == 0, log.output
    assert "<relay: chat.test>" in log.output, "the history names the relay and the chat"


@pytest.mark.slow  # a whole agent process per case
def test_through_a_forwarded_port_the_same_session_and_the_same_refusals(tmp_path: Path) -> None:
    with relay_agent(tmp_path, *ARGS) as agent, Forwarder(agent.port) as forwarded:
        for stranger in (None, "https://chat.example.com"):
            refused = RelayClient(forwarded.port, stranger)
            assert refused.post("/pair", {"code": agent.code}).status_code == 403
            assert refused.get("/state").status_code == 403
            refused.close()
        client = RelayClient(forwarded.port, chromium=True)
        try:
            assert client.get("/state").status_code == 401, "no token, through the tunnel too"
            three_turns(agent, client, tmp_path / "workspace")
        finally:
            client.close()


def test_the_relay_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = run(tmp_path, "start", "t", "--relay", "--relay-port", str(port), *ARGS)
    assert result.exit_code == 1
    assert f"The relay cannot listen on 127.0.0.1:{port}" in result.output
    assert "--relay-port" in result.output


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--model", "x"), "--relay and --model exclude each other"),
        (("--clipboard",), "--relay and --clipboard exclude each other"),
        (("second task",), "--relay serves one session, not a queue"),
    ],
)
def test_relay_beside_another_source_is_a_usage_error(
    tmp_path: Path, flags: tuple[str, ...], says: str
) -> None:
    result = run(tmp_path, "start", "t", "--relay", *flags)
    assert result.exit_code == 2
    assert says in result.output
    assert not (tmp_path / "sessions").exists(), "no session is made"


def test_codingagent_relay_prints_the_extension_folder_and_how_to_load_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["relay"])
    assert result.exit_code == 0, result.output
    folder = Path(result.stdout.splitlines()[0])
    assert folder.parts[-3:] == ("codingagent", "frontends", "extension")
    assert "chrome://extensions" in result.output
    assert "Developer mode" in result.output and "Load unpacked" in result.output
    assert "about:debugging" in result.output and "Load Temporary Add-on" in result.output


def test_ctrl_c_ends_a_waiting_long_poll_with_stopped_at_once(tmp_path: Path) -> None:
    with relay_agent(tmp_path, *ARGS) as agent:
        client = RelayClient(agent.port, chromium=True)
        try:
            client.pair(agent.code)
            first = client.prompt()
            polled: list[httpx.Response] = []
            poll = threading.Thread(
                target=lambda: polled.append(client.get("/prompt", after=first["prompt_id"]))
            )
            poll.start()
            agent.wait_for("Relay: paired")
            agent.process.send_signal(signal.SIGINT)
            assert agent.process.wait(10) == 130
            poll.join(10)
        finally:
            client.close()
    assert polled[0].status_code == 200
    assert polled[0].json() == {"done": True, "status": "stopped", "summary": "the agent stopped"}
    assert "Continue later with: codingagent resume" in agent.output


@pytest.mark.slow  # a whole agent process per case
def test_resume_relay_serves_the_session_again(tmp_path: Path) -> None:
    started = run(tmp_path, "start", "t", "--no-watch", *ARGS)
    assert started.exit_code == 0, started.output
    command = [sys.executable, "-m", "codingagent", "resume", "--relay", "--relay-port", "0"]
    with relay_agent(tmp_path, *ARGS, command=command) as agent:
        client = RelayClient(agent.port, chromium=True)
        try:
            client.pair(agent.code)
            first = client.prompt()
            done = client.reply(first["prompt_id"], DONE)
        finally:
            client.close()
        assert done["done"] is True
        assert agent.process.wait(10) == 0


@pytest.mark.slow  # a whole agent process per case
def test_ui_relay_serves_the_relay_beside_the_page_and_takes_the_pages_replies_too(
    tmp_path: Path,
) -> None:
    started = run(tmp_path, "start", "t", "--no-watch", *ARGS)
    assert started.exit_code == 0, started.output
    command = [sys.executable, "-m", "codingagent", "ui", "--relay", "--no-open", "--port", "0"]
    with relay_agent(tmp_path, *ARGS, "--relay-port", "0", command=command) as agent:
        agent.wait_for("The page for your chat tab is at the address above")
        page = agent.out[0].strip()
        client = RelayClient(agent.port, chromium=True)
        try:
            session = client.pair(agent.code)["session"]
            first = client.prompt()
            turn1 = client.reply(first["prompt_id"], CREATE)
            assert turn1["applied"] is True
            shown = httpx.get(f"{page}api/sessions/{session}").json()
            assert shown["prompt"]["sequence"] == 2, "the page shows the relay's turn"
            assert shown["turns"][0]["reply"] == "<relay: chat.test>"
            # The relay's loop holds the session: a reply pasted on the page goes into inbox/,
            # where the relay's source takes it; the relay then offers the prompt after it.
            pasted = httpx.post(
                f"{page}api/sessions/{session}/apply", json={"reply": RUN, "sequence": 2}
            )
            assert "queued" in pasted.json()
            third = client.prompt(after=turn1["next_prompt_id"])
            assert third["prompt_id"] == f"{session}:3"
            assert (tmp_path / "workspace" / "b.txt").read_text() == "first line\n"
            assert client.reply(third["prompt_id"], DONE)["done"] is True
            assert httpx.get(f"{page}api/sessions").status_code == 200, "the page goes on"
        finally:
            client.close()
    assert agent.process.returncode == 130, "Ctrl-C stopped the page"


def test_ui_relay_without_a_session_is_a_clear_error(tmp_path: Path) -> None:
    result = run(tmp_path, "ui", "--relay", "--no-open", "--port", "0", "--relay-port", "0")
    assert result.exit_code == 1
    assert "ui --relay serves the relay for a session, and there is none yet" in result.output
