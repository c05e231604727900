"""The contract every API adapter passes (docs/models.md, "Adding a provider"): the same
client driven against a fake of each API's documented wire format (tests/fake_apis.py),
in-process through ``httpx.MockTransport``. The end-to-end sessions over real servers on
127.0.0.1 are in tests/test_endpoint.py."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_apis import CopilotFake
from scripted_model import Cut, Fail, Garbage, Say, ScriptedModel

from codingagent.settings import ModelProfile
from codingagent.sources.providers import client as client_module
from codingagent.sources.providers import signin
from codingagent.sources.providers.client import ChatClient
from codingagent.sources.providers.wire import ChatError, Conversation

APIS = ["openai", "anthropic", "azure", "copilot"]
KEY = "sk-contract-key-0123456789abcdef"
SYSTEM = "THE PROTOCOL: answer with commands."
ASKED = Conversation(SYSTEM, [{"role": "user", "content": "Write hello.py"}])


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config folder (where a Copilot sign-in is kept), inside tmp_path."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def client_for(fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, **fields: Any) -> ChatClient:
    """A client of ``fake``'s API over its MockTransport, signed in or keyed as it needs."""
    model = fake
    table: dict[str, Any] = {"api": model.api, "base_url": model.url, "model": "scripted-1"}
    if model.api == "copilot":
        signin.store(signin.SignIn(CopilotFake.OAUTH, model.root, model.root))
    else:
        monkeypatch.setenv("CONTRACT_KEY", KEY)
        table["api_key_env"] = "CONTRACT_KEY"
        model.key = KEY
    if model.api == "azure":
        table |= {"deployment": "scripted-1", "api_version": "2024-10-21"}
    return ChatClient(ModelProfile.model_validate(table | fields), transport=model.transport)


def ask(client: ChatClient, notes: list[str] | None = None):
    seen = [] if notes is None else notes
    return client.complete(ASKED, threading.Event(), lambda line: None, seen.append)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [True, False])
def test_every_adapter_gets_the_answer_its_usage_and_finish(api, stream, monkeypatch):
    model = ScriptedModel(Say("[DONE]\nAll done.\n[/DONE]\n"), api=api)
    with client_for(model, monkeypatch, stream=stream, max_tokens=300) as client:
        answer = ask(client)
    assert answer.text == "[DONE]\nAll done.\n[/DONE]\n"
    assert answer.model == "scripted-1" and answer.finish_reason == "stop" and not answer.cut
    assert answer.usage.tokens_in and answer.usage.tokens_out == len(answer.text) // 4
    (body,) = model.requests
    assert body.get("stream", False) is stream and body["max_tokens"] == 300


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_stopped_by_the_output_limit_is_cut_in_every_api(api, stream, monkeypatch):
    model = ScriptedModel(Say('[CREATE_FILE path="a.py"]\nprint(', cut=True), api=api)
    with client_for(model, monkeypatch, stream=stream) as client:
        answer = ask(client)
    assert answer.cut and answer.finish_reason == "length"


@pytest.mark.parametrize("api", ["openai", "azure", "copilot"])
def test_chat_completions_apis_get_the_protocol_as_the_system_message(api, monkeypatch):
    model = ScriptedModel(Say("ok"), api=api)
    with client_for(model, monkeypatch) as client:
        ask(client)
    (body,) = model.requests
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, *ASKED.messages]


