"""Anthropic's own Messages API (``POST {base_url}/messages``, base_url
``https://api.anthropic.com/v1``): the PROTOCOL goes as the ``system`` block marked
``cache_control`` (so every request after the first reads it from Anthropic's prompt cache, at
a tenth of the price), the key in ``x-api-key``, the API's version in ``anthropic-version``.
A stream is a run of typed events: ``message_start`` (input usage), ``content_block_delta``
(text), ``message_delta`` (``stop_reason``, output usage), ``message_stop``."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import httpx

from codingagent.sources.providers import wire
from codingagent.sources.providers.base import Adapter

VERSION = "2023-06-01"  # the anthropic-version header: the one stable version of the API
DEFAULT_MAX_TOKENS = 8192  # the API requires max_tokens; this when the profile gives none
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": wire.CUT}


class AnthropicAdapter(Adapter):
    api: ClassVar[str] = "anthropic"
    shape: ClassVar[str] = "Anthropic Messages"

    def post_url(self) -> str:
        return f"{self.url}/messages"

    def headers(self, http: httpx.Client) -> dict[str, str]:
        headers = {"anthropic-version": VERSION}
        return headers | ({"x-api-key": self.key} if self.key else {})

    def body(self, conversation: wire.Conversation, stream: bool) -> dict[str, Any]:
        profile = self.profile
        system = {
            "type": "text",
            "text": conversation.system,
            "cache_control": {"type": "ephemeral"},
        }
        body: dict[str, Any] = {
            "model": profile.model,
            "max_tokens": profile.max_tokens or DEFAULT_MAX_TOKENS,
            "system": [system],
            "messages": conversation.messages,
        }
        if profile.temperature is not None:
            body["temperature"] = profile.temperature
        if stream:
            body["stream"] = True
        return body

    def read_answer(self, body: dict[str, Any], started: float) -> wire.Answer:
        blocks = body.get("content")
        if body.get("type") != "message" or not isinstance(blocks, list):
            raise wire.ChatError(
                f"{self.url} sent an answer that is not a Messages API message: {str(body)[:200]}"
            )
        text = "".join(str(block.get("text", "")) for block in blocks if isinstance(block, dict))
        return wire.Answer(
            text,
            str(body.get("model") or self.profile.model),
            wire.Usage(**_usage(body.get("usage"))),
            time.monotonic() - started,
            _finish(body.get("stop_reason")),
        )

    def read_event(self, data: str, into: wire.Streamed) -> None:
        event = wire.json_object(data, self.url, self.shape)
        kind = event.get("type")
        if kind == "error":
            raise wire.Transient(
                f"{self.url} sent an error mid-answer: {wire.error_message(event)}"
            )
        if kind == "message_start":
            message = event.get("message") or {}
            into.model = message.get("model") or into.model
            # its output_tokens is a placeholder (1): the count comes with message_delta
            into.usage |= _usage(message.get("usage")) | {"tokens_out": None}
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                into.parts.append(str(delta.get("text", "")))
        elif kind == "message_delta":
            into.finish_reason = _finish((event.get("delta") or {}).get("stop_reason"))
            into.usage |= {k: v for k, v in _usage(event.get("usage")).items() if v is not None}
        elif kind == "message_stop":
            into.ended = True

    def unknown_model(self, status: int, message: str) -> bool:
        # {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}}
        return (status == 404 and message.startswith("model:")) or super().unknown_model(
            status, message
        )

    def not_found(self) -> str:
        return (
            f"{self.post_url()} does not exist (HTTP 404): base_url of the Messages API is "
            "https://api.anthropic.com/v1"
        )


def _usage(usage: Any) -> dict[str, int | None]:
    if not isinstance(usage, dict):
        return {}
    read, written = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    given = usage.get("input_tokens")  # the tokens after the last cache breakpoint only
    return {
        "tokens_in": None if given is None else given + (read or 0) + (written or 0),
        "tokens_out": usage.get("output_tokens"),
        "cache_read": read,
        "cache_written": written,
    }


def _finish(stop_reason: Any) -> str | None:
    if stop_reason is None:
        return None
    return _STOP_REASONS.get(str(stop_reason), str(stop_reason))
