"""Each model's window: how many tokens a request and its reply may take (docs/models.md,
"Context windows"), and where that number came from.

The profile's ``context_tokens`` wins. Otherwise the server is asked, once a run, in the
terms it documents:

* **Ollama**, recognized by ``GET /api/version`` at the server's root: the model's trained
  length (``model_info["<arch>.context_length"]`` of ``POST /api/show``), else a ``num_ctx``
  in its parameters; ``GET /api/ps`` says what a loaded model holds now. Ollama's own
  default window is small (4,096 tokens on most machines), so requests go to its native chat
  API with ``options.num_ctx`` set (:mod:`.ollama`), and the window is the trained length.
* **llama-server**: ``GET /props`` gives ``default_generation_settings.n_ctx`` (a slot's
  window; ``n_ctx`` in older versions); ``POST /tokenize`` counts tokens exactly.
* **LM Studio**: ``GET /api/v0/models`` gives ``loaded_context_length`` (the model as it is
  loaded) and ``max_context_length``.
* **vLLM and SGLang**: ``max_model_len`` of the model in ``GET {base_url}/models``;
  **OpenRouter**: ``context_length`` there.
* otherwise a documented default by provider (:data:`DEFAULTS`).

Probes that fail (a 404, no server, not JSON) only mean "not this kind of server".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from codingagent.settings import ModelProfile

UNKNOWN_WINDOW = 128_000  # an OpenAI-compatible server that says nothing of its window
OLLAMA_DEFAULT = 4096  # Ollama's window when nothing sets one (machines under 24 GiB VRAM)
DEFAULTS = {  # by host, for servers that do not list a window (docs/models.md)
    "api.openai.com": 128_000,
    "api.anthropic.com": 200_000,
    "generativelanguage.googleapis.com": 1_000_000,
    "api.z.ai": 128_000,
    "api.githubcopilot.com": 64_000,
    "openai.azure.com": 128_000,
}
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Window:
    """A model's window, where the number came from, and how the user raises it."""

    tokens: int
    source: str  # "the profile's context_tokens", "llama-server /props n_ctx", ...
    server: str  # "ollama", "llama-server", "lm-studio", "vllm", "openrouter", or "other"
    fix: str  # how to give the model a larger window, in that server's terms; {n}: tokens
    trained: int | None = None  # Ollama: the model's trained length (num_ctx's ceiling)
    tokenize_url: str | None = None  # llama-server: where tokens are counted exactly
    loaded: int | None = None  # Ollama: the window the loaded model holds now (/api/ps)


def server_root(base_url: str) -> str:
    """The server's root: ``base_url`` without a trailing ``/v1`` (``http://host:11434``)."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def discover(
    http: httpx.Client, profile: ModelProfile, headers: Mapping[str, str] | None = None
) -> Window:
    """The window of ``profile``'s model (see the module doc)."""
    headers = dict(headers or {})
    root = server_root(profile.base_url)
    host = httpx.URL(profile.base_url).host
    known = next((tokens for name, tokens in DEFAULTS.items() if host.endswith(name)), None)
    found: Window | None = None
    if profile.api in ("openai", "ollama") and known is None:
        for probe in (_ollama, _llama_server, _listed, _lm_studio):
            found = probe(http, profile, root, headers)
            if found is not None:
                break
    if found is None:
        tokens = known or UNKNOWN_WINDOW
        found = Window(tokens, f"the default for {host}" if known else "the default", "other", "")
    if profile.context_tokens is not None:
        return Window(
            profile.context_tokens,
            "the profile's context_tokens",
            found.server,
            found.fix,
            found.trained,
            found.tokenize_url,
            found.loaded,
        )
    return found


def fix_line(window: Window, profile: ModelProfile, needed: int) -> str:
    """How to give the model a window of ``needed`` tokens, in its server's terms, and the
    profile's context_tokens (for a server whose window we could not read)."""
    size = 1024
    while size < needed:
        size *= 2
    where = f"[models.{profile.name}]" if profile.name else "the model's profile"
    own = f"set context_tokens in {where} if the server's window is larger than {window.tokens}"
    if not window.fix:
        return f"use a model with a larger window, or {own}"
    return f"{window.fix.format(n=size)}; or {own}"


