"""The extension's Firefox bench (docs/relay.md, "How the tests map fixtures to chats"): Debian's
Firefox ESR with the extension installed over WebDriver BiDi, the fixture chat pages of
tests/chat_fixtures served as for Chromium (tests/test_extension_chats.py), the popup driven as
a user drives it. Everything here works on every Firefox the manifest admits (128 and later):
Debian 12's firefox-esr 140 and newer ESRs alike; ``CODINGAGENT_TEST_FIREFOX`` names another
binary to run the same tests on.

- **Firefox, no driver.** ``firefox-esr --headless --remote-debugging-port=PORT`` with a fresh
  profile; :mod:`bidi` speaks WebDriver BiDi to it; ``webExtension.install`` loads the
  unpacked extension folder as a temporary add-on, as about:debugging does. Firefox (128 and
  later) grants an add-on's ``host_permissions`` at install, which the test checks. The add-on
  runs in its own process, as for a user.
- **The popup** is its page opened as an ordinary tab in the background
  (``moz-extension://<UUID>/popup/popup.html``; the chat tab stays the active one, which "Use
  this tab" takes), scripted there like any page; its buttons are pressed as a user presses
  them. The extension's internal UUID is fixed by the profile (``extensions.webextensions.uuids``),
  so its origin is known.
- **The event page's idle stop.** Firefox stops an idle event page after
  ``extensions.background.idle.timeout`` (30 s); a bench started with ``idle_ms`` shortens it,
  and the popup sees whether the event page runs (``extension.getViews()``, which does not
  wake it).
- **The chats' domains.** Firefox has no ``--host-resolver-rules``: the profile names a proxy
  for HTTPS (:class:`ConnectProxy`, on 127.0.0.1) that tunnels a ``CONNECT`` to one of the
  chats' domains to the fixture server's HTTPS port and refuses any other; the self-signed
  certificate is accepted by the session's ``acceptInsecureCerts``. 127.0.0.1 and localhost
  are never proxied, so the generic page and Open WebUI are reached as they are.
- **Trusted clicks.** A click on Apply is ``input.performActions`` at the button's middle, a
  trusted click like a user's, which the fixture pages count.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from bidi import Bidi
from relaying import Forwarder

FIREFOX = (
    os.environ.get("CODINGAGENT_TEST_FIREFOX")
    or shutil.which("firefox-esr")
    or "/usr/bin/firefox-esr"
)
ADDON_ID = "relay@codingagent.dev"  # manifest.json's browser_specific_settings.gecko.id
UUID = "5c0d1a2b-3e4f-4a5b-8c6d-7e8f9a0b1c2d"  # the add-on's internal UUID, fixed by the profile
ORIGIN = f"moz-extension://{UUID}"


def available() -> bool:
    return Path(FIREFOX).exists()


class ConnectProxy:
    """An HTTPS proxy on 127.0.0.1 that tunnels ``CONNECT`` to ``hosts`` to 127.0.0.1:``port``
    (the fixture server) and refuses every other."""

    def __init__(self, hosts: set[str], port: int) -> None:
        self.hosts = hosts
        self.target = port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self) -> None:
        with suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            for sock in self._open:
                with suppress(OSError):
                    sock.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        with suppress(OSError):
            while b"\r\n\r\n" not in head and len(head) < 8192:
                chunk = client.recv(1024)
                if not chunk:
                    break
                head += chunk
        words = head.split(b"\r\n", 1)[0].split()
        host = words[1].decode().rsplit(":", 1)[0] if len(words) > 2 else ""
        if words[:1] != [b"CONNECT"] or host not in self.hosts:
            with suppress(OSError):
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        upstream = socket.create_connection(("127.0.0.1", self.target))
        with self._lock:
            self._open += [client, upstream]
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=Forwarder._pump, args=(a, b), daemon=True).start()


def profile_prefs(proxy_port: int, idle_ms: int | None = None) -> dict[str, object]:
    prefs: dict[str, object] = {
        "extensions.webextensions.uuids": json.dumps({ADDON_ID: UUID}),
        "network.proxy.type": 1,
        "network.proxy.ssl": "127.0.0.1",
        "network.proxy.ssl_port": proxy_port,
        "network.proxy.share_proxy_settings": False,
        "browser.shell.checkDefaultBrowser": False,
        "browser.startup.page": 0,
    }
    if idle_ms is not None:
        prefs["extensions.background.idle.timeout"] = idle_ms
    return prefs


class FirefoxTab:
    """A tab of the bench: scripts evaluated in the page, trusted clicks."""

    def __init__(self, bidi: Bidi, context: str) -> None:
        self.bidi = bidi
        self.context = context

    def evaluate(self, expression: str) -> Any:
        """``expression``'s value (awaited), through JSON."""
        code = f"(async () => JSON.stringify(await ({expression})))()"
        result = self.bidi.command(
            "script.evaluate",
            target={"context": self.context},
            expression=code,
            awaitPromise=True,
        )
        if result.get("type") == "exception":
            details = result.get("exceptionDetails", {})
            raise AssertionError(f"the page threw: {details.get('text')} in {expression!r}")
        value = result["result"]
        return json.loads(value["value"]) if value.get("type") == "string" else None

    def wait(self, expression: str, what: str, seconds: float = 20) -> Any:
        deadline = time.monotonic() + seconds
        while not (value := self.evaluate(expression)):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what} ({expression})")
            time.sleep(0.1)
        return value

    def click(self, element: str) -> None:
        """A trusted click in the middle of the element ``element`` (an expression) names."""
        x, y = self.evaluate(
            f"""(() => {{ const e = {element}; e.scrollIntoView({{block: "center"}});
            const r = e.getBoundingClientRect();
            return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]; }})()"""
        )
        self.bidi.command(
            "input.performActions",
            context=self.context,
            actions=[
                {
                    "type": "pointer",
                    "id": "mouse",
                    "parameters": {"pointerType": "mouse"},
                    "actions": [
                        {"type": "pointerMove", "x": x, "y": y},
                        {"type": "pointerDown", "button": 0},
                        {"type": "pointerUp", "button": 0},
                    ],
                }
            ],
        )

    def close(self) -> None:
        with suppress(Exception):
            self.bidi.command("browsingContext.close", context=self.context)


