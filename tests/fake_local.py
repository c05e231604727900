"""Fakes of the two local servers whose windows bite, behaving as their documentation says
(served by tests/scripted_model.py, in-process or on 127.0.0.1; ``ScriptedModel(api=...)``
with ``"ollama"`` or ``"llama-server"``).

**Ollama** (its docs: the API reference's /api/chat, /api/show, /api/ps, /api/version and
/api/tags; "OpenAI compatibility"; "Context length"; the FAQ on the context window):

* ``GET /api/version`` answers ``{"version": ...}``: how a server is known to be Ollama.
* ``POST /api/show`` gives ``parameters`` (Modelfile parameters as text, "num_ctx N" among
  them when set) and ``model_info`` with ``"<arch>.context_length"``, the trained length.
* ``GET /api/ps`` lists the loaded models with the ``context_length`` each holds.
* A window is ``options.num_ctx`` of a native ``/api/chat`` request, else the server's default
  (``OLLAMA_CONTEXT_LENGTH``, 4,096 on machines under 24 GiB of VRAM): the OpenAI-compatible
  ``/v1/chat/completions`` takes no ``options``, so there it is always the default.
* A prompt longer than the window is cut from the front, without an error or a word (aider's
  docs: Ollama "silently discards context that exceeds the window"). The fake model then
  answers as a model that lost its instructions: in prose, with no command.
* ``/api/chat`` streams newline-delimited JSON (``application/x-ndjson``), ``message.content``
  and a thinking model's ``message.thinking`` apart; the last object has ``done: true``,
  ``done_reason``, ``prompt_eval_count``, ``eval_count``. ``stream`` defaults to true.

**llama-server** (llama.cpp's tools/server README: ``-c, --ctx-size``, ``GET /props``,
``POST /tokenize``, the OpenAI-compatible chat completions and their errors):

* ``GET /props`` gives ``default_generation_settings.n_ctx`` (the window of a slot).
* ``POST /tokenize`` with ``{"content": ...}`` answers ``{"tokens": [...]}``.
* ``GET /v1/models`` lists the one model it loaded under its file name: the model a request
  names is not checked.
* A request whose prompt is longer than ``n_ctx`` is refused: HTTP 400 with
  ``{"error": {"code": 400, "message": "request (N tokens) exceeds the available context size
  (M tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": N,
  "n_ctx": M}}``. A thinking model's reasoning comes apart as ``reasoning_content``.

Both count tokens with the same fake tokenizer (:func:`tokens`: a token per four bytes, and
``TEMPLATE`` tokens around each message), never the agent's own estimate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
from fake_apis import OpenAIFake, _json, sse
from scripted_model import Say, Step

TEMPLATE = 4  # the chat template's tokens around each message
LOST = "I am not sure what you want me to do. Could you tell me more about the task?"


def tokens(text: str) -> int:
    """The fake servers' tokenizer: a token per four bytes of UTF-8."""
    return math.ceil(len(text.encode()) / 4)


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(tokens(str(m.get("content") or "")) + TEMPLATE for m in messages)


