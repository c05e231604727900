"""Fakes of the APIs the agent speaks, each in its documented wire format: OpenAI chat
completions, Azure OpenAI (deployment and v1 paths), Anthropic Messages, GitHub Copilot (the
device flow, the token exchange and the chat API). Each ``handle`` takes an ``httpx.Request``
and gives an ``httpx.Response``; tests/scripted_model.py serves them in-process or on
127.0.0.1 and supplies the script."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import httpx

if TYPE_CHECKING:
    from scripted_model import ScriptedModel, Step

from scripted_model import Cut, Fail, Garbage, Say, Stall

PROMPT_TOKENS = 1000  # what the OpenAI fakes say every prompt costs


def sse(value: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(value)}\n\n".encode()


class OpenAIFake:
    """``POST /v1/chat/completions`` and ``GET /v1/models`` with a Bearer key."""

    prefix = "/v1"

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            if request.url.path == f"{self.prefix}/models" and self.authorized(request):
                return _json(200, {"object": "list", "data": self.listed()})
            return self.error(404 if self.authorized(request) else 401, "no such path")
        if request.url.path != self.chat_path(request):
            return self.error(404, "Resource not found")
        if not self.authorized(request):
            given = request.headers.get("authorization", "")
            return self.error(401, f"Incorrect API key provided: {given.removeprefix('Bearer ')}")
        body = json.loads(request.content)
        named = self.named_model(request, body)
        if named not in self.model.models:
            return self.error(404, f"The model `{named}` does not exist", "model_not_found")
        return self.answer(body, self.model.next_step(body, request.headers))

    def chat_path(self, request: httpx.Request) -> str:
        return f"{self.prefix}/chat/completions"

    def named_model(self, request: httpx.Request, body: dict[str, Any]) -> str:
        return str(body.get("model"))

    def listed(self) -> list[dict[str, str]]:
        return [{"id": m, "object": "model"} for m in self.model.models]

    def authorized(self, request: httpx.Request) -> bool:
        key = self.model.key
        return not key or request.headers.get("authorization") == f"Bearer {key}"

    def error(
        self, status: int, message: str, code: str | None = None, retry_after: str | None = None
    ) -> httpx.Response:
        headers = {"Retry-After": retry_after} if retry_after else {}
        error = {"message": message, "type": "error", "code": code}
        return _json(status, {"error": error}, headers)

    def answer(self, body: dict[str, Any], step: Step) -> httpx.Response:
        if isinstance(step, Fail):
            return self.error(step.status, step.message, retry_after=step.retry_after)
        if isinstance(step, Garbage):
            return httpx.Response(200, headers=_JSON, content=step.body.encode())
        name = str(body.get("model"))
        if not body.get("stream"):
            assert isinstance(step, Say), "a cut needs a streamed request"
            return _json(200, self.completion(name, step))
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return httpx.Response(200, headers=_SSE, content=self.stream(name, step, with_usage))

    def completion(self, name: str, step: Say) -> dict[str, Any]:
        message = {"role": "assistant", "content": step.text}
        finish = "length" if step.cut else "stop"
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(step.text),
        }

    def stream(self, name: str, step: Step, with_usage: bool) -> Iterator[bytes]:
        assert isinstance(step, Say | Cut | Stall)
        for piece in self.model.pieces(step):
            yield sse({"model": name, "choices": [{"index": 0, "delta": {"content": piece}}]})
        finish = "length" if isinstance(step, Say) and step.cut else "stop"
        yield sse({"model": name, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if with_usage:
            yield sse({"model": name, "choices": [], "usage": _usage(step.text)})
        yield b"data: [DONE]\n\n"


class AzureFake(OpenAIFake):
    """Azure OpenAI: ``/openai/deployments/{name}/chat/completions?api-version=...`` (the
    deployments are the script's ``models``) and the v1 API under ``/openai/v1``; the key in an
    ``api-key`` header; 404s as Azure words them."""

    prefix = ""  # base_url is the resource; the v1 API's is {resource}/openai/v1

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path == "/openai/v1/models" and self.authorized(request):
            return _json(200, {"object": "list", "data": self.listed()})
        if path.startswith("/openai/deployments/") and "api-version" not in request.url.params:
            return self.error(404, "Resource not found", "404")
        if path.startswith("/openai/deployments/") and path.split("/")[3] not in self.model.models:
            message = "The API deployment for this resource does not exist."
            return self.error(404, message, "DeploymentNotFound")
        return super().handle(request)

    def chat_path(self, request: httpx.Request) -> str:
        path = request.url.path
        if path.startswith("/openai/deployments/"):
            return path
        return "/openai/v1/chat/completions"

    def named_model(self, request: httpx.Request, body: dict[str, Any]) -> str:
        path = request.url.path
        if path.startswith("/openai/deployments/"):
            return path.split("/")[3]
        return str(body.get("model"))

    def authorized(self, request: httpx.Request) -> bool:
        key = self.model.key
        return not key or request.headers.get("api-key") == key

    def error(
        self, status: int, message: str, code: str | None = None, retry_after: str | None = None
    ) -> httpx.Response:
        if status == 401:
            message = "Access denied due to invalid subscription key or wrong API endpoint."
        return super().error(status, message, code or str(status), retry_after)


class CopilotFake(OpenAIFake):
    """GitHub's device flow (``/login/device/code``, ``/login/oauth/access_token``), Copilot's
    token exchange (``/copilot_internal/v2/token``) and chat API (``/chat/completions`` with a
    Bearer chat token, which :meth:`expire` invalidates), all at one root."""

    prefix = ""
    OAUTH = "gho_scripted_oauth_token_0123456789"
    CLIENT_ID = "Iv1.b507a08c87ecfe98"

    def __init__(self, model: ScriptedModel) -> None:
        super().__init__(model)
        self.polls: list[dict[str, Any]] = [{"error": "authorization_pending"}]
        self.polled = 0
        self.interval = 0  # seconds between polls, as the device-code answer says
        self.expires_in = 900
        self.chat_tokens: list[str] = []  # handed out, newest last; only the newest is valid
        self.valid = True

    def expire(self) -> None:
        self.valid = False

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/login/device/code":
            form = parse_qs(request.content.decode())
            assert form["client_id"] == [self.CLIENT_ID]
            code = {"device_code": "dev-1", "user_code": "WDJB-MJHT", "interval": self.interval}
            code["expires_in"] = self.expires_in
            return _json(200, code | {"verification_uri": f"{self.model.root}/login/device"})
        if path == "/login/oauth/access_token":
            form = parse_qs(request.content.decode())
            assert form["device_code"] == ["dev-1"] and form["client_id"] == [self.CLIENT_ID]
            self.polled += 1
            polled = self.polls.pop(0) if self.polls else {"access_token": self.OAUTH}
            return _json(200, polled)
        if path == "/copilot_internal/v2/token":
            if request.headers.get("authorization") != f"token {self.OAUTH}":
                return _json(401, {"message": "Bad credentials"})
            self.chat_tokens.append(f"tid=scripted;exp={len(self.chat_tokens)}")
            self.valid = True
            return _json(200, {"token": self.chat_tokens[-1], "expires_at": time.time() + 1800})
        return super().handle(request)

    def chat_path(self, request: httpx.Request) -> str:
        return "/chat/completions"

    def authorized(self, request: httpx.Request) -> bool:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        return self.valid and bool(self.chat_tokens) and token == self.chat_tokens[-1]

    def answer(self, body: dict[str, Any], step: Step) -> httpx.Response:
        assert self.model.headers[-1].get("copilot-integration-id") == "vscode-chat"
        return super().answer(body, step)


class AnthropicFake:
    """The Messages API: ``POST /v1/messages`` with ``x-api-key`` and ``anthropic-version``,
    typed stream events, usage with prompt-cache figures (a system block marked
    ``cache_control`` is cached: the same text later is a cache read)."""

    prefix = "/v1"

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.cached: set[str] = set()

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("x-api-key", "") != self.model.key:
            return self.error(401, "authentication_error", "invalid x-api-key")
        if "anthropic-version" not in request.headers:
            return self.error(400, "invalid_request_error", "anthropic-version: header required")
        if request.method == "GET" and request.url.path == "/v1/models":
            listed = [{"type": "model", "id": m} for m in self.model.models]
            return _json(200, {"data": listed, "has_more": False})
        if request.method != "POST" or request.url.path != "/v1/messages":
            return self.error(404, "not_found_error", "Not Found")
        body = json.loads(request.content)
        if "max_tokens" not in body:
            return self.error(400, "invalid_request_error", "max_tokens: Field required")
        if body.get("model") not in self.model.models:
            return self.error(404, "not_found_error", f"model: {body.get('model')}")
        step = self.model.next_step(body, request.headers)
        if isinstance(step, Fail):
            return self.error(step.status, "api_error", step.message, step.retry_after)
        if isinstance(step, Garbage):
            return httpx.Response(200, headers=_JSON, content=step.body.encode())
        usage = self._usage(body)
        if not body.get("stream"):
            assert isinstance(step, Say)
            return _json(200, self._message(body["model"], step, usage))
        return httpx.Response(200, headers=_SSE, content=self._stream(body["model"], step, usage))

    def error(
        self, status: int, kind: str, message: str, retry_after: str | None = None
    ) -> httpx.Response:
        headers = {"retry-after": retry_after} if retry_after else {}
        return _json(
            status, {"type": "error", "error": {"type": kind, "message": message}}, headers
        )

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        usage = {"input_tokens": len(json.dumps(body["messages"])) // 4}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        for block in body.get("system") or []:
            if "cache_control" in block:
                read = block["text"] in self.cached
                key = "cache_read_input_tokens" if read else "cache_creation_input_tokens"
                usage[key] += len(block["text"]) // 4
                self.cached.add(block["text"])
        return usage

    def _message(self, name: str, step: Say, usage: dict[str, int]) -> dict[str, Any]:
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": name,
            "content": [{"type": "text", "text": step.text}],
            "stop_reason": "max_tokens" if step.cut else "end_turn",
            "stop_sequence": None,
            "usage": usage | {"output_tokens": len(step.text) // 4},
        }

    def _stream(self, name: str, step: Step, usage: dict[str, int]) -> Iterator[bytes]:
        assert isinstance(step, Say | Cut | Stall)
        start = self._message(name, Say(""), usage) | {"content": [], "stop_reason": None}
        start["usage"]["output_tokens"] = 1  # as the API sends it: a placeholder
        yield sse({"type": "message_start", "message": start}, "message_start")
        block = {"type": "content_block_start", "index": 0}
        yield sse(block | {"content_block": {"type": "text", "text": ""}}, "content_block_start")
        yield sse({"type": "ping"}, "ping")
        for piece in self.model.pieces(step):
            delta = {"type": "content_block_delta", "index": 0}
            delta["delta"] = {"type": "text_delta", "text": piece}
            yield sse(delta, "content_block_delta")
        yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        stop = "max_tokens" if isinstance(step, Say) and step.cut else "end_turn"
        delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
        yield sse(delta | {"usage": {"output_tokens": len(step.text) // 4}}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")


def _usage(text: str) -> dict[str, int]:
    return {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": len(text) // 4, "total_tokens": 0}


def _json(status: int, value: object, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status, headers=_JSON | (headers or {}), content=json.dumps(value).encode()
    )


_JSON = {"content-type": "application/json"}
_SSE = {"content-type": "text/event-stream"}

FAKES: dict[str, Any] = {
    "openai": OpenAIFake,
    "azure": AzureFake,
    "anthropic": AnthropicFake,
    "copilot": CopilotFake,
}
