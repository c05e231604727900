"""Model endpoints, one adapter per API (docs/models.md): ``openai`` (chat completions: OpenAI,
Ollama, llama.cpp, vLLM, SGLang, Z.AI, OpenRouter, ...), ``anthropic`` (the Messages API),
``azure`` (Azure OpenAI), ``copilot`` (GitHub Copilot, signed in by device flow) and
``ollama`` (Ollama's native chat API: also chosen by itself when an ``openai`` profile's
server turns out to be Ollama, see :mod:`.windows`).

:mod:`.wire` holds what they share, :mod:`.base` the seam an adapter fills in, :mod:`.client`
the one client that drives any of them. Imports the base, ``session.seams`` (for
``SourceError``) and ``httpx``; nothing above ``sources/``."""

from __future__ import annotations

from codingagent.settings import ModelProfile
from codingagent.sources.providers.anthropic import AnthropicAdapter
from codingagent.sources.providers.azure import AzureAdapter
from codingagent.sources.providers.base import Adapter
from codingagent.sources.providers.copilot import CopilotAdapter
from codingagent.sources.providers.ollama import OllamaAdapter
from codingagent.sources.providers.openai import OpenAIAdapter

ADAPTERS: dict[str, type[Adapter]] = {
    adapter.api: adapter
    for adapter in (OpenAIAdapter, AnthropicAdapter, AzureAdapter, CopilotAdapter, OllamaAdapter)
}


def adapter_for(profile: ModelProfile) -> Adapter:
    """The adapter of the API ``profile`` names (its key taken from the environment)."""
    return ADAPTERS[profile.api](profile)
