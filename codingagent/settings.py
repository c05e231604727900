"""Settings: the user's own file (``~/.config/codingagent/config.toml``), then
``codingagent.toml`` (or ``[tool.codingagent]`` in ``pyproject.toml``) in the root, then
``CODINGAGENT_*`` environment variables, then command-line flags; later sources win.

One pydantic model validates all of them, so a typo or a bad value is one clear message that
names where it came from, never a traceback; ``Settings.origins`` says where each value came
from.

**No reply changes how later replies are treated.** A settings file inside a workspace can be
written by the LLM (a RUN_COMMAND appending ``[tool.codingagent] sandbox = "none"`` to
``pyproject.toml`` when the run folder is the workspace). Such a file may tighten anything but
loosen nothing: a value that would weaken the sandbox, the approval mode, masking or a limit
(see :data:`LOOSER`) is ignored, and ``Settings.ignored`` names the file and key for the
console. The user's own file, the environment and flags are the user's and always count; so
does a workspace file when the user passes ``--trust-settings`` (after reading it).
"""

from __future__ import annotations

import functools
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

ENV_PREFIX = "CODINGAGENT_"
SETTINGS_FILE = "codingagent.toml"


SANDBOXES = "codingagent.sandboxes"  # the entry-point group of the sandbox backends
PROVIDERS = "codingagent.providers"  # the entry-point group of the model APIs' adapters


@functools.cache
def sandbox_modes() -> tuple[str, ...]:
    """The values of the ``sandbox`` setting: ``auto`` and the name of each sandbox backend
    registered in the package's entry points (the registry: docs/security.md, 'Adding a
    sandbox backend'), read from the package metadata without importing a backend."""
    return ("auto", *sorted({entry.name for entry in entry_points(group=SANDBOXES)}))


@functools.cache
def provider_apis() -> tuple[str, ...]:
    """The values of a model profile's ``api``: the name of each adapter registered in the
    package's entry points (docs/models.md, 'Adding a provider'), read without importing one."""
    return tuple(sorted({entry.name for entry in entry_points(group=PROVIDERS)}))


def _one_of(field: str, value: str, known: tuple[str, ...]) -> str:
    """``value`` when it is one of ``known``, else the error pydantic gives a Literal; none
    known: the package's entry points were not installed."""
    if not known:
        reinstall = "reinstall codingagent (pip install -e .): its entry points are missing"
        raise PydanticCustomError(field, f"no {field} is registered; {reinstall}")
    if value not in known:
        *first, last = (repr(each) for each in known)
        raise PydanticCustomError(field, f"Input should be {', '.join(first)} or {last}")
    return value


class SettingsError(Exception):
    """Settings the user must fix; the message says which and where."""


KEY_IN_FILE = (
    "API keys are never read from a settings file (it is easily committed or shown): put the "
    'key in an environment variable and name that variable with api_key_env = "VARIABLE" '
    "(docs/models.md, 'The API key')"
)