class OllamaFake(OpenAIFake):
    """An Ollama server: ``default_ctx`` is its window when a request sets none, ``trained``
    the model's trained length, ``parameters`` its Modelfile parameters. ``seen`` holds the
    text the model saw of each request (cut from the front when over the window)."""

    prefix = "/v1"
    default_ctx = 4096
    trained: int | None = 32768
    parameters = "temperature 0.7"

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.seen: list[str] = []
        self.windows: list[int] = []  # the window of each chat request
        self.loaded: int | None = None  # the window the loaded model holds (/api/ps)

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/api/version":
            return _json(200, {"version": "0.12.6"})
        if path == "/api/tags":
            return _json(200, {"models": [{"name": m, "model": m} for m in self.model.models]})
        if path == "/api/ps":
            loaded = [
                {"name": m, "model": m, "context_length": self.loaded}
                for m in self.model.models[:1]
                if self.loaded
            ]
            return _json(200, {"models": loaded})
        if path == "/api/show":
            return self.show(json.loads(request.content))
        if path == "/api/chat":
            return self.chat(json.loads(request.content), request.headers)
        if path == "/v1/chat/completions" and request.method == "POST":
            body = json.loads(request.content)
            step = self.lived(body, self.default_ctx, request.headers)
            return self.answer(body, step)
        return super().handle(request)

    def show(self, body: dict[str, Any]) -> httpx.Response:
        if body.get("model") not in self.model.models:
            return _json(404, {"error": f"model '{body.get('model')}' not found"})
        info: dict[str, Any] = {"general.architecture": "qwen2"}
        if self.trained:
            info["qwen2.context_length"] = self.trained
        return _json(200, {"parameters": self.parameters, "model_info": info})

    def lived(self, body: dict[str, Any], window: int, headers: httpx.Headers) -> Step:
        """The request as the model lived it: cut from the front to ``window`` tokens, in
        silence; a model that lost its instructions answers in prose."""
        self.windows.append(window)
        self.loaded = window
        text = "\n".join(str(m.get("content") or "") for m in body["messages"])
        over = prompt_tokens(body["messages"]) - window
        seen = text[4 * over :] if over > 0 else text
        self.seen.append(seen)
        step = self.model.next_step(body, headers)
        if over > 0 and isinstance(step, Say):
            return Say(LOST)
        return step

    def chat(self, body: dict[str, Any], headers: httpx.Headers) -> httpx.Response:
        if body.get("model") not in self.model.models:
            return _json(404, {"error": f"model '{body.get('model')}' not found"})
        window = (body.get("options") or {}).get("num_ctx") or self.default_ctx
        step = self.lived(body, window, headers)
        if not isinstance(step, Say):
            return self.answer(body, step)  # failures as the OpenAI fakes send them
        name = str(body["model"])
        usage = {"prompt_eval_count": min(prompt_tokens(body["messages"]), window)}
        usage["eval_count"] = tokens(step.text)
        reason = "length" if step.cut else "stop"
        if body.get("stream", True) is False:
            message = {"role": "assistant", "content": step.text, "thinking": step.thinking}
            done = {"model": name, "message": message, "done": True, "done_reason": reason}
            return _json(200, done | usage)
        content = self.ndjson(name, step, reason, usage)
        return httpx.Response(
            200, headers={"content-type": "application/x-ndjson"}, content=content
        )

    def ndjson(self, name: str, step: Say, reason: str, usage: dict[str, int]) -> Iterator[bytes]:
        def line(value: dict[str, Any]) -> bytes:
            return json.dumps(value).encode() + b"\n"

        for piece in self.model.pieces(Say(step.thinking)) if step.thinking else []:
            yield line(
                {
                    "model": name,
                    "message": {"role": "assistant", "content": "", "thinking": piece},
                    "done": False,
                }
            )
        for piece in self.model.pieces(step):
            yield line(
                {"model": name, "message": {"role": "assistant", "content": piece}, "done": False}
            )
        end = {"model": name, "message": {"role": "assistant", "content": ""}, "done": True}
        yield line(end | {"done_reason": reason} | usage)


class LlamaServerFake(OpenAIFake):
    """A llama-server started with ``-c n_ctx`` (one slot), serving ``model.gguf``."""

    prefix = "/v1"
    n_ctx = 8192
    advertised: int | None = None  # what /props says, when it is not n_ctx (a test's lie)

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.refused: list[int] = []  # the prompt tokens of each refused request
        self.tokenized = 0  # /tokenize requests

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/props":
            settings = {"n_ctx": self.advertised or self.n_ctx, "temperature": 0.8}
            return _json(200, {"default_generation_settings": settings, "total_slots": 1})
        if path == "/tokenize" and request.method == "POST":
            self.tokenized += 1
            content = str(json.loads(request.content).get("content", ""))
            return _json(200, {"tokens": list(range(tokens(content)))})
        if path == "/health":
            return _json(200, {"status": "ok"})
        if path == "/v1/models":
            return _json(200, {"object": "list", "data": [{"id": "model.gguf"}]})
        if path == "/v1/chat/completions" and request.method == "POST":
            body = json.loads(request.content)
            needed = prompt_tokens(body["messages"])
            if needed > self.n_ctx:
                self.refused.append(needed)
                error = {
                    "code": 400,
                    "message": f"request ({needed} tokens) exceeds the available context size "
                    f"({self.n_ctx} tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": needed,
                    "n_ctx": self.n_ctx,
                }
                return _json(400, {"error": error})
            return self.answer(body, self.model.next_step(body, request.headers))
        return super().handle(request)

    def stream(self, name: str, step: Step, with_usage: bool) -> Iterator[bytes]:
        if isinstance(step, Say) and step.thinking:
            for piece in self.model.pieces(Say(step.thinking)):
                delta = {"reasoning_content": piece}
                yield sse({"model": name, "choices": [{"index": 0, "delta": delta}]})
        yield from super().stream(name, step, with_usage)

    def completion(self, name: str, step: Say) -> dict[str, Any]:
        done = super().completion(name, step)
        if step.thinking:
            done["choices"][0]["message"]["reasoning_content"] = step.thinking
        return done


LOCAL_FAKES: dict[str, Any] = {"ollama": OllamaFake, "llama-server": LlamaServerFake}
