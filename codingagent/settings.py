"""Settings: ``codingagent.toml`` (or ``[tool.codingagent]`` in ``pyproject.toml``) in the root,
then ``CODINGAGENT_*`` environment variables, then command-line flags; later sources win.

One pydantic model validates all three, so a typo or a bad value is one clear message that
names where it came from, never a traceback.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV_PREFIX = "CODINGAGENT_"


class SettingsError(Exception):
    """Settings the user must fix; the message says which and where."""


class Settings(BaseModel):
    """Everything a user can tune. Names are the keys of ``codingagent.toml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command_timeout: float = Field(30.0, gt=0, description="RUN_COMMAND time limit, seconds")
    max_output: int = Field(4000, ge=100, description="RUN_COMMAND output kept, characters")
    max_reply_bytes: int = Field(5 * 1024 * 1024, ge=1, description="larger replies are not run")
    token_budget: int = Field(100_000, ge=1000, description="warn when a prompt is larger")
    max_preimage_bytes: int = Field(
        50 * 1024 * 1024, ge=0, description="bytes of old file contents one turn keeps for undo"
    )
    max_turns: int | None = Field(None, ge=1, description="stop a session after this many turns")
    commands: Literal["allow", "ask", "deny"] | None = Field(
        None, description="RUN_COMMAND approval; default: ask without an OS sandbox on a terminal"
    )
    sandbox: Literal["auto", "bwrap", "none"] = Field("auto", description="RUN_COMMAND sandbox")
    poll: bool = Field(False, description="poll inbox/ instead of OS file events")
    clipboard: bool = Field(True, description="copy each new prompt to the clipboard")


def load_settings(root: Path, flags: Mapping[str, Any] | None = None) -> Settings:
    """The settings for a run in ``root``: file, then environment, then ``flags`` (``None``
    values in ``flags`` mean "not given")."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, values in (
        *_file_settings(Path(root)),
        ("environment", _env_settings(os.environ)),
        ("command line", {k: v for k, v in (flags or {}).items() if v is not None}),
    ):
        merged |= values
        sources |= dict.fromkeys(values, source)
    try:
        return Settings(**merged)
    except ValidationError as e:
        problems = []
        for error in e.errors():
            key = str(error["loc"][0]) if error["loc"] else "?"
            where = sources.get(key, "?")
            name = f"{ENV_PREFIX}{key.upper()}" if where == "environment" else key
            problems.append(f"{name} ({where}): {error['msg']}")
        raise SettingsError("Invalid settings: " + "; ".join(problems)) from None


def _file_settings(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """``codingagent.toml`` wins over ``pyproject.toml``'s ``[tool.codingagent]``."""
    found = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("codingagent", {})
        found.append((f"{pyproject} [tool.codingagent]", _table(table, pyproject)))
    own = root / "codingagent.toml"
    if own.is_file():
        found.append((str(own), _table(_read_toml(own), own)))
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

    ``CODINGAGENT_ROOT`` is a flag's environment variable, not a setting; ``CODINGAGENT_CRASH_AT``
    is a test hook.
    """
    fields = Settings.model_fields
    values: dict[str, Any] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX):
            key = name[len(ENV_PREFIX) :].lower()
            if key in fields:
                values[key] = value
    return values
