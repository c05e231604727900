"""Ollama's native chat API (``POST {root}/api/chat``), chosen by itself for a profile whose
server is Ollama (:mod:`.windows` recognizes it by ``GET /api/version``), whatever its
``base_url`` says: Ollama's OpenAI-compatible endpoint cannot be given a window, so a prompt
longer than Ollama's default (4,096 tokens on most machines) would be cut from the front
without a word. Here each request sets ``options.num_ctx``: the tokens the request needs
(its reply's reserve included), rounded up to a power of two so the model is not loaded again
for every request, at most the model's trained length, and never smaller than a request
before it in the run (docs/models.md, "Context windows").

The stream is newline-delimited JSON: each line has ``message.content`` (and
``message.thinking``, a thinking model's reasoning, kept apart), the last ``done: true``
with ``done_reason``, ``prompt_eval_count`` and ``eval_count``. ``keep_alive`` comes from the
profile."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from codingagent.settings import ModelProfile
from codingagent.sources.providers import wire
from codingagent.sources.providers.base import Adapter
from codingagent.sources.providers.windows import server_root

SMALLEST_WINDOW = 2048  # num_ctx is never asked smaller than this


class OllamaAdapter(Adapter):
    api: ClassVar[str] = "ollama"
    shape: ClassVar[str] = "Ollama chat"
    stream_type: ClassVar[str] = "application/x-ndjson"

    trained: int | None = None  # the model's trained length: num_ctx's ceiling
    asked = 0  # the largest num_ctx asked so far: Ollama loads the model again for a new one

    def __init__(self, profile: ModelProfile) -> None:
        super().__init__(profile)
        self.url = server_root(profile.base_url)  # the native API is at the server's root

    def post_url(self) -> str:
        return f"{self.url}/api/chat"

    def body(self, conversation: wire.Conversation, stream: bool) -> dict[str, Any]:
        profile = self.profile
        options: dict[str, Any] = {}
        if conversation.context is not None:  # never smaller than before: no reload
            self.asked = max(self.asked, num_ctx(conversation.context, self.trained))
            options["num_ctx"] = self.asked
        if profile.max_tokens is not None:
            options["num_predict"] = profile.max_tokens
        if profile.temperature is not None:
            options["temperature"] = profile.temperature
        body: dict[str, Any] = {
            "model": profile.model,
            "messages": conversation.chat(),
            "stream": stream,
            "options": options,
        }
        if profile.keep_alive is not None:
            body["keep_alive"] = _keep_alive(profile.keep_alive)
        return body

    def read_answer(self, body: dict[str, Any], started: float) -> wire.Answer:
        message = body.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise wire.ChatError(f"The answer has no message.content: {str(body)[:200]}")
        return wire.Answer(
            message["content"],
            str(body.get("model") or self.profile.model),
            _usage(body),
            time.monotonic() - started,
            _finish(body.get("done_reason")),
            str(message.get("thinking") or ""),
        )

    def read_event(self, data: str, into: wire.Streamed) -> None:
        chunk = wire.json_object(data, self.url, self.shape)
        if "error" in chunk:
            raise wire.Transient(f"{self.url} sent an error mid-answer: {chunk['error']}")
        into.model = chunk.get("model") or into.model
        message = chunk.get("message") or {}
        if isinstance(message, dict):
            if message.get("content"):
                into.parts.append(str(message["content"]))
            if message.get("thinking"):
                into.thoughts.append(str(message["thinking"]))
        if chunk.get("done"):
            into.usage = vars(_usage(chunk))
            into.finish_reason = _finish(chunk.get("done_reason"))
            into.ended = True

    def models_url(self) -> str | None:
        return f"{self.url}/api/tags"

    def model_ids(self, body: Any) -> list[str]:
        models = body.get("models") if isinstance(body, dict) else None
        return sorted(str(m.get("name")) for m in models or [] if isinstance(m, dict))

    def not_found(self) -> str:
        return f"{self.post_url()} does not exist (HTTP 404): is this an Ollama server?"


def num_ctx(needed: int, trained: int | None) -> int:
    """The window to ask Ollama for: ``needed`` rounded up to a power of two (at least
    ``SMALLEST_WINDOW``), at most ``trained``."""
    window = SMALLEST_WINDOW
    while window < needed:
        window *= 2
    return min(window, trained) if trained else window


def _keep_alive(value: str) -> str | int:
    """A duration ("5m") as Ollama takes it; a bare number of seconds as a number."""
    try:
        return int(value)
    except ValueError:
        return value


def _finish(reason: object) -> str | None:
    return wire.CUT if reason == "length" else (str(reason) if reason else None)


def _usage(body: dict[str, Any]) -> wire.Usage:
    tokens_in, tokens_out = body.get("prompt_eval_count"), body.get("eval_count")
    return wire.Usage(
        tokens_in if isinstance(tokens_in, int) else None,
        tokens_out if isinstance(tokens_out, int) else None,
    )
