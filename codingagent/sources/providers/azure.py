"""Azure OpenAI: the chat-completions wire format at Azure's own addresses, with the key in an
``api-key`` header.

Two paths, as the profile chooses: with ``deployment`` set, the classic
``{base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}``
(base_url is the resource, ``https://NAME.openai.azure.com``); without it, the newer v1 API,
``{base_url}/chat/completions`` with base_url ``https://NAME.openai.azure.com/openai/v1`` and
the deployment's name as ``model``."""

from __future__ import annotations

from typing import ClassVar

import httpx

from codingagent.sources.providers.openai import OpenAIAdapter

API_VERSION = "2024-10-21"  # the latest generally available version, when the profile names none


class AzureAdapter(OpenAIAdapter):
    api: ClassVar[str] = "azure"

    def post_url(self) -> str:
        deployment = self.profile.deployment
        if deployment is None:
            return f"{self.url}/chat/completions"
        version = self.profile.api_version or API_VERSION
        return f"{self.url}/openai/deployments/{deployment}/chat/completions?api-version={version}"

    def headers(self, http: httpx.Client) -> dict[str, str]:
        return {"api-key": self.key} if self.key else {}

    def models_url(self) -> str | None:
        # The classic path lists models, not deployments: nothing to check a deployment against.
        return None if self.profile.deployment else f"{self.url}/models"

    def unknown_model(self, status: int, message: str) -> bool:
        return self.profile.deployment is None and super().unknown_model(status, message)

    def not_found(self) -> str:
        deployment = self.profile.deployment
        if deployment is None:
            return (
                f"{self.post_url()} does not exist (HTTP 404): for the v1 API base_url ends in "
                "/openai/v1; or set deployment (and api_version) for the deployment path"
            )
        return (
            f"{self.url} has no deployment {deployment!r} (HTTP 404): check deployment in the "
            "profile against the resource's Deployments page, and base_url (the resource's "
            "endpoint, https://NAME.openai.azure.com)"
        )
