"""What every API adapter shares: the request as we mean it (:class:`Conversation`), the
answer as we keep it (:class:`Answer`), the state of a stream being read, and the small readers
of the wire (server-sent events, JSON bodies, ``Retry-After``)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from codingagent.protocol.reasoning import leading_closing
from codingagent.session.seams import SourceError

CUT = "length"  # the finish reason of an answer stopped by the output limit, in every API


class ChatError(SourceError):
    """A failure the user must fix (or wait out); the message says what to do."""


class WindowTooSmall(ChatError):
    """Even the smallest form of the prompt does not fit the model's window: nothing was sent.
    A problem to fix before the run can go on (exit code 1, docs/admission.md)."""

    fix_first = True


class ContextOverflow(ChatError):
    """The server refused the request as longer than its window (llama-server's
    ``exceed_context_size_error``, vLLM's "maximum context length", OpenAI's
    ``context_length_exceeded``): ``prompt_tokens`` and ``window`` as it counted them, where
    it said."""

    def __init__(self, message: str, prompt_tokens: int | None, window: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.window = window


class Transient(Exception):
    """A failure worth another request: ``wait`` seconds asked for by the server, if any."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


@dataclass(frozen=True)
class Conversation:
    """One request as we mean it, whatever the API: the system text (the PROTOCOL, the same in
    every request of a session, so a provider's prompt cache can hold it) and the user and
    assistant messages after it, oldest first."""

    system: str
    messages: list[dict[str, str]]
    # The window the request needs, its reply's reserve included: a server that sizes its
    # window per request (Ollama's num_ctx) is asked for it. None: the server's own.
    context: int | None = None

    def chat(self) -> list[dict[str, str]]:
        """Its messages as a chat API takes them: the system text first, as a message."""
        return [{"role": "system", "content": self.system}, *self.messages]


@dataclass(frozen=True)
class Usage:
    """Tokens as the provider counted them (None where it does not say)."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cache_read: int | None = None  # input tokens served from the provider's prompt cache
    cache_written: int | None = None  # input tokens the provider put into its cache


@dataclass(frozen=True)
class Answer:
    """The model's answer and what it cost."""

    text: str
    model: str  # as the server named it
    usage: Usage
    seconds: float
    finish_reason: str | None  # "stop", CUT ("length") when the output limit stopped it, ...
    thinking: str = ""  # the reasoning the API returned apart (reasoning_content, thinking)

    @property
    def cut(self) -> bool:
        return self.finish_reason == CUT


@dataclass
class Streamed:
    """What a stream has brought so far; an adapter's event reader fills it in."""

    model: str
    parts: list[str] = field(default_factory=list)
    usage: dict[str, int | None] = field(default_factory=dict)  # Usage's fields
    finish_reason: str | None = None
    ended: bool = False  # the API's end-of-stream event came
    thoughts: list[str] = field(default_factory=list)  # reasoning sent apart from the text
    _looked: int = field(default=0, init=False, repr=False)  # parts looked at for its end
    _ended: bool = field(default=False, init=False, repr=False)  # the text's thinking ended

    def answer(self, started: float) -> Answer:
        return Answer(
            "".join(self.parts),
            self.model,
            Usage(**self.usage),
            time.monotonic() - started,
            self.finish_reason,
            "".join(self.thoughts),
        )

    @property
    def thinking(self) -> bool:
        """Whether the model is thinking still: reasoning came and no text yet, or the text so
        far opens with thinking in a model's dress that has not ended (``<think>``,
        ``[THINK]``, harmony's analysis, ...: :mod:`codingagent.protocol.reasoning`). Only the
        parts new since the last look are searched (with a few before: a marker split)."""
        if self.thoughts and not self.parts:
            return True
        closing = leading_closing("".join(self.parts[:64]).lstrip()[:40])
        if closing is None or self._ended:
            return False
        recent = "".join(self.parts[max(0, self._looked - 8) :])
        self._looked = len(self.parts)
        self._ended = closing.lower() in recent.lower()
        return not self._ended

    @property
    def characters(self) -> int:
        return sum(map(len, self.parts)) + sum(map(len, self.thoughts))


def events(lines: Iterator[str]) -> Iterator[str]:
    """The data of each server-sent event (multi-line data joined; ``event:`` names and
    comments skipped: every API we speak repeats the event's type inside its data)."""
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


def json_object(text: str, url: str, shape: str) -> dict[str, Any]:
    """``text`` as a JSON object, or a ChatError saying the server speaks something else."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ChatError(
            f"{url} sent something that is not {shape} JSON: {text[:120]!r}; "
            f"is base_url an {shape} API?"
        )
    return value


def json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def error_message(body: Any) -> str:
    """The message in an error body: ``{"error": {"message": ...}}`` (OpenAI, Azure, Anthropic
    inside ``{"type": "error", ...}``) and variants."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:300]
        return str(error)[:300]
    return " ".join(str(body).split())[:300] or "(no message)"


_OVERFLOW = re.compile(
    r"exceed_context_size|exceeds the available context|context length|context window|"
    r"context_length_exceeded|maximum context|too many tokens|prompt is too long",
    re.IGNORECASE,
)
_LLAMA_NUMBERS = re.compile(r"\((\d+) tokens\) exceeds the available context size \((\d+)")
_MAX_LENGTH = re.compile(r"maximum context length is (\d+)")
_REQUESTED = re.compile(r"(?:you requested|resulted in) (\d+) tokens")


def overflow(body: Any) -> tuple[int | None, int | None] | None:
    """Whether an error body says the request is over the window: (the prompt's tokens, the
    window) as far as it tells them; None when it says something else. llama-server sends
    ``type: exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``."""
    error = body.get("error", body) if isinstance(body, dict) else body
    text = json.dumps(error) if isinstance(error, dict) else str(error)
    if not _OVERFLOW.search(text):
        return None
    if isinstance(error, dict) and isinstance(error.get("n_ctx"), int):
        prompt = error.get("n_prompt_tokens")
        return (prompt if isinstance(prompt, int) else None), error["n_ctx"]
    if found := _LLAMA_NUMBERS.search(text):
        return int(found.group(1)), int(found.group(2))
    window = _MAX_LENGTH.search(text)
    asked = _REQUESTED.search(text)
    return (
        int(asked.group(1)) if asked else None,
        int(window.group(1)) if window else None,
    )


def retry_after(response: httpx.Response) -> float | None:
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


def reason(error: BaseException) -> str:
    return str(error) or type(error).__name__