class ModelProfile(BaseModel):
    """One ``[models.NAME]`` table: a chat endpoint and the API it speaks (docs/models.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # One adapter each in sources/providers/, registered (docs/models.md, "Adding a provider").
    api: str = Field(
        "openai",
        description="the API: openai (chat completions), anthropic, azure, copilot, ollama",
    )
    base_url: str = Field(description="the API's root, e.g. http://127.0.0.1:11434/v1")
    model: str = Field(description="the model id the server knows")
    api_key_env: str | None = Field(None, description="the environment variable with the key")
    max_tokens: int | None = Field(None, ge=1, description="longest reply, tokens")
    temperature: float | None = Field(None, ge=0, description="sampling temperature")
    timeout: float = Field(600.0, gt=0, description="seconds without an answer before giving up")
    stream: bool = Field(True, description="stream the reply (a live line shows its progress)")
    deployment: str | None = Field(None, description="azure: the deployment's name")
    api_version: str | None = Field(None, description="azure: the api-version of the path")
    context_tokens: int | None = Field(
        None, ge=256, description="the model's window, tokens (default: asked of the server)"
    )
    keep_alive: str | None = Field(
        None, description='ollama: how long the model stays loaded ("5m", "1h", "-1")'
    )

    # The [models.NAME] the profile came from; None when flags alone named the endpoint.
    _name: str | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _no_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "api_key" in data:
            raise PydanticCustomError("api_key", KEY_IN_FILE)
        return data

    @field_validator("api")
    @classmethod
    def _known_api(cls, value: str) -> str:
        return _one_of("api", value, provider_apis())

    @property
    def name(self) -> str | None:
        return self._name


class Settings(BaseModel):
    """Everything a user can tune. Names are the keys of ``codingagent.toml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command_timeout: float = Field(30.0, gt=0, description="RUN_COMMAND time limit, seconds")
    max_output: int = Field(4000, ge=100, description="RUN_COMMAND output kept, characters")
    max_reply_bytes: int = Field(5 * 1024 * 1024, ge=1, description="larger replies are not run")
    token_budget: int = Field(100_000, ge=1000, description="warn when a prompt is larger")
    context_tokens: int | None = Field(
        None, ge=256, description="the chat's window, tokens: prompts are fitted to it"
    )
    max_preimage_bytes: int = Field(
        50 * 1024 * 1024, ge=0, description="bytes of old file contents one turn keeps for undo"
    )
    max_turns: int | None = Field(None, ge=1, description="stop a session after this many turns")
    commands: Literal["allow", "ask", "deny"] | None = Field(
        None, description="RUN_COMMAND approval; default: ask without an OS sandbox on a terminal"
    )
    sandbox: str = Field(
        "auto", description="RUN_COMMAND sandbox: auto, or a backend's name (doctor lists them)"
    )
    command_memory_mb: int = Field(
        4096, ge=0, description="RUN_COMMAND address space per process, MiB; 0: no limit"
    )
    command_processes: int = Field(
        256, ge=0, description="RUN_COMMAND processes and threads at once; 0: no limit"
    )
    command_tmp_mb: int = Field(512, ge=0, description="sandbox /tmp and home size, MiB; 0: none")
    poll: bool = Field(False, description="poll inbox/ instead of OS file events")
    clipboard: bool = Field(True, description="copy each new prompt to the clipboard")
    sandbox_hide: tuple[str, ...] = Field(
        (), description="more paths hidden from sandboxed commands (homes are always hidden)"
    )
    mask_secrets: bool = Field(True, description="mask secrets before a prompt is written")
    secret_files_allow: tuple[str, ...] = Field(
        (), description="workspace secret files (.env, *.pem, ...) sandboxed commands may read"
    )

    clipboard_watch: bool = Field(
        False, description="also take replies copied to the clipboard (implies clipboard)"
    )
    relay_port: int = Field(
        8766, ge=0, le=65535, description="the chat-tab relay's port on 127.0.0.1 (0: any free)"
    )

    models: dict[str, ModelProfile] = Field({}, description="[models.NAME] endpoint profiles")
    model_max_turns: int = Field(30, ge=1, description="turns one --model run takes at most")
    model_history_turns: int = Field(
        0, ge=0, description="earlier turns sent to a model with each prompt (0: stateless)"
    )
    model_history_chars: int = Field(
        40_000, ge=0, description="characters of history sent whole; older turns are trimmed"
    )

    protocol: Literal["every", "first"] = Field(
        "first", description="the full PROTOCOL in the first prompt (then a short form), or every"
    )
    listing_chars: int = Field(
        8000, ge=500, description="characters the workspace listing of a prompt may take"
    )

    tasks: tuple[str, ...] = Field(
        (), description="a queue `codingagent start` runs when given no task (docs/queue.md)"
    )

    instructions: tuple[str, ...] | None = Field(
        None,
        description="project instruction files for the first prompt (default: AGENTS.md, else "
        "CLAUDE.md, GEMINI.md, CONVENTIONS.md, .github/copilot-instructions.md); [] for none",
    )
    instructions_chars: int = Field(
        8000, ge=0, description="characters the project instructions of a prompt may take"
    )
    map_tokens: int | None = Field(
        None,
        ge=0,
        description="tokens the code map of a first prompt may take (default: follows the "
        "model's window, 2,048 when unknown); 0: no map",
    )

    check: str | None = Field(
        None,
        description="a command run in the sandbox before the first prompt and after each turn "
        "that changed files; its result is in the prompt, DONE refused while it fails "
        '(docs/prompts.md, "The check"); "" for none',
    )

    review: bool = Field(
        False,
        description="hold each reply's file changes for your review, per file and per hunk, "
        "before anything is written or run (docs/review.md)",
    )

    _origins: dict[str, str] = PrivateAttr(default_factory=dict)
    _ignored: list[str] = PrivateAttr(default_factory=list)

    @field_validator("sandbox")
    @classmethod
    def _known_sandbox(cls, value: str) -> str:
        return _one_of("sandbox", value, sandbox_modes())

    @property
    def origins(self) -> dict[str, str]:
        """Where each value that is not a default came from: a file, environment, flag."""
        return dict(self._origins)

    @property
    def ignored(self) -> list[str]:
        """One line for each value a file the LLM can write tried to loosen, and was ignored."""
        return list(self._ignored)

    @property
    def copies_prompts(self) -> bool:
        """Whether new prompts go onto the clipboard: the clipboard loop needs them there."""
        return self.clipboard or self.clipboard_watch

    def model_profile(
        self,
        name: str | None,
        base_url: str | None = None,
        model_id: str | None = None,
        api_key_env: str | None = None,
        timeout: float | None = None,
    ) -> ModelProfile | None:
        """The endpoint ``--model NAME`` (a profile) or ``--base-url URL --model-id ID`` names;
        None when neither is given. The flags override the profile's fields."""
        given: dict[str, object] = {"base_url": base_url, "model": model_id}
        given |= {"api_key_env": api_key_env, "timeout": timeout}
        given = {key: value for key, value in given.items() if value is not None}
        if name is None:
            if not given:
                return None
            if base_url is None or model_id is None:
                raise SettingsError("Give both --base-url URL and --model-id ID, or --model NAME")
            try:
                return ModelProfile.model_validate(given)
            except ValidationError as e:
                raise SettingsError(f"Invalid model flags: {e.errors()[0]['msg']}") from None
        if name not in self.models:
            known = ", ".join(sorted(self.models)) or "none yet"
            raise SettingsError(
                f"No model profile {name!r} in the settings (profiles: {known}); add a "
                "[models.NAME] table to codingagent.toml (see docs/models.md) or give "
                "--base-url URL --model-id ID"
            )
        profile = self.models[name].model_copy(update=given)
        profile._name = name
        return profile


