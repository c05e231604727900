"""An OpenAI-compatible chat-completions client: one request, one answer, on ``httpx``.

Ollama, llama.cpp's server, LM Studio, vLLM, OpenAI, OpenRouter and the OpenAI-compatible
endpoints of Anthropic and Gemini all speak ``POST {base_url}/chat/completions``. This module
sends the messages, streams the answer (server-sent events: ``data: {json}`` lines, then
``data: [DONE]``) and reports progress, so the console can show tokens and seconds as they come.

What goes wrong is sorted in two:

* passing trouble is retried with backoff, honouring ``Retry-After``: HTTP 429, 5xx, a
  connection dropped before the answer was complete (a cut stream is never used in part);
* everything the user must fix raises :class:`ChatError` with one line that says what to do:
  the key refused (which variable holds it), an unknown model (the models the server offers),
  no server at the URL, a timeout, an answer that is not chat-completions JSON.

Why ``httpx`` and not the ``openai`` package: the wire format is four JSON fields and an SSE
loop, while the failures must be told apart exactly (``Retry-After``, a cut stream, which
variable holds the key); the ``openai`` package hides its own retries and would bring a large
dependency tree for one endpoint. ``httpx`` is small, typed, and has timeouts and streaming.

The key is read from the environment variable the profile names, once, and removed from this
process's environment, so no RUN_COMMAND (nor anything else the agent starts) inherits it. It
only ever goes into the ``Authorization`` header, and is blanked out of any server message.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from codingagent.session.seams import SourceError
from codingagent.settings import ModelProfile

ATTEMPTS = 3  # requests per answer: the first and two retries
BACKOFF_S = 1.0  # the first wait before a retry without Retry-After; doubles each time
MAX_WAIT_S = 60.0  # the longest wait honoured from Retry-After
_RETRIED = {429, 500, 502, 503, 504, 529}  # 529: overloaded (Anthropic)


class ChatError(SourceError):
    """A failure the user must fix (or wait out); the message says what to do."""


class _Transient(Exception):
    """A failure worth another request: ``wait`` seconds asked for by the server, if any."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


@dataclass(frozen=True)
class Answer:
    """The model's answer and what it cost."""

    text: str
    model: str  # as the server named it
    tokens_in: int | None  # None when the server does not say
    tokens_out: int | None
    seconds: float
    finish_reason: str | None


Progress = Callable[[str | None], None]  # a live line's text; None clears it
Note = Callable[[str], None]  # a line worth keeping on the console


