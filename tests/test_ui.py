"""The web page (``codingagent ui``) in a real browser: Debian's headless Chromium, driven by
playwright's Python package, against the real server (uvicorn in a thread, on a free port).
The security tests send their requests with httpx; they need no browser.

Set ``CODINGAGENT_UI_SCREENSHOT=docs/ui.png`` to have the loop test save the page's picture.
"""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from codingagent.frontends.page.events import Approvals, EventHub
from codingagent.frontends.page.server import PageServer, create_app, listen, new_token, url
from codingagent.records.history import turn_log
from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session
from codingagent.settings import Settings
from codingagent.state import CommandResult

CHROMIUM = Path("/usr/bin/chromium")
# A quiet browser for tests: no sandbox of its own (root in CI), no GPU, nothing fetched.
QUIET_CHROMIUM = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CHROMIUM_ARGS = ["--headless", *QUIET_CHROMIUM]
WAIT_MS = 20_000  # how long the browser waits for something to appear before the test fails


@dataclass
class Page:
    url: str
    store: SessionStore
    port: int


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Page]]:
    """Start the page's server on 127.0.0.1 (any free port) for a run directory in tmp_path."""
    running: list[tuple[PageServer, threading.Thread]] = []

    def start(first: str | None = None, **settings: object) -> Page:
        store = SessionStore(tmp_path / "run")
        sock = listen(0)
        token = new_token()
        chosen = Settings(clipboard=False, sandbox="none", **settings)
        hub = EventHub()
        uvicorn_server = PageServer(create_app(store, chosen, token, hub, first), hub)
        thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]})
        thread.start()
        running.append((uvicorn_server, thread))
        while not uvicorn_server.started and thread.is_alive():
            threading.Event().wait(0.01)
        return Page(url(sock, token), store, sock.getsockname()[1])

    yield start
    for uvicorn_server, thread in running:
        uvicorn_server.stop()
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
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


def open_page(tab, page: Page) -> None:
    """Open the page on its latest session; wait until it shows the prompt and hears events."""
    tab.goto(page.url)
    tab.wait_for_selector("#prompt-size:has-text('Prompt 1')")
    tab.wait_for_selector("#connection:has-text('connected')")


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
    tab.wait_for_selector("#connection:has-text('connected')")
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
    [entry] = turn_log(page.store, session_id)
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


def start_on(page: Page, root: Path, task: str = "Make the greeting friendlier") -> str:
    """A session on ``root/project``, started as the page's Start does (without the page)."""
    state, _ = start_session(page.store, task, project(root))
    return state.session_id


def test_a_commands_changes_show_as_diffs_marked_as_made_by_it(serve, tab, tmp_path):
    page = serve(commands="allow")
    start_on(page, tmp_path / "run")
    open_page(tab, page)
    tab.fill(
        "#reply", "[RUN_COMMAND]\nsed -i s/hi/hey/ hello.py && echo n > new.txt\n[/RUN_COMMAND]\n"
    )
    tab.click("#apply")
    turn = tab.locator("article.turn[data-sequence='1']:has(details.diff)")
    turn.wait_for()
    by = "RUN_COMMAND 'sed -i s/hi/hey/ hello.py && echo n > new.txt'"
    assert turn.locator("details.diff summary").all_inner_texts() == [
        f"hello.py changed by {by}",
        f"new.txt created by {by}",
    ]
    assert "+print('hey')" in turn.locator("details.diff pre").first.inner_text().splitlines()
    headline = turn.locator(".result .headline").nth(1).inner_text()  # after the echo's NOTE
    assert headline.endswith("it created 1 file (new.txt); changed 1 file (hello.py)")


