"""GitHub Copilot's chat API: chat completions at ``https://api.githubcopilot.com``, with a
short-lived chat token got from the stored sign-in (:mod:`.signin`) and got again when it
expires or the API refuses it."""

from __future__ import annotations

import time
from typing import ClassVar

import httpx

from codingagent import __version__
from codingagent.settings import ModelProfile
from codingagent.sources.providers import signin
from codingagent.sources.providers.openai import OpenAIAdapter
from codingagent.sources.providers.wire import ChatError

EARLY_S = 60.0  # a chat token this close to its expiry is replaced before use


class CopilotAdapter(OpenAIAdapter):
    api: ClassVar[str] = "copilot"

    def __init__(self, profile: ModelProfile) -> None:
        super().__init__(profile.model_copy(update={"api_key_env": None}))
        sign_in = signin.stored()
        if sign_in is None:
            raise ChatError(
                "Not signed in to GitHub Copilot: run codingagent login copilot "
                f"({signin.SUBSCRIPTION})"
            )
        self._sign_in = sign_in
        self._expires = 0.0

    def headers(self, http: httpx.Client) -> dict[str, str]:
        if self.key is None or time.time() > self._expires - EARLY_S:
            self.refresh(http)
        return {
            "Authorization": f"Bearer {self.key}",
            "Copilot-Integration-Id": "vscode-chat",
            "Editor-Version": f"codingagent/{__version__}",
        }

    def refresh(self, http: httpx.Client) -> bool:
        self.key, self._expires = signin.chat_token(http, self._sign_in)
        return True

    def key_hint(self) -> str:
        return f"run codingagent login copilot again ({signin.SUBSCRIPTION})"

    def redact(self, text: str) -> str:
        return super().redact(text).replace(self._sign_in.oauth_token, "***")