def _get(http: httpx.Client, url: str, headers: dict[str, str]) -> Any:
    try:
        response = http.get(url, headers=headers, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    return _json(response)


def _post(http: httpx.Client, url: str, body: object, headers: dict[str, str]) -> Any:
    try:
        response = http.post(url, json=body, headers=headers, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    return _json(response)


def _json(response: httpx.Response) -> Any:
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _ollama(
    http: httpx.Client, profile: ModelProfile, root: str, headers: dict[str, str]
) -> Window | None:
    version = _get(http, f"{root}/api/version", headers)
    if not isinstance(version, dict) or "version" not in version:
        return None
    shown = _post(http, f"{root}/api/show", {"model": profile.model}, headers)
    trained = parameter = None
    if isinstance(shown, dict):
        info = shown.get("model_info") or {}
        if isinstance(info, dict):
            trained = next(
                (_number(v) for k, v in info.items() if k.endswith(".context_length")), None
            )
        parameters = shown.get("parameters")
        if isinstance(parameters, str) and (m := re.search(r"^num_ctx\s+(\d+)", parameters, re.M)):
            parameter = int(m.group(1))
    loaded = None
    running = _get(http, f"{root}/api/ps", headers)
    if isinstance(running, dict):
        for entry in running.get("models") or []:
            if isinstance(entry, dict) and profile.model in (entry.get("name"), entry.get("model")):
                loaded = _number(entry.get("context_length"))
    fix = "use a model trained for a longer context (Ollama is given num_ctx up to it)"
    if trained is not None:
        source = "Ollama /api/show: the model's trained length (context_length)"
        return Window(trained, source, "ollama", fix, trained, None, loaded)
    if parameter is not None:
        source = "Ollama /api/show: num_ctx in the model's parameters"
        return Window(parameter, source, "ollama", fix, parameter, None, loaded)
    fix = "start Ollama with OLLAMA_CONTEXT_LENGTH={n} (or set num_ctx in a Modelfile)"
    return Window(OLLAMA_DEFAULT, "Ollama's default", "ollama", fix, None, None, loaded)


def _llama_server(
    http: httpx.Client, profile: ModelProfile, root: str, headers: dict[str, str]
) -> Window | None:
    props = _get(http, f"{root}/props", headers)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    tokens = _number(settings.get("n_ctx")) if isinstance(settings, dict) else None
    tokens = tokens or _number(props.get("n_ctx"))
    if tokens is None:
        return None
    fix = "restart llama-server with a larger context: -c {n} (or more)"
    source = "llama-server /props (n_ctx)"
    return Window(tokens, source, "llama-server", fix, None, f"{root}/tokenize")


def _listed(
    http: httpx.Client, profile: ModelProfile, root: str, headers: dict[str, str]
) -> Window | None:
    entry = _model_entry(_get(http, f"{profile.base_url.rstrip('/')}/models", headers), profile)
    if tokens := _number(entry.get("max_model_len")):
        fix = "restart the server with --max-model-len {n} (vLLM) or --context-length {n}"
        return Window(tokens, "the server's model list (max_model_len)", "vllm", fix)
    if tokens := _number(entry.get("context_length")):
        fix = "choose a model with a longer context_length"
        return Window(tokens, "the model list (context_length)", "openrouter", fix)
    return None


def _lm_studio(
    http: httpx.Client, profile: ModelProfile, root: str, headers: dict[str, str]
) -> Window | None:
    entry = _model_entry(_get(http, f"{root}/api/v0/models", headers), profile)
    fix = "load the model in LM Studio with a context length of {n} or more"
    if tokens := _number(entry.get("loaded_context_length")):
        return Window(tokens, "LM Studio: the loaded context length", "lm-studio", fix)
    if tokens := _number(entry.get("max_context_length")):
        return Window(tokens, "LM Studio: the model's maximum context", "lm-studio", fix)
    return None


def _model_entry(listing: Any, profile: ModelProfile) -> dict[str, Any]:
    """The entry of ``profile``'s model in a server's model list (``{"data": [...]}``), or
    an empty one."""
    data = listing.get("data") if isinstance(listing, dict) else None
    for entry in data or []:
        if isinstance(entry, dict) and entry.get("id") == profile.model:
            return entry
    return {}