@pytest.mark.parametrize("allow", [True, False])
def test_a_run_command_waits_for_allow_or_deny_on_the_page(serve, tab, tmp_path, allow):
    page = serve(commands="ask")
    session_id = start_on(page, tmp_path / "run")
    workspace = tmp_path / "run" / "project"
    open_page(tab, page)
    reply = '[CREATE_FILE path="first.txt"]\n1\n[/CREATE_FILE]\n'
    tab.fill("#reply", reply + "[RUN_COMMAND]\necho ran | tee ran.txt\n[/RUN_COMMAND]\n")
    tab.click("#apply")
    question = tab.locator("#approvals .approval")
    question.locator("pre").wait_for()
    assert question.locator("pre").inner_text() == "echo ran | tee ran.txt"
    assert not (workspace / "ran.txt").exists()  # nothing runs before the answer
    # The turn is under way: its first result is on the page already (streamed).
    applying = tab.locator("article.turn.live")
    assert applying.locator("h4").inner_text() == "Turn 1: applying…"
    assert applying.locator(".result .headline").all_inner_texts() == [
        # the page knows the prompt a paste answers: a missing echo is only noted (admission)
        "[NOTE] your reply did not say which prompt it answers (prompt 1); start your next "
        f"reply with `Session: {session_id} Sequence: 2`",
        "[OK] CREATE_FILE: Created 'first.txt'",
    ]
    assert page.store.load(session_id).sequence_number == 1

    tab.click("#approvals button.allow" if allow else "#approvals button.deny")
    turn = tab.locator("article.turn[data-sequence='1']")
    turn.wait_for()
    headline = turn.locator(".result .headline").all_inner_texts()[-1]
    if allow:
        assert headline == (
            "[OK] RUN_COMMAND: Ran 'echo ran | tee ran.txt' (exit code 0); "
            "it created 1 file (ran.txt)"
        )
        assert (workspace / "ran.txt").read_text() == "ran\n"
        output = turn.locator(".result details.output")  # folded until unfolded
        assert output.get_attribute("open") is None
        assert output.locator("pre").text_content() == "ran\n"
    else:
        assert headline == "[FAILED] RUN_COMMAND: not approved by the user"
        assert not (workspace / "ran.txt").exists()
    assert tab.locator("#approvals .approval").count() == 0
    assert page.store.load(session_id).sequence_number == 2


def test_the_page_lists_the_sessions_and_shows_the_one_clicked(serve, tab, tmp_path):
    page = serve()
    first = start_on(page, tmp_path / "one", task="The first task")
    second = start_on(page, tmp_path / "two", task="The second task")
    tab.goto(page.url)
    tab.wait_for_selector("#title:has-text('The second task')")  # the latest first
    assert tab.locator("#sessions a").all_inner_texts() == [
        f"{second} The second task · turn 1",
        f"{first} The first task · turn 1",
    ]
    tab.click(f"#sessions a[href='#{first}']")
    tab.wait_for_selector("#title:has-text('The first task')")
    assert tab.inner_text("#meta") == f"Session {first} · workspace {tmp_path / 'one' / 'project'}"


def test_a_view_that_comes_after_another_session_was_chosen_never_replaces_it(serve, tab, tmp_path):
    """The page asks for the shown session's view (the event stream's reconnect does); the user
    picks another session before it comes. The late view is of the session left, and the page
    keeps the one chosen (it showed the one left, for good, until the next event)."""
    page = serve()
    first = start_on(page, tmp_path / "one", task="The first task")
    second = start_on(page, tmp_path / "two", task="The second task")
    tab.goto(page.url)
    tab.wait_for_selector("#title:has-text('The second task')")
    tab.evaluate(
        """(second) => {
            const real = window.fetch;  // the second session's view takes a second to come
            window.fetch = (url, options) => String(url).endsWith(`api/sessions/${second}`)
                ? new Promise((wait) => setTimeout(wait, 1000))
                    .then(() => real(url, options))
                    .finally(() => { window.lateViewCame = true; })
                : real(url, options);
            refresh();  // as on the event stream's reconnect: the second session's view
        }""",
        second,
    )
    tab.click(f"#sessions a[href='#{first}']")
    tab.wait_for_selector("#title:has-text('The first task')")
    tab.wait_for_function("() => window.lateViewCame === true")
    tab.wait_for_timeout(200)  # (the page reads the late view's body and goes on)
    assert tab.inner_text("#title") == "The first task"


def test_no_answer_in_time_is_a_deny():
    hub = EventHub()
    approvals = Approvals(hub, timeout=0)
    assert approvals.ask("abcd0123", "rm -rf build") is False
    assert approvals.pending("abcd0123") == []
    assert approvals.answer(1, True) is False  # too late: the question is gone


def test_a_completed_session_says_so_with_its_summary(serve, tab, tmp_path):
    page = serve()
    start_on(page, tmp_path / "run")
    open_page(tab, page)
    tab.fill("#reply", "[DONE]\nThe greeting is friendlier now.\n[/DONE]\n")
    tab.click("#apply")
    done = tab.locator("#complete")
    done.wait_for()
    assert done.inner_text() == "Session complete: The greeting is friendlier now."
    assert tab.locator("#steps").is_hidden()  # no prompt to copy, no reply to paste


