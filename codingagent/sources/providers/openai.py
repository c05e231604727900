"""The OpenAI chat-completions API (``POST {base_url}/chat/completions``): OpenAI, OpenRouter,
Ollama, llama.cpp, LM Studio, vLLM, SGLang, Z.AI, and the OpenAI-compatible endpoints of
Anthropic and Gemini. The PROTOCOL goes first, as the system message. Reasoning sent apart
(``reasoning_content``, ``reasoning``) is kept as the answer's thinking, never as its text."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from codingagent.sources.providers.base import Adapter
from codingagent.sources.providers.wire import (
    Answer,
    ChatError,
    Conversation,
    Streamed,
    Transient,
    Usage,
    error_message,
    json_object,
)


class OpenAIAdapter(Adapter):
    api: ClassVar[str] = "openai"
    shape: ClassVar[str] = "OpenAI chat-completions"

    def post_url(self) -> str:
        return f"{self.url}/chat/completions"

    def body(self, conversation: Conversation, stream: bool) -> dict[str, Any]:
        profile = self.profile
        body: dict[str, Any] = {
            "model": profile.model,
            "messages": conversation.chat(),
        }
        if profile.max_tokens is not None:
            body["max_tokens"] = profile.max_tokens
        if profile.temperature is not None:
            body["temperature"] = profile.temperature
        if stream:  # usage comes in a last chunk, where the server supports it
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        return body

    def read_answer(self, body: dict[str, Any], started: float) -> Answer:
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ChatError(
                f"The answer has no choices[0].message.content: {str(body)[:200]}"
            ) from None
        return Answer(
            text,
            str(body.get("model") or self.profile.model),
            _usage(body.get("usage")),
            time.monotonic() - started,
            choice.get("finish_reason"),
            _reasoning(choice["message"]),
        )

    def read_event(self, data: str, into: Streamed) -> None:
        if data == "[DONE]":
            into.ended = True
            return
        chunk = json_object(data, self.url, self.shape)
        if "error" in chunk:
            raise Transient(f"{self.url} sent an error mid-answer: {error_message(chunk)}")
        into.model = chunk.get("model") or into.model
        if chunk.get("usage"):
            into.usage = vars(_usage(chunk["usage"]))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                into.parts.append(text)
            thought = _reasoning(delta)
            if thought:
                into.thoughts.append(thought)
            into.finish_reason = choice.get("finish_reason") or into.finish_reason


def _reasoning(message: Any) -> str:
    """The reasoning a server sends apart from the text: ``reasoning_content`` (DeepSeek,
    vLLM, llama-server), ``reasoning`` (OpenRouter, Ollama's OpenAI endpoint)."""
    if not isinstance(message, dict):
        return ""
    found = message.get("reasoning_content") or message.get("reasoning")
    return found if isinstance(found, str) else ""


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        details.get("cached_tokens") if isinstance(details, dict) else None,
    )
