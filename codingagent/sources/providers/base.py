"""The seam every API adapter fills in: :class:`Adapter`, a :class:`typing.Protocol` like every
seam (docs/architecture.md, "Seams"). An adapter knows one API's request shape, its auth
headers, how its answers, streams, usage, finish reasons and error bodies read; the methods
with a body here are what most APIs share, and an adapter extends :class:`Adapter` to take
them. :class:`codingagent.sources.providers.client.ChatClient` does the rest (retries,
timeouts, progress, the errors the user must fix) the same way for all. Adapters are registered
by the API's name in the package's entry points (group ``codingagent.providers``), as sandbox
backends are; docs/models.md, "Adding a provider", says what a new adapter must pass."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Protocol

import httpx

from codingagent.settings import ModelProfile
from codingagent.sources.providers.wire import Answer, ChatError, Conversation, Streamed


class Adapter(Protocol):
    """One API. An adapter sets ``api`` and ``shape``, says what has no body here, and
    overrides what its API does differently."""

    api: ClassVar[str]  # its name in the registry, and the profile's ``api`` value
    shape: ClassVar[str]  # "OpenAI chat-completions": what a wrong server is told it is not
    stream_type: ClassVar[str] = "text/event-stream"  # or newline-delimited JSON (Ollama)
    profile: ModelProfile
    url: str
    key: str | None

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.url = profile.base_url.rstrip("/")
        self.key = take_key(profile.api_key_env)

    def switched(self, other: type[Adapter], url: str) -> Adapter:
        """This adapter's profile and key, spoken in ``other``'s API at ``url`` (a profile
        whose server turns out to be Ollama: :mod:`.ollama`). The key is not taken again."""
        adapter = other.__new__(other)
        adapter.profile, adapter.url, adapter.key = self.profile, url.rstrip("/"), self.key
        return adapter

    def post_url(self) -> str:
        """Where a request is posted."""
        raise NotImplementedError  # each model API's adapter says it

    def headers(self, http: httpx.Client) -> dict[str, str]:
        """The headers of a request: the key goes here and nowhere else (here, as a bearer
        token: OpenAI's way, and Ollama's)."""
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def body(self, conversation: Conversation, stream: bool) -> dict[str, Any]:
        """The request's JSON body."""
        raise NotImplementedError  # each model API's adapter says it

    def read_answer(self, body: dict[str, Any], started: float) -> Answer:
        """A whole (not streamed) answer."""
        raise NotImplementedError  # each model API's adapter says it

    def read_event(self, data: str, into: Streamed) -> None:
        """One server-sent event's data, added to ``into`` (``into.ended`` at the API's end
        event). An error event raises :class:`~codingagent.sources.providers.wire.Transient`."""
        raise NotImplementedError  # each model API's adapter says it

    def models_url(self) -> str | None:
        """Where the API lists its models (None: it lists none we can check against)."""
        return f"{self.url}/models"

    def model_ids(self, body: Any) -> list[str]:
        data = body.get("data") if isinstance(body, dict) else None
        return sorted(str(m.get("id")) for m in data or [] if isinstance(m, dict))

    def unknown_model(self, status: int, message: str) -> bool:
        """Whether an error answer says the model does not exist (wordings differ)."""
        if status not in (400, 404):
            return False
        lower = message.lower()
        unknown = ("not found", "not exist", "unknown", "invalid model", "no such", "not avail")
        return "model" in lower and any(word in lower for word in unknown)

    def not_found(self) -> str:
        """What a plain HTTP 404 most likely means."""
        return (
            f"{self.post_url()} does not exist (HTTP 404): is base_url the API's root? It "
            "usually ends in /v1"
        )

    def key_hint(self) -> str:
        variable = self.profile.api_key_env
        if variable:
            return f"check the key in ${variable}"
        return "set api_key_env in the model's profile to the variable that holds the key"

    def refresh(self, http: httpx.Client) -> bool:
        """After a refused key: get a fresh credential and say whether to try again."""
        return False

    def redact(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text


def take_key(variable: str | None) -> str | None:
    """The API key from ``variable``, removed from this process's environment, so no
    RUN_COMMAND (nor anything else the agent starts) inherits it, whatever its name."""
    if variable is None:
        return None
    key = os.environ.pop(variable, None)
    if not key:
        raise ChatError(f"The API key variable ${variable} is not set; export it with the key")
    return key
