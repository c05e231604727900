"""Model endpoints, one adapter per API (docs/models.md): ``openai`` (chat completions: OpenAI,
Ollama, llama.cpp, vLLM, SGLang, Z.AI, OpenRouter, ...), ``anthropic`` (the Messages API),
``azure`` (Azure OpenAI), ``copilot`` (GitHub Copilot, signed in by device flow) and
``ollama`` (Ollama's native chat API: also chosen by itself when an ``openai`` profile's
server turns out to be Ollama, see :mod:`.windows`).

:mod:`.wire` holds what they share, :mod:`.base` the seam an adapter fills in (registered by
its API's name in the entry points, :func:`adapters`), :mod:`.client` the one client that
drives any of them. Imports the base, ``session.seams`` (for
``SourceError``) and ``httpx``; nothing above ``sources/``."""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

from codingagent.settings import PROVIDERS, ModelProfile
from codingagent.sources.providers.base import Adapter


@functools.cache
def adapters() -> dict[str, type[Adapter]]:
    """The registry: each adapter registered in the package's entry points (group
    ``codingagent.providers`` in pyproject.toml), by the name a profile's ``api`` gives. Read
    once a process: the installed packages' entry points are read from disk."""
    return {entry.name: entry.load() for entry in entry_points(group=PROVIDERS)}


def adapter_for(profile: ModelProfile) -> Adapter:
    """The adapter of the API ``profile`` names (its key taken from the environment)."""
    return adapters()[profile.api](profile)
