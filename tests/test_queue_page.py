"""The page follows a queue of tasks (docs/queue.md) that a terminal runs: a real
``codingagent start`` process watches inbox/, the page (headless Chromium against the real
server) says "Task N/3", applies a reply through the runner's inbox and skips a task.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_ui import Page, browser, serve, tab  # noqa: F401  (the page's fixtures)

from codingagent.records.queues import QueueStore

AGENT = (sys.executable, "-m", "codingagent")
UNSANDBOXED = ("--sandbox", "none", "--commands", "deny", "--poll")
DONE = "Session: {session} Sequence: 1\n[DONE]\nDid the first task.\n[/DONE]\n"


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
def test_the_page_shows_the_queue_follows_it_and_skips_a_task(serve, tab, tmp_path):  # noqa: F811
    page: Page = serve()
    root = page.store.root
    runner = subprocess.Popen(
        [*AGENT, "start", "first", "second", "third", *UNSANDBOXED, "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "CODINGAGENT_CLIPBOARD": "false"},
    )
    try:
        assert runner.stderr is not None
        for line in runner.stderr:  # it holds task 1's session once it watches
            if line.startswith("Watching"):
                break
        queues = QueueStore(page.store)
        first = queues.load(queues.resolve("latest")).tasks[0].session_id
        tab.goto(page.url)
        tab.locator("#queue-title:has-text('Task 1/3: first')").wait_for()
        tab.locator("#title:has-text('first')").wait_for()

        # The reply goes to the runner's inbox; the runner completes task 1 and starts task 2,
        # and the page moves to task 2's session by itself.
        tab.fill("#reply", DONE.format(session=first))
        tab.click("#apply")
        tab.locator("#queue-title:has-text('Task 2/3: second')").wait_for()
        tab.locator("#title:has-text('second')").wait_for()
        tab.locator("#prompt-size:has-text('Prompt 1')").wait_for()
        assert tab.locator("#queue-tasks li").nth(0).get_attribute("data-outcome") == "completed"

        tab.click("#queue-skip")
        tab.locator("#queue-title:has-text('Task 3/3: third')").wait_for()
        tab.locator("#title:has-text('third')").wait_for()
        outcomes = [
            tab.locator("#queue-tasks li").nth(n).get_attribute("data-outcome") for n in range(3)
        ]
        assert outcomes == ["completed", "skipped", "running"]
        assert "skipped on request" in tab.locator("#queue-tasks li").nth(1).inner_text()
    finally:
        runner.terminate()
        runner.wait()
