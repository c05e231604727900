"""What every API adapter shares: the request as we mean it (:class:`Conversation`), the
answer as we keep it (:class:`Answer`), the state of a stream being read, and the small readers
of the wire (server-sent events, JSON bodies, ``Retry-After``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from codingagent.session.seams import SourceError

CUT = "length"  # the finish reason of an answer stopped by the output limit, in every API


class ChatError(SourceError):
    """A failure the user must fix (or wait out); the message says what to do."""


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

    def answer(self, started: float) -> Answer:
        return Answer(
            "".join(self.parts),
            self.model,
            Usage(**self.usage),
            time.monotonic() - started,
            self.finish_reason,
        )

    @property
    def characters(self) -> int:
        return sum(map(len, self.parts))


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