class Firefox:
    """The browser, its extension and the fixture server (``fixtures``, a FixtureServer)."""

    def __init__(self, bidi: Bidi, fixtures: Any) -> None:
        self.bidi = bidi
        self.fixtures = fixtures
        self._popup: FirefoxTab | None = None

    def _popup_js(self, body: str) -> Any:
        """``body`` run in the popup with ``doc`` (its document), ``shown(id)`` and
        ``until(test, what)`` that polls; the popup is opened, in the background, the first
        time."""
        if self._popup is None:
            made = self.bidi.command("browsingContext.create", type="tab", background=True)
            self._popup = FirefoxTab(self.bidi, made["context"])
            self.bidi.command(
                "browsingContext.navigate",
                context=self._popup.context,
                url=f"{ORIGIN}/popup/popup.html",
                wait="complete",
            )
        return self._popup.evaluate(
            f"""(async () => {{
            const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
            const until = async (test, what) => {{
              for (let i = 0; i < 200; i++) {{
                const v = test();
                if (v) return v;
                await sleep(100);
              }}
              throw new Error("popup: timed out waiting for " + what);
            }};
            const doc = document;
            await until(() => doc.getElementById("pair"), "the popup");
            const shown = (id) => !doc.getElementById(id).hidden;
            {body}
            }})()"""
        )

    def pair(self, relay_port: int, code: str) -> None:
        """Pair through the popup (unpairing a pairing left by an earlier test first)."""
        self._popup_js(
            f"""
            await until(() => shown("pairing") || shown("paired"), "the popup's state");
            if (shown("paired")) {{
              doc.getElementById("unpair").click();
              await until(() => shown("pairing"), "unpaired");
            }}
            doc.getElementById("relay").value = "http://127.0.0.1:{relay_port}";
            doc.getElementById("code").value = {json.dumps(code)};
            doc.getElementById("pair").click();
            const failed = () => /error/.test(doc.getElementById("status").className);
            await until(() => shown("paired") || failed(), "paired");
            if (!shown("paired")) throw new Error(doc.getElementById("status").textContent);
            """
        )

    def attach(self, chat: FirefoxTab) -> None:
        """'Use this tab': the chat tab in front (the active tab the popup asks for), the
        popup's button clicked."""
        self.bidi.command("browsingContext.activate", context=chat.context)
        self._popup_js('doc.getElementById("attach").click();')
        chat.wait(
            "(document.querySelector('codingagent-relay')?.shadowRoot"
            "?.querySelector('.who')?.textContent || '').includes('session')",
            "the extension in the tab",
        )

    def open_chat(self, page: str, query: str = "") -> FirefoxTab:
        context = self.bidi.command("browsingContext.create", type="tab")["context"]
        chat = FirefoxTab(self.bidi, context)
        self.bidi.command(
            "browsingContext.navigate",
            context=context,
            url=self.fixtures.url(page) + query,
            wait="complete",
        )
        chat.wait("window.fixtureLog !== undefined", f"the fixture {page}")
        return chat

    def background_running(self) -> bool:
        """Whether the event page runs (the popup's view of the extension's pages; asking
        does not wake it)."""
        return bool(
            self._popup_js(
                "return browser.extension.getViews()"
                '.some((w) => w.location.pathname.includes("background"));'
            )
        )

    def permissions(self) -> dict[str, Any]:
        """What the add-on holds (as the popup's chrome.permissions.getAll says)."""
        return dict(self._popup_js("return await chrome.permissions.getAll();"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def firefox_browser(
    folder: Path, fixtures: Any, hosts: set[str], extension: Path, idle_ms: int | None = None
) -> Iterator[Firefox]:
    """Firefox ESR on a fresh profile in ``folder``, the extension at ``extension`` installed,
    ``hosts`` tunnelled to ``fixtures``' HTTPS port; ``idle_ms``: how long Firefox lets the
    event page idle before it stops it (its own default, 30 s, when None)."""
    proxy = ConnectProxy(hosts, fixtures.https_port)
    profile = folder / "firefox-profile"
    profile.mkdir(parents=True, exist_ok=True)
    lines = [
        f"user_pref({json.dumps(k)}, {json.dumps(v)});"
        for k, v in profile_prefs(proxy.port, idle_ms).items()
    ]
    (profile / "user.js").write_text("\n".join(lines) + "\n")
    port = _free_port()
    process = subprocess.Popen(
        [
            FIREFOX,
            "--headless",
            f"--remote-debugging-port={port}",
            # Newer Firefox lets BiDi open an extension's page only with this (140 needs none).
            "--remote-allow-system-access",
            "--no-remote",
            "--profile",
            str(profile),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    bidi = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "WebDriver BiDi listening" in line:
                break
        else:
            raise AssertionError("Firefox did not start its WebDriver BiDi agent")
        threading.Thread(
            target=lambda: process.stdout and process.stdout.read(), daemon=True
        ).start()
        bidi = Bidi(port)
        bidi.command("session.new", capabilities={"alwaysMatch": {"acceptInsecureCerts": True}})
        bidi.command(
            "webExtension.install",
            extensionData={"type": "path", "path": str(extension)},
        )
        yield Firefox(bidi, fixtures)
    finally:
        if bidi is not None:
            with suppress(Exception):
                bidi.command("session.end", timeout=5)
            bidi.close()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        proxy.close()
