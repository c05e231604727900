"""Answers found by what the page does (docs/relay.md, "Answers on a page no adapter knows"): on
chat pages no adapter knows and whose markup says nothing of which message is the assistant's,
the extension finds the answer as the page writes it, in Chromium and in Firefox ESR, and a
three-turn session takes three clicks (the Apply buttons) and no keystroke.

The pages (tests/chat_fixtures/): ``siblings.html``, every message a plain sibling ``div``
with time stamps between them; ``components.html``, web components whose composer and
messages live in open shadow roots; ``thinking.html``, an answer that is first a moving
"Thinking…" placeholder, then replaced by the answer, which goes on streaming.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import firefox
import pytest
from chat_turns import APPLY, PlaywrightTab, Tab, log, run_turns, wait_until
from relaying import relay_agent
from test_extension_chats import (
    BODY,
    CHAT_HOSTS,
    EXTENSION,
    extension_browser,
    fixture_server,
    scripted,
)
from test_extension_chats import available as chromium_available

pytestmark = pytest.mark.slow  # real browsers, a real agent, answers streamed in real time

PAGES = ["siblings.html", "components.html", "thinking.html"]
SELECTION = (
    "document.querySelector('codingagent-relay').shadowRoot.querySelector('button.selection')"
)

# Keeps every line the pill shows in window.pillSaid (it says how each answer was read).
RECORD_PILL = """(() => {
  const line = document.querySelector("codingagent-relay").shadowRoot.querySelector(".text");
  window.pillSaid = [];
  new MutationObserver(() => window.pillSaid.push(line.textContent)).observe(line, {
    childList: true, characterData: true, subtree: true,
  });
  return true;
})()"""


@dataclass
class Bench:
    """One browser with the extension, driven the same way whichever it is."""

    name: str
    browser: Any  # test_extension_chats.Browser (Chromium) or firefox.Firefox
    popup: Any = None

    @property
    def fixtures(self) -> Any:
        return self.browser.fixtures

    def pair(self, port: int, code: str) -> None:
        if self.name == "chromium":
            if self.popup is not None:
                self.popup.close()
            self.popup = self.browser.pair(port, code)
        else:
            self.browser.pair(port, code)

    def open(self, page: str) -> Tab:
        opened = self.browser.open_chat(page)
        return PlaywrightTab(opened) if self.name == "chromium" else opened

    def attach(self, tab: Tab) -> None:
        if self.name == "chromium":
            assert isinstance(tab, PlaywrightTab)
            self.browser.attach(self.popup, tab.page)
        else:
            self.browser.attach(tab)


@pytest.fixture(scope="module", params=["chromium", "firefox"])
def bench(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Bench]:
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "chromium":
        if not chromium_available():
            pytest.skip("needs Debian's chromium (apt-get install chromium)")
        with extension_browser(folder) as browser:
            yield Bench("chromium", browser)
    else:
        if not firefox.available():
            pytest.skip("needs Firefox ESR (apt-get install firefox-esr)")
        with (
            fixture_server(folder) as fixtures,
            firefox.firefox_browser(folder, fixtures, set(CHAT_HOSTS), EXTENSION) as browser,
        ):
            yield Bench("firefox", browser)


@pytest.mark.parametrize("page", PAGES)
def test_three_turns_on_a_page_no_adapter_knows_take_three_clicks(
    bench: Bench, tmp_path: Path, page: str
) -> None:
    bench.fixtures.answer = scripted(3)
    with relay_agent(tmp_path, task="make two files") as agent:
        bench.pair(agent.port, agent.code)
        chat = bench.open(page)
        bench.attach(chat)
        chat.evaluate(RECORD_PILL)
        run_turns(chat, tmp_path, 3, lambda n: BODY.format(n=n))
        said = [line for line in chat.evaluate("window.pillSaid") if line.startswith("applying")]
        assert len(said) == 3 and all("the answer found on the page" in line for line in said)
        counts = log(chat)
        assert counts["trustedClicks"] == 3  # the three Apply clicks, nothing else
        assert counts["trustedKeys"] == 0
        agent.process.wait(20)
        assert agent.process.returncode == 0
        assert "Task marked complete" in agent.output


def test_apply_selection_stays_the_fallback_and_the_pill_says_so(
    bench: Bench, tmp_path: Path
) -> None:
    """Where the guess is not wanted, the user selects the answer and clicks the pill's Apply
    selection: that text goes, and the pill says it was the selection."""
    bench.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="make a file") as agent:
        bench.pair(agent.port, agent.code)
        chat = bench.open("siblings.html")
        bench.attach(chat)
        chat.evaluate(RECORD_PILL)
        chat.wait(f"Boolean({APPLY})", "the answer found")  # finished; not clicked
        chat.evaluate(
            "getSelection().selectAllChildren([...document.querySelectorAll('#log pre code')]"
            ".pop()), true"
        )
        chat.click(SELECTION)
        made = tmp_path / "workspace" / "turn1.txt"
        wait_until(made.exists, "turn 1 applied")
        assert made.read_text() == BODY.format(n=1)
        said = [line for line in chat.evaluate("window.pillSaid") if line.startswith("applying")]
        assert len(said) == 1 and "the selection" in said[0], said
        assert log(chat)["trustedClicks"] == 1 and log(chat)["trustedKeys"] == 0