_WORKSPACE_FIELD = re.compile(rb'"workspace":\s*("(?:[^"\\]|\\.)*")')  # not the whole state
_COMMANDS_RANK = {"allow": 0, None: 1, "ask": 2, "deny": 3}
_INFINITY = float("inf")


def _looser(key: str, old: Any, new: Any) -> bool:
    """Whether ``new`` is a weaker value of ``key`` than ``old``."""
    if key == "sandbox":  # none < auto < a backend by name; another backend is no tightening
        rank = {"none": 0, "auto": 1}
        return rank.get(new, 2) < rank.get(old, 2) or (new not in rank and new != old)
    if key == "commands":
        return bool(_COMMANDS_RANK[new] < _COMMANDS_RANK[old])
    if key in ("mask_secrets", "review"):  # turned off
        return bool(old and not new)
    if key == "sandbox_hide":
        return not set(new) >= set(old)
    if key in ("tasks", "check"):  # chosen by a file the LLM can write: never taken
        return bool(new != old)
    if key == "secret_files_allow":
        return not set(new) <= set(old)
    return bool((_INFINITY if new is None else new) > (_INFINITY if old is None else old))


# The keys a settings file the LLM can write may only tighten.
LOOSER = frozenset(
    {"sandbox", "commands", "mask_secrets", "sandbox_hide", "command_timeout", "max_output"}
    | {"max_reply_bytes", "max_turns", "tasks", "secret_files_allow", "check", "review"}
)


def load_settings(
    root: Path,
    flags: Mapping[str, Any] | None = None,
    *,
    workspaces: Iterable[Path] = (),
    trust_files: bool = False,
) -> Settings:
    """The settings for a run in ``root``: files, then environment, then ``flags`` (``None``
    values in ``flags`` mean "not given").

    A file inside one of ``workspaces``, the root's default ``workspace/`` or the workspace of
    any session in the root cannot loosen what the earlier sources set, unless ``trust_files``
    (``--trust-settings``: the flag ``trust_settings`` says the same).
    """
    flags = dict(flags or {})
    trust_files = bool(flags.pop("trust_settings", None)) or trust_files
    root = Path(root)
    every = (*workspaces, root / "workspace", *_session_workspaces(root))
    fenced = [Path(os.path.realpath(w)) for w in every]
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    ignored: list[str] = []
    for source, values, path in (
        *_file_settings(root),
        ("environment", _env_settings(os.environ), None),
        ("command line", {k: v for k, v in flags.items() if v is not None}, None),
    ):
        writable = path is not None and not trust_files and _inside(path, fenced)
        for key, value in values.items():
            if writable and key in LOOSER and _loosens(merged, key, value):
                ignored.append(
                    f"Ignored {key} = {value!r} from {source}: a file in the workspace may not"
                    " loosen it (the LLM can write there); set it in your own"
                    f" {user_settings_path()}, CODINGAGENT_{key.upper()}, a flag, or run with"
                    " --trust-settings"
                )
                continue
            merged[key] = value
            sources[key] = source
    if "api_key" in merged:
        raise SettingsError(f"Invalid settings: api_key ({sources['api_key']}): {KEY_IN_FILE}")
    settings = _validated(merged, sources)
    settings._origins.update(sources)
    settings._ignored.extend(ignored)
    return settings