def test_the_same_reply_pasted_twice_is_applied_once_and_the_page_says_so(serve, tab, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    open_page(tab, page)
    reply = '[CREATE_FILE path="once.txt"]\n1\n[/CREATE_FILE]\n'
    tab.fill("#reply", reply)
    tab.click("#apply")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    # The page may show Prompt 2 (its event) before the apply call returns and empties the box:
    # paste again only once it has, or the second paste is emptied with it.
    tab.wait_for_function(
        "() => document.querySelector('#reply').value === ''"
        " && !document.querySelector('#apply').disabled"
    )
    tab.fill("#reply", reply)
    tab.click("#apply")
    tab.locator("#notice:has-text('identical')").wait_for()
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    assert tab.inner_text("#notice").startswith(
        "This reply is identical to the one applied in turn 1 (web page); it was skipped."
    )
    tab.locator("article.turn.live").wait_for(state="detached")  # the "applying…" card goes
    assert tab.locator("article.turn").count() == 1
    assert page.store.load(session_id).sequence_number == 2


def test_the_turn_limit_is_said_on_the_page(serve, tab, tmp_path):
    page = serve(max_turns=1)
    session_id = start_on(page, tmp_path / "run")
    open_page(tab, page)
    tab.fill("#reply", "[MESSAGE]\nhi\n[/MESSAGE]\n")
    tab.click("#apply")
    tab.locator("#notice:has-text('max_turns')").wait_for()
    assert tab.inner_text("#notice").startswith(f"Session {session_id} reached max_turns (1)")
    tab.fill("#reply", "[MESSAGE]\nagain\n[/MESSAGE]\n")
    tab.click("#apply")
    tab.locator("#error:not([hidden])").wait_for()
    assert tab.inner_text("#error-text").startswith(f"Session {session_id} reached max_turns")
    assert page.store.load(session_id).sequence_number == 2


def test_undo_refuses_over_a_hand_edit_and_says_why(serve, tab, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    hello = tmp_path / "run" / "project" / "hello.py"
    open_page(tab, page)
    tab.fill("#reply", EDIT_REPLY.format(session=session_id))
    tab.click("#apply")
    tab.locator("article.turn[data-sequence='1'] button.undo").wait_for()
    hello.write_text("print('edited by hand')\n")

    tab.click("button.undo")
    tab.locator("#error:not([hidden])").wait_for()
    assert tab.inner_text("#error-text") == (
        "Nothing undone: hello.py changed since the agent wrote it; use --force to overwrite "
        "those changes"
    )
    assert hello.read_text() == "print('edited by hand')\n"
    assert page.store.load(session_id).sequence_number == 2


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
def test_with_a_terminal_watcher_on_the_session_the_reply_goes_to_its_inbox(serve, tab, tmp_path):
    """The session lock decides: the watcher holds it, so it applies the page's reply."""
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    hello = tmp_path / "run" / "project" / "hello.py"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "codingagent", "resume", session_id, "--root", str(page.store.root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CODINGAGENT_CLIPBOARD": "false", "CODINGAGENT_SANDBOX": "none"},
    )
    try:
        assert watcher.stderr is not None
        for line in watcher.stderr:  # it holds the session's lock once it watches
            if line.startswith("Watching"):
                break
        open_page(tab, page)
        tab.fill("#reply", EDIT_REPLY.format(session=session_id))
        tab.click("#apply")
        tab.locator("#notice:has-text('A terminal watcher holds this session')").wait_for()
        # The watcher applies it; the page shows the turn (read from the history) when it has.
        turn = tab.locator("article.turn[data-sequence='1']:has(details.diff)")
        turn.wait_for()
        assert turn.locator("h4").inner_text().startswith("Turn 1 · ")
        assert hello.read_text() == "print('hello, world')\n"
        assert list(page.store.inbox.iterdir()) == []  # the watcher took it
        assert tab.locator("#notice").is_hidden()
    finally:
        watcher.terminate()
        watcher.wait()


# --- security: the token, the Host, the Origin ------------------------------------------------


def untouched(page: Page, session_id: str, root: Path) -> bool:
    """The session is still at its first prompt, its file as it was, and no reply waits."""
    return (
        page.store.load(session_id).sequence_number == 1
        and (root / "project" / "hello.py").read_text() == "print('hi')\n"
        and not any(page.store.inbox.glob("*.txt"))
    )


def test_a_request_without_the_token_is_refused_and_changes_nothing(serve, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    base = f"http://127.0.0.1:{page.port}"
    reply = {"reply": EDIT_REPLY.format(session=session_id)}
    wrong = "x" * len(page.url.split("/")[3])
    for path in ("/", "/api/sessions", "/api/events", "/static/app.js", f"/{wrong}/"):
        assert httpx.get(base + path).status_code == 403, path
    for prefix in ("", f"/{wrong}"):
        refused = httpx.post(f"{base}{prefix}/api/sessions/{session_id}/apply", json=reply)
        assert refused.status_code == 403
        assert "token" in refused.text
        started = httpx.post(f"{base}{prefix}/api/sessions", json={"task": "x", "workspace": ""})
        assert started.status_code == 403
    assert untouched(page, session_id, tmp_path / "run")
    assert page.store.ids() == [session_id]
    # The same request with the token goes through: the refusals above were the token's.
    assert httpx.post(f"{page.url}api/sessions/{session_id}/apply", json=reply).status_code == 200
    assert page.store.load(session_id).sequence_number == 2


def test_a_foreign_host_header_is_refused_dns_rebinding(serve, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    reply = {"reply": EDIT_REPLY.format(session=session_id)}
    for host in (f"attacker.example:{page.port}", "127.0.0.1", f"127.0.0.1:{page.port + 1}"):
        headers = {"Host": host}
        assert httpx.get(page.url, headers=headers).status_code == 403, host
        refused = httpx.post(
            f"{page.url}api/sessions/{session_id}/apply", json=reply, headers=headers
        )
        assert refused.status_code == 403
        assert "Host" in refused.text
    assert untouched(page, session_id, tmp_path / "run")
    for host in (f"127.0.0.1:{page.port}", f"localhost:{page.port}"):
        assert httpx.get(page.url, headers={"Host": host}).status_code == 200


def test_a_cross_origin_post_is_refused_and_changes_nothing(serve, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    apply = f"{page.url}api/sessions/{session_id}/apply"
    reply = {"reply": EDIT_REPLY.format(session=session_id)}
    for headers in (
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{page.port + 1}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        refused = httpx.post(apply, json=reply, headers=headers)
        assert (refused.status_code, refused.text) == (
            403,
            "Forbidden: a request from another site",
        ), headers
    assert untouched(page, session_id, tmp_path / "run")
    same = {"Origin": f"http://127.0.0.1:{page.port}", "Sec-Fetch-Site": "same-origin"}
    assert httpx.post(apply, json=reply, headers=same).status_code == 200


@pytest.fixture
def other_site() -> Iterator[str]:
    """Another web site on this machine (another port: another origin), with an empty page."""

    class Empty(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>another site</title>")

        def log_message(self, *args: object) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Empty)
    thread = threading.Thread(target=site.serve_forever, args=(0.01,))  # shutdown() waits a poll
    thread.start()
    yield f"http://127.0.0.1:{site.server_address[1]}/"
    site.shutdown()
    thread.join()
    site.server_close()


def test_another_page_in_the_same_browser_cannot_post_to_the_server(
    serve, tab, tmp_path, other_site
):
    """Even knowing the whole address, a script on another origin gets nothing applied."""
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    tab.goto(other_site)
    kind = tab.evaluate(
        """async ([url, reply]) => {
            const response = await fetch(url, {method: "POST", mode: "no-cors",
                headers: {"Content-Type": "text/plain"}, body: JSON.stringify({reply})});
            return response.type;
        }""",
        [f"{page.url}api/sessions/{session_id}/apply", EDIT_REPLY.format(session=session_id)],
    )
    assert kind == "opaque"  # the browser sent it and got an answer: the server's refusal
    assert untouched(page, session_id, tmp_path / "run")


def test_errors_are_messages_for_the_page(serve, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    cases = [
        ("api/sessions/ffffffff", None, "No session matches 'ffffffff'"),
        (f"api/sessions/{session_id}/apply", {"reply": " \n"}, "The reply box is empty"),
        (f"api/sessions/{session_id}/apply", {"reply": 3}, "'reply' must be text"),
        ("api/sessions", {"task": "t", "workspace": "nowhere"}, "Workspace folder does not"),
        ("api/approvals/7", {"allow": True}, "That question was already answered"),
    ]
    for path, body, message in cases:
        answer = (
            httpx.get(page.url + path) if body is None else httpx.post(page.url + path, json=body)
        )
        assert answer.status_code == 400
        assert answer.json()["error"].startswith(message), answer.json()
    outbox = page.store.outbox_path(session_id, 1).read_text(encoding="utf-8")
    pasted_prompt = httpx.post(f"{page.url}api/sessions/{session_id}/apply", json={"reply": outbox})
    assert pasted_prompt.json() == {
        "error": "That is the prompt, not the LLM's reply: paste the answer from the chat"
    }
    not_json = httpx.post(f"{page.url}api/sessions", content=b"task=x")
    assert not_json.json() == {"error": "The request is not JSON"}
    assert untouched(page, session_id, tmp_path / "run")


def test_a_question_from_the_llm_is_shown_the_old_prompt_put_away_and_answered_on_the_page(
    serve, tab, tmp_path
):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    open_page(tab, page)
    tab.fill("#reply", "[ASK]\nWhich color?\n[/ASK]\n")
    tab.click("#apply")
    tab.locator("#question:has-text('Which color?')").wait_for()
    assert tab.locator("#steps").is_hidden()
    assert tab.locator("#complete").is_hidden()
    tab.fill("#answer", "Blue, like the sky")
    tab.click("#answer-send")
    # As `codingagent answer`: the answer is kept, and the prompt that waited carries it.
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    assert tab.locator("#ask").is_hidden()
    state = page.store.load(session_id)
    assert (state.question, [a.answer for a in state.answers]) == (None, ["Blue, like the sky"])
    prompt = page.store.outbox_path(session_id, 2).read_text(encoding="utf-8")
    assert "Blue, like the sky" in prompt
    assert "Blue, like the sky" in tab.text_content("#prompt")


def test_a_damaged_history_file_is_a_message_on_the_page_not_a_traceback(serve, tab, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    httpx.post(f"{page.url}api/sessions/{session_id}/apply", json={"reply": EDIT_REPLY})
    [turn] = page.store.turns(session_id)
    (turn / "results.json").write_text("{not json")  # damaged by hand
    answer = httpx.get(f"{page.url}api/sessions/{session_id}")
    assert answer.status_code == 400
    assert "results.json" in answer.json()["error"]
    tab.goto(page.url)
    tab.locator("#error:not([hidden])").wait_for()
    assert "results.json" in tab.inner_text("#error-text")
    assert "Traceback" not in tab.content()


# --- the command ----------------------------------------------------------------------------------


UI = [sys.executable, "-m", "codingagent", "ui"]


@pytest.mark.slow
def test_codingagent_ui_prints_its_address_serves_the_page_and_stops_on_ctrl_c(tmp_path):
    ui = subprocess.Popen(
        [*UI, "--root", str(tmp_path), "--port", "0", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ui.stdout is not None
        address = ui.stdout.readline().strip()
        assert address.startswith("http://127.0.0.1:") and address.endswith("/")
        token = address.split("/")[3]
        assert len(token) >= 32
        page = httpx.get(address)
        assert page.status_code == 200
        assert '<script src="static/app.js" defer></script>' in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert httpx.get(address + "static/app.js").status_code == 200
        assert httpx.get(address + "api/sessions").json() == {
            "sessions": [],
            "first": None,
            "root": str(tmp_path.resolve()),
        }
        assert httpx.get(address.replace(token, "")).status_code == 403
        busy = subprocess.run(
            [*UI, "--root", str(tmp_path), "--no-open", "--port", str(httpx.URL(address).port)],
            capture_output=True,
            text=True,
        )
        assert busy.returncode == 1
        assert busy.stderr.startswith("error: Cannot listen on 127.0.0.1:")
        assert len(busy.stderr.splitlines()) == 1
    finally:
        ui.send_signal(signal.SIGINT)
        _, errors = ui.communicate()
    assert ui.returncode == 130  # stopped with Ctrl-C, as the other commands
    assert "Traceback" not in errors


def test_copy_for_a_new_chat_copies_the_prompt_with_the_full_protocol(serve, tab, tmp_path):
    page = serve()
    session_id = start_on(page, tmp_path / "run")
    httpx.post(f"{page.url}api/sessions/{session_id}/apply", json={"reply": EDIT_REPLY})
    short = page.store.outbox_path(session_id, 2).read_text(encoding="utf-8")
    assert "=== PROTOCOL ===\nShort form" in short
    full = httpx.get(f"{page.url}api/sessions/{session_id}/full").json()["text"]
    assert "=== PROTOCOL ===\nYou are a coding agent." in full
    assert "  hello.py (22 bytes)" in full  # the full listing, not its changes
    tab.goto(page.url)
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    tab.click("#copy-full")
    tab.wait_for_selector("#copy-status:has-text('Copied')")
    assert tab.evaluate("navigator.clipboard.readText()") == full
    assert page.store.outbox_path(session_id, 2).read_text(encoding="utf-8") == short
