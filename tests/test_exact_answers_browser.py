"""Exact through the chat's page, in a real browser (docs/protocol.md, "Answers read from a
rendered page").

Debian's Chromium, not headless but on a private X server (Xvfb), so that Ctrl+C writes the
real X clipboard, with the extension loaded; the fixture chat page ``rendered.html`` draws
answers as the big chats do (tests/chat_render.py) and has no Copy under them. Answers in four
styles, whose paths and contents are full of markdown syntax (tests/test_rendered_answers.py),
are each sent three ways:

- the extension's text read: Apply under the answer (the page has no Copy to use);
- Apply selection: the answer selected, the pill's button clicked;
- a real selection copy: the answer selected, Ctrl+C pressed, read by ``start --clipboard``.

The fenced styles write every file byte for byte and run the command; in the other two every
command that writes or runs is refused with the reason, and nothing is written or run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import xserver
from relaying import interrupt, relay_agent
from test_extension_chats import (
    CHROMIUM,
    Browser,
    extension_browser,
    sent,
    wait_until,
)
from test_rendered_answers import CONTENT, PATHS, files_reply

from codingagent.protocol.codeblocks import RENDERED_REFUSAL

pytestmark = [
    pytest.mark.slow,  # a real browser and real agents
    pytest.mark.skipif(
        not (CHROMIUM.exists() and xserver.available()),
        reason="needs Debian's chromium, Xvfb and xclip (apt-get install chromium xvfb xclip)",
    ),
]

STYLES = ["one block", "a block each", "unfenced", "prose tags"]
FENCED = {"one block", "a block each"}
RAN = "__ran__.txt"  # what the answer's RUN_COMMAND writes
RAN_TEXT = "**ran** <&>"
SESSION = re.compile(r"Session: ([0-9a-f]{8})")


def answer(style: str, session: str) -> str:
    return files_reply(style, session=session)


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with xserver.xvfb() as name:
        yield name


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, display: str) -> Iterator[Browser]:
    with extension_browser(tmp_path_factory.mktemp("chromium"), display=display) as bench:
        yield bench


def scripted(style: str) -> Any:
    def reply(prompt: str) -> str:
        found = SESSION.search(prompt)
        return answer(style, found.group(1) if found else "00000000")

    return reply


def check_turn(root: Path, style: str) -> None:
    """The turn as the issue wants it: exact, or refused with the reason and nothing done."""
    workspace = root / "workspace"
    if style in FENCED:
        for path in PATHS:
            wait_until((workspace / path).exists, f"{path} written")
            assert (workspace / path).read_bytes() == CONTENT.encode(), path
        wait_until((workspace / RAN).exists, "the command run")
        assert (workspace / RAN).read_text() == RAN_TEXT
        return
    following = wait_until(lambda: sorted((root / "outbox").glob("*_seq0002.txt")), "prompt 2")
    prompt = following[0].read_text()
    # Each command refused; where the page ran a command's lines together (a soft line break
    # is a space on the page), the one command the parser then sees is.
    reply = next(root.glob("sessions/*/turns/0001/reply.txt")).read_text()
    assert RENDERED_REFUSAL in prompt, reply
    results = prompt.split("## Previous Command Results", 1)[1]
    assert "[OK]" not in results.split("===", 1)[0], results
    assert not [p for p in workspace.rglob("*") if p.is_file()]  # nothing written, nothing run


@pytest.mark.parametrize("style", STYLES)
def test_the_extension_reads_the_page_exactly_or_refuses(
    browser: Browser, tmp_path: Path, style: str
) -> None:
    browser.fixtures.answer = scripted(style)
    with relay_agent(tmp_path, task="write the files") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("rendered.html")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        chat.locator("codingagent-apply button", has_text="Apply").click()
        check_turn(tmp_path, style)
        (meta,) = wait_until(lambda: list(tmp_path.glob("sessions/*/turns/0001/meta.json")), "meta")
        assert json.loads(meta.read_text())["rendered"] is True
        if style not in FENCED:  # the reason, beside the answer and on the terminal
            note = chat.locator("codingagent-apply span").first
            wait_until(lambda: "rendered page" in note.inner_text(), "the reason shown")
            agent.wait_for("read from the chat's rendered page")


@pytest.mark.parametrize("style", STYLES)
def test_apply_selection_reads_the_selection_exactly_or_refuses(
    browser: Browser, tmp_path: Path, style: str
) -> None:
    browser.fixtures.answer = scripted(style)
    with relay_agent(tmp_path, task="write the files") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("rendered.html", "?unmarked")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        finished(chat)
        chat.evaluate("getSelection().selectAllChildren(document.querySelector('.bubble'))")
        chat.locator("codingagent-relay button.selection").click()
        check_turn(tmp_path, style)


@pytest.mark.parametrize("style", STYLES)
def test_a_selection_copied_with_ctrl_c_is_read_from_its_html(
    browser: Browser, tmp_path: Path, display: str, style: str
) -> None:
    with clipboard_agent(tmp_path, display) as session:
        chat = browser.open_chat("rendered.html", "?unmarked")
        chat.evaluate("markdown => fixtureShow(markdown)", answer(style, session))
        finished(chat)
        chat.evaluate("getSelection().selectAllChildren(document.querySelector('.bubble'))")
        chat.keyboard.press("Control+c")
        check_turn(tmp_path, style)
        # Read from the copy's HTML: the turn's record says so.
        (meta,) = wait_until(lambda: list(tmp_path.glob("sessions/*/turns/0001/meta.json")), "meta")
        assert json.loads(meta.read_text())["rendered"] is True


def finished(chat: Any) -> None:
    """The streamed answer is whole (its last step drawn)."""
    wait_until(
        lambda: chat.evaluate("document.querySelector('.bubble, .message.assistant') !== null"),
        "the answer",
    )
    text = ""
    while True:
        chat.wait_for_timeout(400)
        now = chat.evaluate(
            "(document.querySelector('.bubble, .message.assistant') || {}).innerHTML"
        )
        if now == text:
            return
        text = now


@contextmanager
def clipboard_agent(root: Path, display: str) -> Iterator[str]:
    """``codingagent start --clipboard`` on ``display``, its session id once its first prompt
    is written; stopped with Ctrl-C after."""
    assert shutil.which("xclip")
    process = subprocess.Popen(
        [sys.executable, "-m", "codingagent", "start", "t", "--clipboard", "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "DISPLAY": display, "NO_COLOR": "1"},
    )
    try:
        first = wait_until(lambda: sorted((root / "outbox").glob("*_seq0001.txt")), "prompt 1")
        wait_until(lambda: clipboard_holds(display, "=== HEADER ==="), "the prompt copied")
        yield first[0].name.split("_")[0]
    finally:
        interrupt(process)


def clipboard_holds(display: str, text: str) -> bool:
    found = subprocess.run(
        ["xclip", "-selection", "clipboard", "-o"],
        env={"DISPLAY": display},
        capture_output=True,
        text=True,
        check=False,
    )
    return text in found.stdout