def test_anthropic_marks_the_protocol_cacheable_and_reports_cache_reads(monkeypatch):
    model = ScriptedModel(Say("one"), Say("two"), api="anthropic")
    with client_for(model, monkeypatch) as client:
        first, second = ask(client), ask(client)
    for body in model.requests:
        assert body["system"] == [
            {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
        ]
        assert body["messages"] == ASKED.messages
        assert body["max_tokens"] == 8192  # the API requires it: our default
    headers = model.headers[0]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    cached = len(SYSTEM) // 4
    assert (first.usage.cache_written, first.usage.cache_read) == (cached, 0)
    assert (second.usage.cache_written, second.usage.cache_read) == (0, cached)
    assert second.usage.tokens_in == first.usage.tokens_in  # cached tokens still count as input


def test_azure_sends_its_key_as_api_key_on_the_deployment_path(monkeypatch):
    model = ScriptedModel(Say("ok"), api="azure")
    with client_for(model, monkeypatch) as client:
        assert client.adapter.post_url() == (
            f"{model.root}/openai/deployments/scripted-1/chat/completions?api-version=2024-10-21"
        )
        ask(client)
    assert model.headers[0]["api-key"] == KEY and "authorization" not in model.headers[0]


def test_azure_v1_path_takes_the_model_in_the_body(monkeypatch):
    model = ScriptedModel(Say("ok"), api="azure")
    v1 = f"{model.root}/openai/v1"
    with client_for(model, monkeypatch, base_url=v1, deployment=None) as client:
        assert client.adapter.post_url() == f"{v1}/chat/completions"
        client.check()
        assert ask(client).text == "ok"


def test_an_unknown_azure_deployment_says_so(monkeypatch):
    model = ScriptedModel(api="azure")
    with (
        client_for(model, monkeypatch, deployment="gpt-9") as client,
        pytest.raises(
            ChatError, match="has no deployment 'gpt-9' \\(HTTP 404\\): check deployment"
        ),
    ):
        ask(client)


@pytest.mark.parametrize("api", APIS)
def test_429_and_5xx_are_retried_after_the_wait_the_server_asks_for(api, monkeypatch):
    model = ScriptedModel(
        Fail(429, "slow down", retry_after="0"), Fail(529, "overloaded", "0"), Say("ok"), api=api
    )
    notes: list[str] = []
    with client_for(model, monkeypatch) as client:
        assert ask(client, notes).text == "ok"
    assert notes == [
        f"{model.url} answered HTTP 429: slow down; retrying in 0.0 s",
        f"{model.url} answered HTTP 529: overloaded; retrying in 0.0 s",
    ]


@pytest.mark.parametrize("api", APIS)
def test_three_failures_are_one_clear_error(api, monkeypatch):
    model = ScriptedModel(*[Fail(500, "down", retry_after="0")] * 3, api=api)
    with client_for(model, monkeypatch) as client, pytest.raises(ChatError) as raised:
        ask(client)
    assert str(raised.value) == (
        f"{model.url} answered HTTP 500: down; gave up after 3 attempts. The session is "
        "intact: resume it when the server is back"
    )


@pytest.mark.parametrize("api", APIS)
def test_a_stream_cut_in_the_middle_is_asked_again_never_used_in_part(api, monkeypatch):
    model = ScriptedModel(Cut("a long answer that is cut"), Say("whole"), api=api)
    notes: list[str] = []
    monkeypatch.setattr(client_module, "BACKOFF_S", 0.0)
    with client_for(model, monkeypatch) as client:
        assert ask(client, notes).text == "whole"
    assert "dropped" in notes[0] and len(model.requests) == 2


@pytest.mark.parametrize("api", APIS)
def test_an_unknown_model_lists_what_the_server_offers(api, monkeypatch):
    model = ScriptedModel(models=("scripted-1", "other-2"), api=api)
    fields = {"deployment": None, "base_url": f"{model.root}/openai/v1"} if api == "azure" else {}
    with client_for(model, monkeypatch, model="gpt-9", **fields) as client:
        with pytest.raises(ChatError, match="does not offer the model 'gpt-9'") as raised:
            ask(client)
        assert str(raised.value).endswith("It offers: other-2, scripted-1")
        with pytest.raises(ChatError, match="It offers: other-2, scripted-1"):
            client.check()


@pytest.mark.parametrize("api", ["openai", "anthropic", "azure"])
def test_a_refused_key_names_the_variable_and_never_shows_the_key(api, monkeypatch):
    model = ScriptedModel(Say("ok"), api=api)
    client = client_for(model, monkeypatch)
    model.key = "the-right-key"
    with client, pytest.raises(ChatError) as raised:
        ask(client)
    said = str(raised.value)
    assert said.startswith(f"{model.url} refused the API key (HTTP 401)")
    assert said.endswith("check the key in $CONTRACT_KEY") and KEY not in said
    assert "CONTRACT_KEY" not in os.environ  # taken out: no command the agent runs inherits it


def test_an_openai_error_quoting_the_key_is_blanked(monkeypatch):
    model = ScriptedModel(Fail(400, f"bad request with key {KEY}"))
    with client_for(model, monkeypatch) as client, pytest.raises(ChatError) as raised:
        ask(client)
    assert KEY not in str(raised.value) and "with key ***" in str(raised.value)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [True, False])
def test_a_body_not_in_the_apis_shape_is_a_clear_error(api, stream, monkeypatch):
    model = ScriptedModel(Garbage("<html>Bad gateway</html>"), api=api)
    with (
        client_for(model, monkeypatch, stream=stream) as client,
        pytest.raises(
            ChatError, match=r"sent something that is not .* JSON: '<html>Bad gateway</html>'"
        ),
    ):
        ask(client)


@pytest.mark.parametrize("api", APIS)
def test_check_says_the_endpoint_answers_or_why_not(api, monkeypatch):
    with client_for(ScriptedModel(api=api), monkeypatch) as client:
        client.check()  # answers, takes the key, offers the model


def test_copilot_gets_a_fresh_chat_token_when_the_api_refuses_one(monkeypatch):
    model = ScriptedModel(Say("one"), Say("two"), api="copilot")
    with client_for(model, monkeypatch) as client:
        assert ask(client).text == "one"
        model.fake.expire()
        assert ask(client).text == "two"
    assert len(model.fake.chat_tokens) == 2
    first, second = (h["authorization"] for h in model.headers)
    assert first != second and second == f"Bearer {model.fake.chat_tokens[-1]}"


def test_copilot_without_a_sign_in_says_how_to_sign_in():
    profile = ModelProfile(api="copilot", base_url="http://x", model="gpt-4.1")
    with pytest.raises(ChatError, match="Not signed in to GitHub Copilot: run codingagent login"):
        ChatClient(profile)


@pytest.mark.parametrize("api", APIS)
def test_progress_counts_tokens_not_chunks(api, monkeypatch):
    """Estimated from the characters (about four a token) until the API counts them."""
    text = "[DONE]\nCreated hello.py.\n[/DONE]\n"  # 33 characters, sent in 5 chunks
    model = ScriptedModel(Say(text), api=api)
    lines: list[str | None] = []
    with client_for(model, monkeypatch) as client:
        client.complete(ASKED, threading.Event(), lines.append, lambda _: None)
    counts = [
        line.split(": ")[1].split(" tokens")[0]
        for line in lines
        if line and "received" in line and "about 0 " not in line  # events before the text
    ]
    assert counts[:5] == ["about 2", "about 4", "about 6", "about 8", "about 9"]
    if api != "anthropic":  # the usage chunk comes before [DONE]
        assert counts[-1] == "8"
