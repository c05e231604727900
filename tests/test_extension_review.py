"""The relay's pill and a held review (docs/review.md, docs/relay.md), on the extension's test
bench (tests/test_extension_chats.py): Chromium with the extension loaded, a fixture chat,
``codingagent ui --relay`` with review on. One Apply holds the answer's file changes; the pill
says a review waits, and its button opens the page at the review; Accept there lets the
session go on, and the next prompt goes into the chat."""

# ruff: noqa: F811  (the bench's fixture is a parameter of the tests)
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chat_turns import wait_until
from invoking import run
from relaying import relay_agent
from test_extension_chats import Browser, available, browser, pill_text, sent  # noqa: F401

pytestmark = [
    pytest.mark.slow,  # real browser, real agent
    pytest.mark.skipif(
        not available(), reason="needs Debian's chromium (apt-get install chromium)"
    ),
]

ARGS = ("--commands", "allow", "--sandbox", "none")
ANSWER = 'Here it is.\n\n```text\n[CREATE_FILE path="made.txt"]\nmade\n[/CREATE_FILE]\n```\n'


def test_the_pill_says_a_review_waits_and_one_click_opens_it_on_the_page(
    browser: Browser, tmp_path: Path
) -> None:
    browser.fixtures.answer = lambda prompt: ANSWER
    started = run(tmp_path, "start", "make a file", "--no-watch", "--review", *ARGS)
    assert started.exit_code == 0, started.output
    command = [sys.executable, "-m", "codingagent", "ui", "--relay", "--no-open", "--port", "0"]
    with relay_agent(tmp_path, *ARGS, "--relay-port", "0", command=command) as agent:
        agent.wait_for("The page for your chat tab is at the address above")
        address = agent.out[0].strip()
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("chatgpt.html")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        chat.locator("codingagent-apply button", has_text="Apply").last.click()

        pill = chat.locator("codingagent-relay .text", has_text="review waiting")
        pill.wait_for()
        assert "1 file, 1 hunk" in pill_text(chat)
        assert not (tmp_path / "workspace" / "made.txt").exists()  # held: nothing written
        button = chat.locator("codingagent-relay button.review")
        button.wait_for(state="visible")
        assert chat.locator("codingagent-apply button").last.inner_text() == "In review"

        with browser.context.expect_page() as opened:
            button.click()
        page = opened.value
        (session,) = [p.stem for p in (tmp_path / "sessions").glob("*.json")]
        page.wait_for_url(f"{address}#{session}")
        page.locator("#review").wait_for(state="visible")
        assert page.locator("#review-files .hunk-check").get_attribute("value") == "1.1"
        assert "+made" in page.locator("#review-files pre").inner_text()
        page.click("#review-accept")

        wait_until(lambda: len(sent(chat)) == 2, "prompt 2 sent after the decision")
        assert (tmp_path / "workspace" / "made.txt").read_text() == "made\n"
        assert "Sequence: 2" in sent(chat)[-1]
        chat.locator("codingagent-relay .text", has_text="prompt 2 sent").wait_for()
        assert button.is_hidden()  # the review is decided: the pill moved on
        page.close()
