"""The extension's test bench (docs/relay.md, "How the tests map fixtures to chats"): Debian's
Chromium with the extension loaded, the fixture chat pages of tests/chat_fixtures served on
127.0.0.1, and the popup driven as a user drives it.

The extension's host permissions name the real chats' domains, so the browser is started with
``--host-resolver-rules`` that send chatgpt.com, claude.ai, ... to the fixture server on
127.0.0.1. chatgpt.com is HSTS-preloaded (Chromium refuses plain http to it), so the mapped
domains are served over HTTPS with a throwaway self-signed certificate (openssl) that the
browser is told to accept; the generic page and Open WebUI are served over plain http on
127.0.0.1 and localhost, which the manifest allows as they are.
"""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from chat_render import streamed
from chat_turns import wait_until
from relaying import Forwarder, relay_agent
from test_ui import QUIET_CHROMIUM

FIXTURES = Path(__file__).parent / "chat_fixtures"
EXTENSION = Path(__file__).parent.parent / "codingagent" / "frontends" / "extension"
CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 20_000

# The chats' real host names, each served its fixture page.
CHAT_HOSTS = {
    "chatgpt.com": "chatgpt.html",
    "claude.ai": "claude.html",
    "gemini.google.com": "gemini.html",
    "aistudio.google.com": "aistudio.html",
    "chat.deepseek.com": "deepseek.html",
    "chat.mistral.ai": "mistral.html",
}

Answerer = Callable[[str], str]


@dataclass
class FixtureServer:
    """Serves the fixture pages; each prompt a page sends is recorded and answered by
    ``answer(prompt)``, the scripted chat model the test sets."""

    https_port: int = 0
    http_port: int = 0
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (host, prompt)
    answer: Answerer = lambda prompt: "[DONE]\nnothing to do\n[/DONE]\n"

    def url(self, page: str) -> str:
        """The address of a fixture page: a chat's real domain, or 127.0.0.1/localhost."""
        for host, name in CHAT_HOSTS.items():
            if name == page:
                return f"https://{host}/c/fixture"
        if page == "openwebui.html":
            return f"http://localhost:{self.http_port}/"
        return f"http://127.0.0.1:{self.http_port}/{page}"