class ChatClient:
    """Chat completions from one endpoint. Use it as a context manager (it holds the
    connection pool); :meth:`complete` returns the answer, or None once ``stop`` is set."""

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.url = profile.base_url.rstrip("/")
        self._key = _take_key(profile.api_key_env)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(profile.timeout, connect=min(profile.timeout, 10.0)),
        )

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.close()

    def complete(
        self,
        messages: list[dict[str, str]],
        stop: threading.Event,
        progress: Progress,
        note: Note,
    ) -> Answer | None:
        """The answer to ``messages``; transient failures are retried (``note`` says so)."""
        attempt = 1
        while True:
            try:
                return self._request(messages, stop, progress)
            except _Transient as e:
                problem = e
            finally:
                progress(None)
            said = self._redact(str(problem))
            if attempt == ATTEMPTS:
                raise ChatError(
                    f"{said}; gave up after {ATTEMPTS} attempts. The session is intact: "
                    "resume it when the server is back"
                )
            wait = BACKOFF_S * 2 ** (attempt - 1) if problem.wait is None else problem.wait
            wait = min(wait, MAX_WAIT_S)
            note(f"{said}; retrying in {wait:.1f} s")
            if stop.wait(wait):
                return None
            attempt += 1

    # --- one request -------------------------------------------------------------------------

    def _request(
        self, messages: list[dict[str, str]], stop: threading.Event, progress: Progress
    ) -> Answer | None:
        profile = self.profile
        body: dict[str, Any] = {"model": profile.model, "messages": messages}
        if profile.max_tokens is not None:
            body["max_tokens"] = profile.max_tokens
        if profile.temperature is not None:
            body["temperature"] = profile.temperature
        if profile.stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        started = time.monotonic()
        progress(f"Waiting for {profile.model} at {self.url}")
        try:
            with self._http.stream("POST", f"{self.url}/chat/completions", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    self._fail(response)
                streamed = response.headers.get("content-type", "").startswith("text/event-stream")
                if not streamed:  # asked not to stream, or the server would not
                    response.read()
                    return _answer(_json(response.text, self.url), started)
                return self._read_stream(response, started, stop, progress)
        except httpx.ConnectError as e:
            raise ChatError(
                f"Cannot connect to {self.url} ({_reason(e)}): is the server running, "
                "and is base_url right?"
            ) from None
        except httpx.TimeoutException:
            raise ChatError(
                f"{profile.model} at {self.url} did not answer within {profile.timeout:g} s; "
                "raise timeout in its [models.NAME] profile"
            ) from None
        except (httpx.RemoteProtocolError, httpx.NetworkError) as e:
            raise _Transient(f"The connection to {self.url} dropped ({_reason(e)})") from None
        except httpx.HTTPError as e:  # a URL httpx cannot use, a proxy refusing, ...
            raise ChatError(f"The request to {self.url} failed: {_reason(e)}") from None

    def _read_stream(
        self, response: httpx.Response, started: float, stop: threading.Event, progress: Progress
    ) -> Answer | None:
        parts: list[str] = []
        chunks = 0
        usage: dict[str, Any] = {}
        model = self.profile.model
        finish: str | None = None
        for event in _events(response.iter_lines()):
            if event == "[DONE]":
                return Answer(
                    "".join(parts),
                    model,
                    usage.get("prompt_tokens"),
                    usage.get("completion_tokens"),
                    time.monotonic() - started,
                    finish,
                )
            chunk = _json(event, self.url)
            if "error" in chunk:
                raise _Transient(f"{self.url} sent an error mid-answer: {_message(chunk)}")
            model = chunk.get("model") or model
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    parts.append(text)
                    chunks += 1
                finish = choice.get("finish_reason") or finish
            if stop.is_set():
                return None
            progress(f"{model}: {chunks:,} tokens received, {time.monotonic() - started:.1f} s")
        raise _Transient(f"The answer from {self.url} was cut off (no [DONE] at the end)")

    def _fail(self, response: httpx.Response) -> None:
        """Raise what a non-200 answer means."""
        status = response.status_code
        said = self._redact(_message(_json_or_text(response.text)))
        if status in _RETRIED:
            raise _Transient(f"{self.url} answered HTTP {status}: {said}", _retry_after(response))
        if status in (401, 403):
            variable = self.profile.api_key_env
            where = (
                f"check the key in ${variable}"
                if variable
                else "set api_key_env in the model's profile to the variable that holds the key"
            )
            raise ChatError(f"{self.url} refused the API key (HTTP {status}): {where}")
        if status in (400, 404) and _names_unknown_model(said):
            raise ChatError(
                f"{self.url} does not offer the model {self.profile.model!r}: {said}. "
                f"It offers: {self._offered()}"
            )
        if status == 404:
            raise ChatError(
                f"{self.url}/chat/completions does not exist (HTTP 404): is base_url the API's "
                "root? It usually ends in /v1"
            )
        raise ChatError(f"{self.url} answered HTTP {status}: {said}")

    def _offered(self) -> str:
        """The model ids the server offers (``GET /models``), for the unknown-model error."""
        try:
            response = self._http.get(f"{self.url}/models")
            response.raise_for_status()
            ids = sorted(str(m.get("id")) for m in response.json().get("data", []))
            return ", ".join(ids) or "no models"
        except (httpx.HTTPError, ValueError, AttributeError) as e:
            return f"(its model list could not be read: {_reason(e)})"

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


def _take_key(variable: str | None) -> str | None:
    """The API key from ``variable``, removed from the environment (see the module doc)."""
    if variable is None:
        return None
    key = os.environ.pop(variable, None)
    if not key:
        raise ChatError(f"The API key variable ${variable} is not set; export it with the key")
    return key


def _events(lines: Iterator[str]) -> Iterator[str]:
    """The data of each server-sent event (multi-line data joined; comments skipped)."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


def _answer(body: dict[str, Any], started: float) -> Answer:
    """A plain (not streamed) chat-completions answer."""
    try:
        choice = body["choices"][0]
        text = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise ChatError(
            f"The answer has no choices[0].message.content: {str(body)[:200]}"
        ) from None
    usage = body.get("usage") or {}
    return Answer(
        text,
        str(body.get("model") or ""),
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        time.monotonic() - started,
        choice.get("finish_reason"),
    )


def _json(text: str, url: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ChatError(
            f"{url} sent something that is not chat-completions JSON: {text[:120]!r}; "
            "is base_url an OpenAI-compatible API?"
        )
    return value


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _message(body: Any) -> str:
    """The error message in an error body (``{"error": {"message": ...}}`` and variants)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:300]
        return str(error)[:300]
    return " ".join(str(body).split())[:300] or "(no message)"


def _names_unknown_model(message: str) -> bool:
    """Whether a 400/404 error message says the model does not exist (wordings differ)."""
    lower = message.lower()
    unknown = ("not found", "not exist", "unknown", "invalid model", "no such", "not available")
    return "model" in lower and any(word in lower for word in unknown)


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asks to wait: ``Retry-After`` as seconds or as an HTTP date."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__
