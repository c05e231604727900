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
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
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

STYLES = ["one block", "a block each", "unfenced", "prose tags"]  # turn n answers in STYLES[n-1]
FENCED = {"one block", "a block each"}
RAN = "__ran__.txt"  # what the answer's RUN_COMMAND writes
RAN_TEXT = "**ran** <&>"
SESSION = re.compile(r"Session: ([0-9a-f]{8})")
SEQUENCE = re.compile(r"Sequence: (\d+)")


def answer(turn: int, session: str) -> str:
    """Turn ``turn``'s answer: its style's files in a folder of its own (t1/, t2/, ...)."""
    style = STYLES[turn - 1]
    return files_reply(style, session=session, sequence=turn, folder=f"t{turn}/")


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with xserver.xvfb() as name:
        yield name


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, display: str) -> Iterator[Browser]:
    with extension_browser(tmp_path_factory.mktemp("chromium"), display=display) as bench:
        yield bench


def scripted(prompt: str) -> str:
    """The chat's answer to a prompt: its turn's answer, naming its session."""
    session, sequence = SESSION.search(prompt), SEQUENCE.search(prompt)
    return answer(int(sequence.group(1)) if sequence else 1, session.group(1) if session else "")


def check_turn(root: Path, turn: int) -> None:
    """Turn ``turn`` as the issue wants it: exact, or refused with the reason and nothing
    done; and read from the page (its record says rendered)."""
    workspace, style = root / "workspace", STYLES[turn - 1]
    folder = workspace / f"t{turn}"
    if style in FENCED:
        for path in PATHS:
            wait_until((folder / path).exists, f"turn {turn}: {path} written")
            assert (folder / path).read_bytes() == CONTENT.encode(), (turn, path)
        wait_until((workspace / RAN).exists, f"turn {turn}: the command run")
        assert (workspace / RAN).read_text() == RAN_TEXT
        (workspace / RAN).unlink()  # the next turn's run writes it again
    else:
        following = wait_until(
            lambda: sorted((root / "outbox").glob(f"*_seq{turn + 1:04d}.txt")), f"prompt {turn + 1}"
        )
        prompt = following[0].read_text()
        # Each command refused; where the page ran a command's lines together (a soft line
        # break is a space on the page), the one command the parser then sees is.
        reply = next(root.glob(f"sessions/*/turns/{turn:04d}/reply.txt")).read_text()
        assert RENDERED_REFUSAL in prompt, reply
        results = prompt.split("## Previous Command Results", 1)[1].split("===", 1)[0]
        assert "[OK]" not in results, results
        assert not folder.exists() and not (workspace / RAN).exists()  # nothing done
    meta = wait_until(lambda: list(root.glob(f"sessions/*/turns/{turn:04d}/meta.json")), "meta")
    assert json.loads(meta[0].read_text())["rendered"] is True


def test_the_extension_reads_the_page_exactly_or_refuses(browser: Browser, tmp_path: Path) -> None:
    """Four turns, one answer style each, each applied by the Apply under the answer: the page
    has no Copy, so the extension reads the answer from the page."""
    browser.fixtures.answer = scripted
    with relay_agent(tmp_path, task="write the files") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("rendered.html")
        browser.attach(popup, chat)
        for turn in range(1, len(STYLES) + 1):
            wait_until(partial(lambda n: len(sent(chat)) == n, turn), f"prompt {turn} sent")
            apply = chat.get_by_role("button", name="Apply", exact=True)
            wait_until(apply.count, f"turn {turn}'s Apply")
            apply.click()
            check_turn(tmp_path, turn)
            if STYLES[turn - 1] not in FENCED:  # the reason, beside the answer and on the terminal
                note = chat.locator("codingagent-apply span").nth(turn - 1)
                wait_until(partial(reason_shown, note), "the reason shown")
                agent.wait_for("read from the chat's rendered page")


def test_apply_selection_reads_the_selection_exactly_or_refuses(
    browser: Browser, tmp_path: Path
) -> None:
    browser.fixtures.answer = scripted
    with relay_agent(tmp_path, task="write the files") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("rendered.html", "?unmarked")
        browser.attach(popup, chat)
        for turn in range(1, len(STYLES) + 1):
            wait_until(partial(lambda n: len(sent(chat)) == n, turn), f"prompt {turn} sent")
            select_answer(chat, turn)
            chat.locator("codingagent-relay button.selection").click()
            check_turn(tmp_path, turn)


def test_a_selection_copied_with_ctrl_c_is_read_from_its_html(
    browser: Browser, tmp_path: Path, display: str
) -> None:
    with clipboard_agent(tmp_path, display) as session:
        chat = browser.open_chat("rendered.html", "?unmarked")
        for turn in range(1, len(STYLES) + 1):
            wait_until(partial(prompt_written, tmp_path, turn), f"prompt {turn}")
            chat.evaluate("markdown => fixtureShow(markdown)", answer(turn, session))
            select_answer(chat, turn)
            chat.keyboard.press("Control+c")
            check_turn(tmp_path, turn)


def reason_shown(note: Any) -> bool:
    return "rendered page" in note.inner_text()


def prompt_written(root: Path, turn: int) -> bool:
    return any((root / "outbox").glob(f"*_seq{turn:04d}.txt"))


def select_answer(chat: Any, turn: int) -> None:
    """Select the whole of answer ``turn`` once it is whole (drawn, and the same 300 ms on)."""
    last = "[...document.querySelectorAll('.bubble')].at(-1)"
    count = "document.querySelectorAll('.bubble').length"
    wait_until(lambda: chat.evaluate(count) == turn, f"answer {turn}")
    drawn = None
    while not (now := chat.evaluate(f"{last}.innerHTML")) or now != drawn:
        drawn = now
        chat.wait_for_timeout(300)
    chat.evaluate(f"getSelection().selectAllChildren({last})")


@contextmanager
def clipboard_agent(root: Path, display: str) -> Iterator[str]:
    """``codingagent start --clipboard`` on ``display``, its session id once its first prompt
    is on the clipboard; stopped with Ctrl-C after."""
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
