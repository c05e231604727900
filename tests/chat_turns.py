"""Turns in an attached chat tab, the same in either browser: a tab is anything with
``evaluate(expression)``, ``wait(expression, what)`` and ``click(element expression)`` (a
trusted click), as :class:`firefox.FirefoxTab` (WebDriver BiDi) and :class:`PlaywrightTab`
(Chromium through playwright) are."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

# The last Apply button the extension put on the page (each sits in its own shadow root; on a
# page of web components the Apply itself is inside the page's shadow roots).
APPLY = """(() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.tagName === "CODINGAGENT-APPLY") found.push(el.shadowRoot.querySelector("button"));
      else if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found.filter((b) => b.textContent === "Apply").pop();
})()"""
PILL = (
    "(document.querySelector('codingagent-relay')?.shadowRoot"
    "?.querySelector('.text')?.textContent || '')"
)


class Tab(Protocol):
    def evaluate(self, expression: str) -> Any: ...

    def wait(self, expression: str, what: str, seconds: float = 20) -> Any: ...

    def click(self, element: str) -> None: ...


class PlaywrightTab:
    """A playwright page (Chromium) as a :class:`Tab`."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def evaluate(self, expression: str) -> Any:
        return self.page.evaluate(expression)

    def wait(self, expression: str, what: str, seconds: float = 20) -> Any:
        try:
            return self.page.wait_for_function(expression, timeout=seconds * 1000).json_value()
        except Exception as error:
            raise AssertionError(f"timed out waiting for {what} ({expression})") from error

    def click(self, element: str) -> None:
        self.page.evaluate_handle(element).as_element().click()


def wait_until(test: Callable[[], Any], what: str, seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    while not (value := test()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


def log(tab: Tab) -> dict[str, Any]:
    """The fixture page's counts: trusted clicks and keys, the prompts it sent, copies."""
    return dict(tab.evaluate("JSON.parse(JSON.stringify(window.fixtureLog))"))


def sent(tab: Tab) -> list[str]:
    return list(log(tab)["sent"])


def run_turns(tab: Tab, root: Path, turns: int, body: Callable[[int], str]) -> None:
    """Each turn: the prompt is in the chat (sent, whole), the answer streams, one click on
    its Apply; the turn's file is written as the model wrote it (``body(n)``) and the next
    prompt goes in."""
    for n in range(1, turns + 1):
        wait_until(partial(lambda k: len(sent(tab)) == k, n), f"prompt {n} sent")
        assert f"Sequence: {n}" in sent(tab)[-1]
        tab.wait(f"Boolean({APPLY})", f"Apply under answer {n}")
        tab.click(APPLY)
        if n < turns:
            made = root / "workspace" / f"turn{n}.txt"
            wait_until(made.exists, f"turn {n} applied")
            assert made.read_bytes().decode() == body(n)
    tab.wait(f"{PILL}.includes('session done')", "the session done")
