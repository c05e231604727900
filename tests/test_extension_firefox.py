"""The extension in Firefox ESR (docs/relay.md): the same sources as in Chromium, installed as a
temporary add-on over WebDriver BiDi (tests/firefox.py says how the bench works), against the
same fixture chat pages, the agent a real ``codingagent start --relay``. The pages no adapter
knows run in both browsers in tests/test_extension_discovery.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_turns import log, run_turns, sent, wait_until
from firefox import ORIGIN, Firefox, available, firefox_browser
from relaying import relay_agent
from test_extension_chats import BODY, CHAT_HOSTS, EXTENSION, fixture_server, scripted

pytestmark = [
    pytest.mark.slow,  # a real browser, a real agent, answers streamed in real time
    pytest.mark.skipif(not available(), reason="needs Firefox ESR (apt-get install firefox-esr)"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Firefox]:
    folder = tmp_path_factory.mktemp("firefox")
    with (
        fixture_server(folder) as fixtures,
        firefox_browser(folder, fixtures, set(CHAT_HOSTS), EXTENSION) as firefox,
    ):
        yield firefox


def body(n: int) -> str:
    return BODY.format(n=n)


def test_firefox_grants_the_host_permissions_the_manifest_asks_for(browser: Firefox) -> None:
    granted = browser.permissions()
    assert "http://127.0.0.1/*" in granted["origins"]
    assert "https://chatgpt.com/*" in granted["origins"]
    assert set(granted["permissions"]) == {"storage", "scripting", "activeTab"}


def test_a_three_turn_session_takes_one_click_per_turn_and_no_keystroke(
    browser: Firefox, tmp_path: Path
) -> None:
    browser.fixtures.answer = scripted(3)
    with relay_agent(tmp_path, task="make two files") as agent:
        browser.pair(agent.port, agent.code)
        assert f"paired with the extension {ORIGIN}" in agent.output
        chat = browser.open_chat("chatgpt.html")
        browser.attach(chat)
        run_turns(chat, tmp_path, 3, body)
        outbox = sorted((tmp_path / "outbox").glob("*_seq*.txt"))
        # Each prompt went in whole, as the agent wrote it.
        assert sent(chat) == [path.read_text() for path in outbox]
        counts = log(chat)
        assert counts["trustedClicks"] == 3  # the three Apply clicks, nothing else
        assert counts["trustedKeys"] == 0
        assert counts["copies"] == 3  # each answer came through ChatGPT's own Copy
        agent.process.wait(20)
        assert agent.process.returncode == 0


@pytest.mark.parametrize(
    "page",
    [
        "claude.html",
        "gemini.html",
        "aistudio.html",
        "deepseek.html",
        "mistral.html",
        "openwebui.html",
    ],
)
def test_each_chat_takes_a_prompt_and_gives_its_answer_on_apply(
    browser: Firefox, tmp_path: Path, page: str
) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="make a file") as agent:
        browser.pair(agent.port, agent.code)
        chat = browser.open_chat(page)
        browser.attach(chat)
        run_turns(chat, tmp_path, 2, body)
        counts = log(chat)
        assert counts["trustedKeys"] == 0 and counts["trustedClicks"] == 2
        has_copy = page not in ("aistudio.html", "deepseek.html")
        assert counts["copies"] == (2 if has_copy else 0)
        chat.close()


def test_a_long_prompt_goes_in_whole(browser: Firefox, tmp_path: Path) -> None:
    """Some 40,000 characters: ChatGPT's editor takes them as one paste (and makes a file)."""
    browser.fixtures.answer = scripted(2)
    task = "Write the notes below into notes.txt.\n" + "a long line of the task. " * 1600
    with relay_agent(tmp_path, task=task) as agent:
        browser.pair(agent.port, agent.code)
        chat = browser.open_chat("chatgpt.html")
        browser.attach(chat)
        wait_until(lambda: len(sent(chat)) == 1, "the long prompt sent", seconds=30)
        outbox = sorted((tmp_path / "outbox").glob("*_seq*.txt"))
        assert len(outbox[0].read_text()) > 40_000
        assert sent(chat)[0] == outbox[0].read_text()
        assert log(chat)["how"][:1] == ["paste"]
        chat.close()


def test_the_turns_go_on_after_firefox_stops_the_idle_event_page(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Firefox stops an idle event page as Chrome stops a service worker (here after 2 s, its
    own pref shortened from 30 s): what it knows is in storage, and the next Apply starts it
    again. Its own browser, so the other tests keep Firefox's default."""
    folder = tmp_path_factory.mktemp("firefox-idle")
    with (
        fixture_server(folder) as fixtures,
        firefox_browser(folder, fixtures, set(CHAT_HOSTS), EXTENSION, idle_ms=2000) as browser,
    ):
        fixtures.answer = scripted(2)
        with relay_agent(tmp_path, task="t") as agent:
            browser.pair(agent.port, agent.code)
            chat = browser.open_chat("mistral.html")
            browser.attach(chat)
            wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
            wait_until(lambda: not browser.background_running(), "the event page stopped")
            run_turns(chat, tmp_path, 2, body)
            assert len(sent(chat)) == 2  # prompt 1 was not sent again after the restart
