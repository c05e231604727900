"""The relay's guard and pairing over real HTTP (httpx to uvicorn on 127.0.0.1), with the
relay served as ``start --relay`` serves it; and the relay as a reply source of a real
session loop, beside ``inbox/`` (docs/relay.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from relaying import EXTENSION, OTHER_EXTENSION, RelayClient

from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import Listener, Stop, StopReason
from codingagent.settings import Settings
from codingagent.sources.inbox import InboxSource
from codingagent.sources.relay import (
    ALPHABET,
    MAX_WRONG,
    Exchange,
    Outcome,
    Pairing,
    RelaySource,
    new_code,
    parse_prompt_id,
)
from codingagent.sources.relay_server import open_relay

CODE = "K7QM-2XPD"


class Relay:
    """A relay served for a session of a run directory in tmp_path; the notes it printed."""

    def __init__(self, root: Path) -> None:
        self.store = SessionStore(root)
        self.settings = Settings(clipboard=False, sandbox="none", commands="allow")
        (root / "workspace").mkdir(parents=True)
        state, _ = start_session(self.store, "make files\nmore words")
        self.session_id = state.session_id
        self.notes: list[str] = []
        self.pairing = Pairing(CODE, note=self.notes.append)
        self.exchange = Exchange(self.session_id, state.task)
        inbox = InboxSource(self.store.inbox, self.settings.max_reply_bytes)
        self.source: RelaySource = open_relay(
            self.exchange, self.pairing, inbox, 0, self.settings.max_reply_bytes
        )
        self.port = int(self.source.address.rsplit(":", 1)[1])

    def client(self, origin: str | None = EXTENSION) -> RelayClient:
        return RelayClient(self.port, origin)


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[Relay]:
    served = Relay(tmp_path / "run")
    with served.source:
        yield served


# --- pairing -----------------------------------------------------------------------------


def test_a_pairing_code_is_eight_unambiguous_characters() -> None:
    for _ in range(50):
        code = new_code()
        assert len(code) == 9 and code[4] == "-"
        assert set(code.replace("-", "")) <= set(ALPHABET)
    assert not set("01OIL") & set(ALPHABET)


def test_the_right_code_pairs_and_gives_a_token(relay: Relay) -> None:
    client = relay.client()
    paired = client.pair("k7qm 2xpd")  # typed in lower case, a space for the dash
    assert paired["session"] == relay.session_id
    assert paired["task"] == "make files"
    assert len(paired["token"]) >= 43
    state = client.get("/state")
    assert state.status_code == 200
    assert state.json()["session"] == relay.session_id
    assert f"paired with the extension {EXTENSION}" in relay.notes[-1]


def test_a_wrong_code_is_refused_and_five_void_the_code(relay: Relay) -> None:
    client = relay.client()
    for n in range(1, MAX_WRONG + 1):
        response = client.post("/pair", {"code": "AAAA-AAAA"})
        assert response.status_code == 403
        assert "Wrong pairing code" in response.json()["error"]
        assert client.get("/state").status_code == 401, "a wrong code gives no access"
        if n < MAX_WRONG:
            assert f"{MAX_WRONG - n} tries left" in response.json()["error"]
    assert "void" in relay.notes[-1] and "Restart" in relay.notes[-1], "the terminal says so"
    late = client.post("/pair", {"code": CODE})
    assert late.status_code == 403
    assert "void" in late.json()["error"]
    assert client.token is None and client.get("/state").status_code == 401


@pytest.mark.parametrize("code", [None, 12345678, "", "K7QM-2XP"])
def test_a_code_that_is_no_code_counts_as_wrong(relay: Relay, code: object) -> None:
    response = relay.client().post("/pair", {"code": code})
    assert response.status_code == 403
    assert "4 tries left" in response.json()["error"]


# --- who the relay answers -----------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", [None, "null", "https://chat.example.com", "http://127.0.0.1:8766", "file://"]
)
def test_a_request_not_from_an_extension_is_refused_even_with_the_code(
    relay: Relay, origin: str | None
) -> None:
    client = relay.client(origin)
    for response in (client.post("/pair", {"code": CODE}), client.get("/state")):
        assert response.status_code == 403
        assert "only its browser extension" in response.json()["error"]
        assert "access-control-allow-origin" not in response.headers
    assert not any("paired" in note for note in relay.notes)


def test_after_pairing_another_extension_is_refused_even_with_the_token(relay: Relay) -> None:
    ours = relay.client()
    ours.pair(CODE)
    other = relay.client(OTHER_EXTENSION)
    other.token = ours.token
    assert other.get("/state").status_code == 403
    assert other.post("/pair", {"code": CODE}).status_code == 403
    refused = other.post("/reply", {"prompt_id": f"{relay.session_id}:1", "text": "[DONE]"})
    assert refused.status_code == 403
    assert "another extension" in refused.json()["error"]
    assert ours.get("/state").status_code == 200, "the paired one goes on"


def test_without_the_token_a_request_is_refused_401(relay: Relay) -> None:
    client = relay.client()
    before = client.get("/state")
    assert before.status_code == 401 and "Not paired" in before.json()["error"]
    client.pair(CODE)
    token = client.token
    for wrong in (None, "wrong", token + "x"):  # type: ignore[operator]
        client.token = wrong
        response = client.post("/reply", {"prompt_id": f"{relay.session_id}:1", "text": "[DONE]"})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.headers["access-control-allow-origin"] == EXTENSION
    client.token = token
    assert client.get("/state").json()["sequence"] is None, "nothing was applied"


def test_an_origin_less_get_as_chromium_sends_it_is_admitted_on_its_token_alone(
    relay: Relay,
) -> None:
    """Chromium sends an extension service worker's GET without Origin, with Sec-Fetch-Site:
    none (no web page can send that), Firefox with same-origin: the token decides; a POST
    still needs the Origin."""
    extension = relay.client()
    extension.pair(CODE)
    chromium = relay.client(None)
    chromium.chromium = True
    assert chromium.get("/state").status_code == 401, "no token"
    chromium.token = "wrong"
    assert chromium.get("/state").status_code == 401
    chromium.token = extension.token
    answered = chromium.get("/state")
    assert answered.status_code == 200 and answered.json()["session"] == relay.session_id
    assert "access-control-allow-origin" not in answered.headers
    assert chromium.get("/prompt", wait=0).status_code == 204
    assert chromium.post("/unpair").status_code == 403, "a POST without Origin"
    # Firefox says same-origin for its extension's GET (a page could say so only from the
    # relay's own origin, and the relay serves no page): the token decides again.
    firefox = {"Authorization": f"Bearer {extension.token}", "Sec-Fetch-Site": "same-origin"}
    assert httpx.get(f"{extension.base}/state", headers=firefox).status_code == 200
    firefox["Authorization"] = "Bearer wrong"
    assert httpx.get(f"{extension.base}/state", headers=firefox).status_code == 401
    for site in ("cross-site", "same-site", None):  # what another page's fetch says
        headers = {"Authorization": f"Bearer {extension.token}"}
        headers |= {"Sec-Fetch-Site": site} if site else {}
        page = httpx.get(f"{extension.base}/state", headers=headers)
        assert page.status_code == 403, site
    pair = httpx.post(
        f"{extension.base}/pair", headers={"Sec-Fetch-Site": "none"}, json={"code": CODE}
    )
    assert pair.status_code == 403, "pairing always needs the extension's Origin"
    assert extension.get("/state").status_code == 200, "still paired"


def test_firefox_s_extension_origin_pairs_and_is_answered_as_chrome_s(relay: Relay) -> None:
    firefox = relay.client("moz-extension://5c0d1a2b-3e4f-4a5b-8c6d-7e8f9a0b1c2d")
    preflight = httpx.options(
        f"{firefox.base}/reply",
        headers={"Origin": str(firefox.origin), "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == firefox.origin
    firefox.pair(CODE)
    answered = firefox.get("/state")
    assert answered.status_code == 200
    assert answered.headers["access-control-allow-origin"] == firefox.origin
    assert "paired with the extension moz-extension://" in "\n".join(relay.notes)
    chrome = relay.client(EXTENSION)  # bound to the Firefox add-on now: Chrome's is another
    assert chrome.post("/pair", {"code": CODE}).status_code == 403


def test_pairing_again_replaces_the_token_and_unpair_forgets_it(relay: Relay) -> None:
    client = relay.client()
    first = client.pair(CODE)["token"]
    second = client.pair(CODE)["token"]
    assert first != second
    client.token = first
    assert client.get("/state").status_code == 401
    client.token = second
    assert client.post("/unpair").status_code == 200
    assert client.get("/state").status_code == 401
    other = relay.client(OTHER_EXTENSION)
    other.pair(CODE)  # unpaired: the code pairs again
    assert other.get("/state").status_code == 200


def test_a_host_that_is_not_loopback_is_refused(relay: Relay) -> None:
    client = relay.client()
    client.pair(CODE)
    response = client.http.get(
        client.base + "/state", headers=client.headers() | {"Host": f"evil.test:{relay.port}"}
    )
    assert response.status_code == 403
    forwarded = client.http.get(
        client.base + "/state", headers=client.headers() | {"Host": "localhost:9000"}
    )
    assert forwarded.status_code == 200, "a forwarded port arrives with its own port"


def test_preflight_is_answered_only_for_the_extension_and_never_with_a_star(relay: Relay) -> None:
    def preflight(origin: str) -> httpx.Response:
        return httpx.options(
            f"http://127.0.0.1:{relay.port}/relay/v1/reply",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
                "Access-Control-Request-Private-Network": "true",
            },
        )

    ok = preflight(EXTENSION)
    assert ok.status_code == 204
    assert ok.headers["access-control-allow-origin"] == EXTENSION
    assert "authorization" in ok.headers["access-control-allow-headers"]
    assert ok.headers["access-control-allow-private-network"] == "true"
    assert preflight("https://chat.example.com").status_code == 403
    client = relay.client()
    client.pair(CODE)
    assert preflight(OTHER_EXTENSION).status_code == 403
    answered = client.get("/state")
    assert answered.headers["access-control-allow-origin"] == EXTENSION
    assert answered.headers["vary"] == "Origin"


def test_bad_requests_are_refused_with_a_reason(relay: Relay) -> None:
    client = relay.client()
    client.pair(CODE)
    not_json = client.http.post(client.base + "/reply", headers=client.headers(), content=b"{")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]
    no_id = client.post("/reply", {"prompt_id": "1", "text": "[DONE]"})
    assert no_id.status_code == 400 and "prompt_id" in no_id.json()["error"]
    assert client.get("/prompt", wait="soon").status_code == 400
    huge = "x" * (2 * relay.settings.max_reply_bytes + 70_000)
    too_big = client.post("/reply", {"prompt_id": f"{relay.session_id}:1", "text": huge})
    assert too_big.status_code == 413


def test_prompt_ids_are_parsed_strictly() -> None:
    assert parse_prompt_id("ab12cd34:3") == ("ab12cd34", 3)
    for bad in ("ab12cd34", ":3", "ab12cd34:0", "ab12cd34:-1", "ab:x", 3, None):
        assert parse_prompt_id(bad) is None


# --- the relay as the loop's reply source ----------------------------------------------------


def run_loop(relay: Relay) -> tuple[threading.Thread, list[Stop]]:
    stops: list[Stop] = []
    loop = SessionLoop(relay.store, relay.settings, relay.session_id, Listener())

    def run() -> None:
        with loop:
            stops.append(loop.run(relay.source))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, stops


def test_a_reply_saved_into_the_inbox_still_counts_and_the_relay_follows(relay: Relay) -> None:
    thread, stops = run_loop(relay)
    client = relay.client()
    client.pair(CODE)
    first = client.prompt()
    assert first["prompt_id"] == f"{relay.session_id}:1"
    assert "Sequence: 1" in first["text"] and first["chars"] == len(first["text"])
    # No prompt newer than the first yet: the long poll ends empty.
    assert client.get("/prompt", after=first["prompt_id"], wait=0.3).status_code == 204
    relay.store.inbox.joinpath("r.txt").write_text(
        '[CREATE_FILE path="from_inbox.txt"]\nfile\n[/CREATE_FILE]\n'
    )
    second = client.prompt(after=first["prompt_id"])
    assert second["prompt_id"] == f"{relay.session_id}:2"
    assert (relay.store.root / "workspace" / "from_inbox.txt").read_text() == "file\n"
    state = client.get("/state").json()
    assert state["status"] == "waiting_for_reply" and state["last_result"].startswith("applied")
    done = client.reply(second["prompt_id"], "[DONE]\nall made\n[/DONE]\n")
    assert done == {
        "applied": True,
        "refused": None,
        "results": done["results"],
        "next_prompt_id": None,
        "done": True,
        "review": None,
    }
    assert "[OK] DONE: Task marked complete" in done["results"]
    thread.join(10)
    assert stops[0].reason is StopReason.COMPLETE
    end = client.prompt(after=second["prompt_id"])
    assert end == {"done": True, "status": "done", "summary": "all made"}
    late = client.reply(second["prompt_id"], "[DONE]\nagain\n[/DONE]\n")
    assert late["applied"] is False and "done" in late["refused"]


def test_the_prompt_or_a_piece_of_it_posted_back_is_refused(relay: Relay) -> None:
    thread, stops = run_loop(relay)
    client = relay.client()
    client.pair(CODE)
    first = client.prompt()
    example = next(  # a command the PROTOCOL shows as an example: it must never run
        line for line in first["text"].splitlines() if line.startswith("[CREATE_FILE")
    )
    piece = first["text"][first["text"].index(example) :][:400]
    for text in (first["text"], piece):
        refused = client.reply(first["prompt_id"], text)
        assert refused["applied"] is False
        assert "that is the prompt" in refused["refused"]
    assert client.get("/state").json()["sequence"] == 1, "nothing was applied"
    assert list((relay.store.root / "workspace").iterdir()) == []
    client.reply(first["prompt_id"], "[DONE]\nnothing to do\n[/DONE]\n")
    thread.join(10)
    assert stops[0].reason is StopReason.COMPLETE


def test_a_second_answer_while_one_waits_is_refused_and_closing_answers_the_first() -> None:
    exchange = Exchange("ab12cd34", "t")
    outcomes: list[object] = []
    first = threading.Thread(
        target=lambda: outcomes.append(exchange.post("ab12cd34:1", "[DONE]\na\n[/DONE]", ""))
    )
    first.start()
    taken = exchange.take(threading.Event(), 10)  # the loop's side sees the first answer
    assert taken is not None and taken.answers == 1 and taken.source == "<relay>"
    second = exchange.post("ab12cd34:1", "[DONE]\nb\n[/DONE]", "https://chat.test/x")
    assert second.applied is False and "another answer is being applied" in str(second.refused)
    other = exchange.post("ffffffff:1", "[DONE]\nb\n[/DONE]", "")
    assert other.refused == "it answers session ffffffff; this relay serves ab12cd34"
    exchange.close()
    first.join(5)
    assert outcomes[0] == Outcome(False, "the agent stopped before applying it")
    late = exchange.post("ab12cd34:1", "[DONE]\nc\n[/DONE]", "")
    assert late.refused == "the session is stopped: nothing more is applied"
    assert exchange.next_prompt(None, 0) == {
        "done": True,
        "status": "stopped",
        "summary": "the agent stopped",
    }
