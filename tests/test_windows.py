"""Each model's window, asked of its server (codingagent/sources/providers/windows.py), in
process through ``httpx.MockTransport``: servers answering as their documentation shows;
the over-the-window refusals of each server read; the Ollama adapter's request."""

from __future__ import annotations

import json

import httpx
import pytest

from codingagent.settings import ModelProfile
from codingagent.sources.providers.ollama import OllamaAdapter, num_ctx
from codingagent.sources.providers.windows import DEFAULTS, UNKNOWN_WINDOW, discover, fix_line
from codingagent.sources.providers.wire import Conversation, Streamed, overflow


def server(routes: dict[str, object]) -> httpx.Client:
    """A client whose server answers ``routes`` (path -> JSON) and 404 elsewhere."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path in routes:
            return httpx.Response(200, json=routes[request.url.path])
        return httpx.Response(404, json={"error": "not found"})

    return httpx.Client(transport=httpx.MockTransport(handle))


def profile(**fields: object) -> ModelProfile:
    return ModelProfile.model_validate({"base_url": "http://box:9/v1", "model": "m"} | fields)


def test_vllm_and_sglang_say_max_model_len_in_their_model_list():
    http = server({"/v1/models": {"data": [{"id": "other"}, {"id": "m", "max_model_len": 16384}]}})
    window = discover(http, profile())
    assert (window.tokens, window.server) == (16384, "vllm")
    assert "--max-model-len 32768" in fix_line(window, profile(), 20000)


def test_openrouter_says_context_length_in_its_model_list():
    http = server({"/v1/models": {"data": [{"id": "m", "context_length": 131072}]}})
    assert discover(http, profile()).tokens == 131072


def test_lm_studio_says_the_loaded_context_length_first():
    loaded = {"id": "m", "max_context_length": 32768, "loaded_context_length": 8192}
    http = server({"/api/v0/models": {"data": [loaded]}})
    window = discover(http, profile())
    assert (window.tokens, window.server) == (8192, "lm-studio")
    del loaded["loaded_context_length"]
    assert discover(server({"/api/v0/models": {"data": [loaded]}}), profile()).tokens == 32768


def test_ollama_num_ctx_in_the_parameters_and_its_default():
    shown = {"parameters": "temperature 0.7\nnum_ctx 12288", "model_info": {}}
    http = server({"/api/version": {"version": "0.12.6"}, "/api/show": shown})
    window = discover(http, profile())
    assert (window.tokens, window.server, window.trained) == (12288, "ollama", 12288)
    bare = server({"/api/version": {"version": "0.1.0"}, "/api/show": {"parameters": ""}})
    window = discover(bare, profile())
    assert window.tokens == 4096 and window.source == "Ollama's default"
    assert "OLLAMA_CONTEXT_LENGTH=8192" in fix_line(window, profile(), 5000)


def test_the_profile_wins_and_known_hosts_need_no_probe():
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(404)

    http = httpx.Client(transport=httpx.MockTransport(handle))
    openai = profile(base_url="https://api.openai.com/v1")
    assert discover(http, openai).tokens == DEFAULTS["api.openai.com"] and calls == []
    assert discover(http, profile(context_tokens=3000)).tokens == 3000
    assert discover(http, profile()).tokens == UNKNOWN_WINDOW
    assert (
        discover(http, profile(api="anthropic", base_url="https://api.anthropic.com/v1")).tokens
        == 200_000
    )


@pytest.mark.parametrize(
    ("body", "told"),
    [
        (
            {
                "error": {
                    "code": 400,
                    "message": "request (9000 tokens) exceeds the available "
                    "context size (8192 tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 9000,
                    "n_ctx": 8192,
                }
            },
            (9000, 8192),
        ),
        (
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, "
                    "you requested 9500 tokens (8500 in the messages, 1000 in the completion)."
                }
            },
            (9500, 8192),
        ),
        ({"error": {"code": "context_length_exceeded", "message": "too long"}}, (None, None)),
        ({"error": {"message": "model 'x' not found"}}, None),
    ],
)
def test_each_servers_over_the_window_refusal_is_read(body, told):
    assert overflow(body) == told


def test_ollama_is_asked_for_the_window_the_request_needs_never_less_than_before():
    adapter = OllamaAdapter(profile(keep_alive="10m", max_tokens=500))
    adapter.trained = 32768
    assert adapter.url == "http://box:9"
    body = adapter.body(Conversation("S", [{"role": "user", "content": "u"}], 5000), True)
    assert body["options"] == {"num_ctx": 8192, "num_predict": 500}
    assert body["keep_alive"] == "10m" and body["stream"] is True
    smaller = adapter.body(Conversation("S", [], 1000), False)
    assert smaller["options"]["num_ctx"] == 8192  # not shrunk: Ollama would reload the model
    assert num_ctx(100_000, 32768) == 32768 and num_ctx(10, None) == 2048


def test_the_live_line_knows_a_model_is_thinking():
    streamed = Streamed("m")
    streamed.thoughts.append("hmm")
    assert streamed.thinking
    streamed = Streamed("m", parts=["<think>", "\nlet me see"])
    assert streamed.thinking
    streamed.parts += ["</think>", "[DONE]"]
    assert not streamed.thinking


def test_an_ollama_stream_reads_content_thinking_and_the_counts():
    adapter = OllamaAdapter(profile())
    streamed = Streamed("m")
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "", "thinking": "hm"}},
        {"model": "m", "message": {"role": "assistant", "content": "[DONE]"}, "done": False},
        {
            "model": "m",
            "message": {"content": ""},
            "done": True,
            "done_reason": "length",
            "prompt_eval_count": 120,
            "eval_count": 7,
        },
    ]
    for line in lines:
        adapter.read_event(json.dumps(line), streamed)
    answer = streamed.answer(0.0)
    assert (answer.text, answer.thinking, answer.cut) == ("[DONE]", "hm", True)
    assert (answer.usage.tokens_in, answer.usage.tokens_out) == (120, 7)