def _handler(server: FixtureServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").split(":")[0]
            name = self.path.split("?")[0].lstrip("/")
            if not (FIXTURES / name).is_file() or name.endswith(".py"):
                name = CHAT_HOSTS.get(host) or ("openwebui.html" if host == "localhost" else "")
            if not name:
                self._send(404, b"no such fixture", "text/plain")
                return
            kinds = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
            kind = kinds.get(Path(name).suffix, "application/octet-stream")
            self._send(200, (FIXTURES / name).read_bytes(), f"{kind}; charset=utf-8")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            prompt = self.rfile.read(length).decode()
            if self.path == "/fixture/render":  # rendered.html draws its answers here
                drawn = json.dumps(streamed(prompt)).encode()
                self._send(200, drawn, "application/json")
                return
            server.prompts.append((self.headers.get("Host") or "", prompt))
            self._send(200, server.answer(prompt).encode(), "text/plain; charset=utf-8")

    return Handler


def _certificate(folder: Path) -> ssl.SSLContext:
    if shutil.which("openssl") is None:
        raise RuntimeError(
            "the chat fixtures need openssl for their certificate (apt-get install openssl)"
        )
    names = ",".join(f"DNS:{host}" for host in CHAT_HOSTS)
    key, cert = folder / "fixture.key", folder / "fixture.crt"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=chat fixture"),
            *("-addext", f"subjectAltName={names}"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@contextmanager
def fixture_server(folder: Path) -> Iterator[FixtureServer]:
    state = FixtureServer()
    handler = _handler(state)
    plain = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    secure = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tls = _certificate(folder)
    secure.socket = tls.wrap_socket(secure.socket, server_side=True)
    state.http_port, state.https_port = plain.server_address[1], secure.server_address[1]
    # A short poll: shutdown() waits for it.
    threads = [
        threading.Thread(target=s.serve_forever, args=(0.01,), daemon=True) for s in (plain, secure)
    ]
    for thread in threads:
        thread.start()
    try:
        yield state
    finally:
        for s in (plain, secure):
            s.shutdown()
            s.server_close()


@dataclass
class Browser:
    context: Any  # playwright BrowserContext (persistent)
    extension_id: str
    fixtures: FixtureServer

    def popup(self) -> Any:
        page = self.context.new_page()
        page.goto(f"chrome-extension://{self.extension_id}/popup/popup.html")
        return page

    def pair(self, relay_port: int, code: str) -> Any:
        """Pair through the popup (unpairing a pairing left by an earlier test first)."""
        popup = self.popup()
        popup.wait_for_selector("#pairing:not([hidden]), #paired:not([hidden])")
        if popup.locator("#paired").is_visible():
            popup.click("#unpair")
            popup.wait_for_selector("#pairing:not([hidden])")
        popup.fill("#relay", f"http://127.0.0.1:{relay_port}")
        popup.fill("#code", code)
        popup.click("#pair")
        popup.wait_for_selector("#paired:not([hidden])")
        return popup

    def attach(self, popup: Any, chat: Any) -> None:
        """'Use this tab': the chat tab in front (the active tab the popup asks for), the
        popup's button clicked."""
        chat.bring_to_front()
        popup.click("#attach")
        chat.locator("codingagent-relay .who", has_text="session").wait_for()

    def open_chat(self, page: str, query: str = "") -> Any:
        chat = self.context.new_page()
        chat.goto(self.fixtures.url(page) + query)
        chat.wait_for_function("window.fixtureLog !== undefined")
        return chat


def chromium_args(extension: Path, https_port: int) -> list[str]:
    rules = ",".join(f"MAP {host} 127.0.0.1:{https_port}" for host in CHAT_HOSTS)
    return [
        "--headless=new",
        f"--disable-extensions-except={extension}",
        f"--load-extension={extension}",
        f"--host-resolver-rules={rules}",
        "--ignore-certificate-errors",
        *QUIET_CHROMIUM,
    ]


@contextmanager
def extension_browser(
    folder: Path, extension: Path = EXTENSION, display: str | None = None
) -> Iterator[Browser]:
    """Chromium with the extension: ``--headless=new`` (the old headless has no extensions),
    or drawn on the X ``display`` (headless Chromium has no system clipboard for Ctrl+C)."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)

    with fixture_server(folder) as fixtures, sync_playwright() as playwright:
        args = chromium_args(extension, fixtures.https_port)
        drawn: dict[str, Any] = {}
        if display is not None:
            args.remove("--headless=new")
            drawn["env"] = {"DISPLAY": display, "HOME": str(folder), "PATH": "/usr/bin:/bin"}
        context = playwright.chromium.launch_persistent_context(
            str(folder / "profile"),
            executable_path=str(CHROMIUM),
            headless=False,
            args=args,
            **drawn,
            ignore_https_errors=True,
            viewport={"width": 1100, "height": 760},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            workers = context.service_workers
            worker = workers[0] if workers else context.wait_for_event("serviceworker")
            yield Browser(context, worker.url.split("/")[2], fixtures)
        finally:
            context.close()


def fixture_log(chat: Any) -> dict[str, Any]:
    return dict(json.loads(chat.evaluate("JSON.stringify(window.fixtureLog)")))


def pill_text(chat: Any) -> str:
    return str(chat.locator("codingagent-relay .text").inner_text())


def available() -> bool:
    return CHROMIUM.exists()


# ---- the tests ---------------------------------------------------------------------------

pytestmark = [
    pytest.mark.slow,  # real browser, real agent, answers streamed in real time
    pytest.mark.skipif(
        not available(), reason="needs Debian's chromium (apt-get install chromium)"
    ),
]

SEQUENCE = re.compile(r"Sequence: (\d+)")
BODY = "line {n}\n\n# not a heading\n"


def scripted(turns: int) -> Answerer:
    """The chat's answers: a file per turn, [DONE] at the last; each answer is fenced markdown
    with prose around it, as chats write."""

    def answer(prompt: str) -> str:
        found = SEQUENCE.search(prompt)
        n = int(found.group(1)) if found else 0
        if n >= turns:
            return f"All files are there.\n\n[DONE]\nmade {turns - 1} files\n[/DONE]\n"
        return (
            f'Turn {n}: I\'ll write the file.\n\n```text\n[CREATE_FILE path="turn{n}.txt"]\n'
            f"{BODY.format(n=n)}[/CREATE_FILE]\n```\n\nThat is all for now.\n"
        )

    return answer


def sent(chat: Any) -> list[str]:
    return list(fixture_log(chat)["sent"])


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with extension_browser(tmp_path_factory.mktemp("chromium")) as bench:
        yield bench


def run_turns(browser: Browser, chat: Any, root: Path, turns: int) -> None:
    """Each turn: the prompt is in the chat (sent, whole), the answer streams, one click on
    its Apply; the file appears and the next prompt goes in."""
    for n in range(1, turns + 1):
        wait_until(partial(lambda k: len(sent(chat)) == k, n), f"prompt {n} sent")
        assert f"Sequence: {n}" in sent(chat)[-1]
        button = chat.locator("codingagent-apply button", has_text="Apply").last
        button.wait_for()
        button.click()
        if n < turns:
            made = root / "workspace" / f"turn{n}.txt"
            wait_until(made.exists, f"turn {n} applied")
            assert made.read_text() == BODY.format(n=n)
    chat.locator("codingagent-relay .text", has_text="session done").wait_for()


def test_a_three_turn_session_takes_one_click_per_turn_and_no_keystroke(
    browser: Browser, tmp_path: Path
) -> None:
    browser.fixtures.answer = scripted(3)
    with relay_agent(tmp_path, task="make two files") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("chatgpt.html")
        browser.attach(popup, chat)
        run_turns(browser, chat, tmp_path, 3)
        prompts = [p for _, p in browser.fixtures.prompts]
        outbox = sorted((tmp_path / "outbox").glob("*_seq*.txt"))
        # Each prompt went in whole, as the agent wrote it (the long ones too).
        assert prompts == [path.read_text() for path in outbox]
        log = fixture_log(chat)
        assert log["trustedClicks"] == 3  # the three Apply clicks, nothing else
        assert log["trustedKeys"] == 0
        assert log["copies"] == 3  # each answer came through ChatGPT's own Copy
        agent.process.wait(20)
        assert agent.process.returncode == 0
        assert "Task marked complete" in agent.output


@pytest.mark.parametrize(
    "page",
    [
        "claude.html",
        "gemini.html",
        "aistudio.html",
        "deepseek.html",
        "mistral.html",
        "openwebui.html",
        "generic.html",
    ],
)
def test_each_chat_takes_a_prompt_and_gives_its_answer_on_apply(
    browser: Browser, tmp_path: Path, page: str
) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="make a file") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat(page)
        browser.attach(popup, chat)
        run_turns(browser, chat, tmp_path, 2)
        log = fixture_log(chat)
        assert log["trustedKeys"] == 0 and log["trustedClicks"] == 2
        has_copy = page not in ("aistudio.html", "deepseek.html", "generic.html")
        assert log["copies"] == (2 if has_copy else 0)


@pytest.mark.parametrize("page", ["chatgpt.html", "claude.html", "deepseek.html"])
def test_a_long_prompt_goes_in_whole(browser: Browser, tmp_path: Path, page: str) -> None:
    """A prompt of some 40,000 characters: a rich editor takes it as one paste (ChatGPT's
    fixture turns it into an attached file, as ChatGPT does), a textarea as its value."""
    browser.fixtures.answer = scripted(2)
    task = "Write the notes below into notes.txt.\n" + "a long line of the task. " * 1600
    with relay_agent(tmp_path, task=task) as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat(page)
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "the long prompt sent", seconds=30)
        outbox = sorted((tmp_path / "outbox").glob("*_seq*.txt"))
        assert len(outbox[0].read_text()) > 40_000
        assert sent(chat)[0] == outbox[0].read_text()
        assert fixture_log(chat)["how"][:1] == (["input"] if page == "deepseek.html" else ["paste"])


def test_the_turns_go_on_after_the_browser_stops_the_idle_service_worker(
    browser: Browser, tmp_path: Path
) -> None:
    """Chrome stops an idle Manifest V3 service worker (after 30 s); what it knows is in
    storage, and the next Apply starts it again."""
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("mistral.html")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        popup.close()
        cdp = chat.context.new_cdp_session(chat)

        def workers() -> list[str]:
            targets = cdp.send("Target.getTargets")["targetInfos"]
            return [t["targetId"] for t in targets if t["type"] == "service_worker"]

        for target in workers():
            cdp.send("Target.closeTarget", {"targetId": target})
        wait_until(lambda: not workers(), "the service worker stopped")
        run_turns(browser, chat, tmp_path, 2)
        assert len(sent(chat)) == 2  # prompt 1 was not sent again after the restart


def test_attaching_another_tab_moves_the_session_there(browser: Browser, tmp_path: Path) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        first = browser.open_chat("chatgpt.html")
        browser.attach(popup, first)
        wait_until(lambda: len(sent(first)) == 1, "prompt 1 sent in the first tab")
        second = browser.open_chat("openwebui.html")
        browser.attach(popup, second)
        # The second tab gets the current prompt at once, not when the long poll in flight
        # for the first tab's next prompt gives up (20 s).
        wait_until(lambda: len(sent(second)) == 1, "prompt 1 sent in the second tab", seconds=10)
        # The first tab is left as it was; the second goes on.
        first.locator("codingagent-relay").wait_for(state="detached")
        assert first.locator("codingagent-apply").count() == 0
        run_turns(browser, second, tmp_path, 2)
        assert len(sent(first)) == 1


def test_apply_comes_only_once_the_answer_is_finished(browser: Browser, tmp_path: Path) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("chatgpt.html", "?slow")
        browser.attach(popup, chat)
        stop = chat.locator("[data-testid='stop-button']")
        stop.wait_for()
        seen_streaming = 0
        while stop.is_visible():
            assert chat.locator("codingagent-apply").count() == 0
            seen_streaming += 1
            time.sleep(0.2)
        assert seen_streaming > 5  # it was watched while it streamed
        chat.locator("codingagent-apply button", has_text="Apply").wait_for()


def test_a_page_without_answer_markers_applies_the_selected_text(
    browser: Browser, tmp_path: Path
) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("generic.html", "?unmarked")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        chat.locator(".bubble pre").wait_for()
        time.sleep(1.5)  # streamed
        # The user selects the answer's text (a drag); then one click.
        chat.evaluate(
            "getSelection().selectAllChildren(document.querySelector('.bubble pre code'))"
        )
        chat.locator("codingagent-relay button.selection").click()
        made = tmp_path / "workspace" / "turn1.txt"
        wait_until(made.exists, "turn 1 applied")
        assert made.read_text() == BODY.format(n=1)
        wait_until(lambda: len(sent(chat)) == 2, "prompt 2 sent")


def test_a_chat_whose_markup_changed_fails_loudly(browser: Browser, tmp_path: Path) -> None:
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("chatgpt.html")
        # The site renamed its composer: the adapter must say so, not wait in silence.
        chat.evaluate("document.getElementById('prompt-textarea').id = 'composer-v2'")
        browser.attach(popup, chat)
        chat.locator("codingagent-relay .text", has_text="composer not found").wait_for()
        assert "ChatGPT: composer not found — the site may have changed" in pill_text(chat)
        assert sent(chat) == []


def test_pause_keeps_the_prompt_out_until_resume(browser: Browser, tmp_path: Path) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent:
        popup = browser.pair(agent.port, agent.code)
        chat = browser.open_chat("claude.html")
        browser.attach(popup, chat)
        wait_until(lambda: len(sent(chat)) == 1, "prompt 1 sent")
        chat.locator("codingagent-relay button.pause").click()
        chat.locator("codingagent-relay .text", has_text="paused").wait_for()
        chat.locator("codingagent-apply button", has_text="Apply").click()
        wait_until(lambda: (tmp_path / "workspace" / "turn1.txt").exists(), "turn 1 applied")
        time.sleep(2)
        assert len(sent(chat)) == 1  # paused: the next prompt waits
        chat.locator("codingagent-relay button.pause", has_text="Resume").click()
        wait_until(lambda: len(sent(chat)) == 2, "prompt 2 sent after Resume")


def test_the_relay_refuses_a_web_page_and_an_unpaired_extension(
    browser: Browser, tmp_path: Path
) -> None:
    with relay_agent(tmp_path, task="t") as agent:
        relay = f"http://127.0.0.1:{agent.port}/relay/v1"
        # The extension before pairing: its origin, no token.
        popup = browser.popup()
        status = popup.evaluate(f"fetch('{relay}/state').then(r => r.status)")
        assert status == 401
        # A web page (another origin) that knows the address and even the code.
        page = browser.open_chat("generic.html")
        outcome = page.evaluate(
            f"""fetch('{relay}/pair', {{method: 'POST', headers: {{'Content-Type':
            'application/json'}}, body: JSON.stringify({{code: '{agent.code}'}})}})
            .then(r => 'answered ' + r.status, e => 'blocked: ' + e)"""
        )
        assert outcome.startswith("blocked")  # no CORS grant for a web page: nothing to read
        simple = page.evaluate(
            f"fetch('{relay}/state', {{mode: 'no-cors'}}).then(r => r.type, e => 'blocked')"
        )
        assert simple in ("opaque", "blocked")
        # The refusals did not pair anyone: the extension still pairs with the code.
        popup.close()
        browser.pair(agent.port, agent.code)
        assert "paired with the extension chrome-extension://" + browser.extension_id in (
            agent.output
        )


def test_the_extension_works_through_a_forwarded_port(browser: Browser, tmp_path: Path) -> None:
    browser.fixtures.answer = scripted(2)
    with relay_agent(tmp_path, task="t") as agent, Forwarder(agent.port) as forwarded:
        popup = browser.pair(forwarded.port, agent.code)  # as with ssh -L 8766:127.0.0.1:8766
        chat = browser.open_chat("gemini.html")
        browser.attach(popup, chat)
        run_turns(browser, chat, tmp_path, 2)
