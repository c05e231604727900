"""The web page (``codingagent ui``) in a real browser: Debian's headless Chromium, driven by
playwright's Python package, against the real server (uvicorn in a thread, on a free port).

Set ``CODINGAGENT_UI_SCREENSHOT=docs/ui.png`` to have the loop test save the page's picture.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codingagent.commands import CommandResult
from codingagent.session import SessionStore
from codingagent.settings import Settings
from codingagent.ui.server import create_app, listen, new_token, server, url

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 20_000  # how long the browser waits for something to appear before the test fails

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")


@dataclass
class Page:
    url: str
    store: SessionStore
    port: int


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Page]]:
    """Start the page's server on 127.0.0.1 (any free port) for a run directory in tmp_path."""
    running: list[tuple[object, threading.Thread]] = []

    def start(first: str | None = None, **settings: object) -> Page:
        store = SessionStore(tmp_path / "run")
        sock = listen(0)
        token = new_token()
        chosen = Settings(clipboard=False, sandbox="none", **settings)  # type: ignore[arg-type]
        uvicorn_server = server(create_app(store, chosen, token, first))
        thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]})
        thread.start()
        running.append((uvicorn_server, thread))
        while not uvicorn_server.started and thread.is_alive():
            threading.Event().wait(0.01)
        return Page(url(sock, token), store, sock.getsockname()[1])

    yield start
    for uvicorn_server, thread in running:
        uvicorn_server.should_exit = True  # type: ignore[attr-defined]
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def tab(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    yield page
    context.close()


def project(root: Path) -> Path:
    folder = root / "project"
    folder.mkdir(parents=True)
    (folder / "hello.py").write_text("print('hi')\n")
    return folder


EDIT_REPLY = """Session: {session} Sequence: 1
I'll make the greeting friendlier.

[MESSAGE]
Changing the greeting to "hello, world".
[/MESSAGE]

[EDIT_FILE path="hello.py" start_line="1" end_line="1"]
print('hello, world')
[/EDIT_FILE]

[CREATE_FILE path="notes.txt"]
a new file
[/CREATE_FILE]
"""


def test_a_whole_turn_on_the_page_copy_paste_apply_diff_undo(serve, tab, tmp_path):
    page = serve()
    folder = project(tmp_path / "run")
    tab.goto(page.url)
    tab.fill("#task", "Make the greeting friendlier")
    tab.fill("#workspace", "project")
    tab.click("#start")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 1')")
    [session_id] = page.store.ids()
    outbox = page.store.outbox_path(session_id, 1).read_text(encoding="utf-8")
    assert tab.inner_text("#prompt-size") == (
        f"Prompt 1: {len(outbox):,} characters, ~{(len(outbox) + 3) // 4:,} tokens"
    )

    tab.click("#copy")
    tab.wait_for_selector("#copy-status:has-text('Copied')")
    assert tab.evaluate("navigator.clipboard.readText()") == outbox

    tab.fill("#reply", EDIT_REPLY.format(session=session_id))
    tab.click("#apply")
    # Locators, not element handles: the page re-renders the turns when the events come.
    turn = tab.locator("article.turn[data-sequence='1']:has(details.diff)")
    turn.wait_for()
    assert turn.locator(".message p").inner_text() == 'Changing the greeting to "hello, world".'
    # The same lines the console prints, in order: the results' headlines.
    shown = turn.locator(".result .headline").all_inner_texts()
    [entry] = page.store.log(session_id)
    assert shown == [CommandResult.model_validate(r).headline for r in entry["results"]]
    assert [line.split(":")[0] for line in shown] == [
        "[OK] MESSAGE",
        "[OK] EDIT_FILE",
        "[OK] CREATE_FILE",
    ]
    diffs = turn.locator("details.diff pre").all_inner_texts()
    assert [d.splitlines() for d in diffs] == [
        [
            "--- a/hello.py",
            "+++ b/hello.py",
            "@@ -1 +1 @@",
            "-print('hi')",
            "+print('hello, world')",
        ],
        ["--- /dev/null", "+++ b/notes.txt", "@@ -0,0 +1 @@", "+a new file"],
    ]
    assert (folder / "hello.py").read_text() == "print('hello, world')\n"
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    assert tab.input_value("#reply") == ""
    if os.environ.get("CODINGAGENT_UI_SCREENSHOT"):
        tab.screenshot(path=os.environ["CODINGAGENT_UI_SCREENSHOT"], full_page=True)

    tab.click("button.undo")
    tab.wait_for_selector("#turns:has-text('No turns yet.')")
    assert (folder / "hello.py").read_text() == "print('hi')\n"
    assert not (folder / "notes.txt").exists()
    assert tab.inner_text("#prompt-size").startswith("Prompt 1:")