def user_settings_path() -> Path:
    """The user's own settings file, outside every workspace: trusted like a flag."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "codingagent" / "config.toml"


def _session_workspaces(root: Path) -> list[Path]:
    """The workspace of each session in ``root/sessions/`` (the store's layout), read without
    the session model: whichever front end loads settings, a session's workspace is fenced."""
    found = []
    for path in (root / "sessions").glob("*.json"):
        try:
            field = _WORKSPACE_FIELD.search(path.read_bytes())
            if field:
                found.append(Path(json.loads(field.group(1))))
        except (OSError, ValueError):
            continue
    return found


def _inside(path: Path, folders: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(folder) for folder in folders)


def _loosens(merged: dict[str, Any], key: str, value: Any) -> bool:
    """Whether setting ``key`` to ``value`` weakens what ``merged`` gives. A value that does
    not validate is let through: the final validation reports it, naming its source."""
    try:
        before = Settings(**merged)
        after = Settings(**(merged | {key: value}))
    except ValidationError:
        return False
    return _looser(key, getattr(before, key), getattr(after, key))


def _validated(merged: dict[str, Any], sources: dict[str, str]) -> Settings:
    try:
        return Settings(**merged)
    except ValidationError as e:
        problems = []
        for error in e.errors():
            key = str(error["loc"][0]) if error["loc"] else "?"
            where = sources.get(key, "?")
            dotted = ".".join(map(str, error["loc"])) or "?"  # models.local.base_url
            name = f"{ENV_PREFIX}{key.upper()}" if where == "environment" else dotted
            problems.append(f"{name} ({where}): {error['msg']}")
        raise SettingsError("Invalid settings: " + "; ".join(problems)) from None


def _file_settings(root: Path) -> list[tuple[str, dict[str, Any], Path]]:
    """The user's file, then ``pyproject.toml``'s ``[tool.codingagent]``, then
    ``codingagent.toml`` (later wins): the project's, when the root is a project's run folder
    (:mod:`codingagent.records.runfolder`; inside the workspace, so they may only tighten),
    then the root's own."""
    found = []
    user = user_settings_path()
    if user.is_file():
        found.append((str(user), _table(_read_toml(user), user), user))
    link = root / "workspace"  # a project's run folder: the project's own files first
    folders = [Path(os.path.realpath(link)), root] if link.is_symlink() else [root]
    for folder in folders:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            table = _read_toml(pyproject).get("tool", {}).get("codingagent", {})
            found.append((f"{pyproject} [tool.codingagent]", _table(table, pyproject), pyproject))
        own = folder / SETTINGS_FILE
        if own.is_file():
            found.append((str(own), _table(_read_toml(own), own), own))
    return found


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"{path} is not valid TOML: {e}") from None


def _table(table: Any, path: Path) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: the codingagent settings must be a table")
    return {key.replace("-", "_"): value for key, value in table.items()}


def _env_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """``CODINGAGENT_COMMAND_TIMEOUT=60`` and so on; pydantic converts the strings.

    ``CODINGAGENT_SANDBOX_HIDE``, ``CODINGAGENT_SECRET_FILES_ALLOW`` and
    ``CODINGAGENT_INSTRUCTIONS`` are lists separated like ``PATH`` (empty: an empty list).
    ``CODINGAGENT_ROOT`` is a flag's environment variable, not a setting; ``CODINGAGENT_CRASH_AT``
    is a test hook.
    """
    fields = Settings.model_fields
    values: dict[str, Any] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX):
            key = name[len(ENV_PREFIX) :].lower()
            if key in ("sandbox_hide", "secret_files_allow", "instructions"):
                values[key] = tuple(filter(None, value.split(os.pathsep)))
            elif key in fields:
                values[key] = value
    return values
