"""The sandbox seam: what an OS sandbox backend provides, and the registry that picks one.

A backend is one small class (:class:`Sandbox`): whether it works here (and why not), the
command line that wraps a command in it, the paths commands do not see, and how to describe it
to people (console, ``doctor``) and to the model (the Environment section). The registry maps
the ``sandbox`` setting's values to backends; ``auto`` takes the first isolating backend (by
name) that works here, else :class:`NoSandbox`. Nothing outside this package names a backend:
the rest of the agent asks :attr:`Sandbox.isolated`. docs/architecture.md says how to add one
(macOS ``sandbox-exec``, Landlock) and which tests it must pass (tests/test_sandbox_backends.py
runs every registered backend through the same contract).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Literal, Protocol


@dataclass(frozen=True)
class Job:
    """What a backend needs to know to wrap one command."""

    workspace: Path  # resolved; the one writable folder
    read_only: tuple[Path, ...]  # the agent's own folders inside the workspace
    tmp_bytes: int | None  # size of each private tmpfs, if the backend makes them
    hide: tuple[str, ...]  # more paths commands must not see (setting ``sandbox_hide``)
    # Workspace files that hold secrets: read as empty files, where the backend
    # :attr:`Sandbox.hides_files` (docs/secrets.md, 'Secret files').
    secret_files: tuple[str, ...] = ()
    # Where the command's writes go instead of the workspace, when the backend has a
    # :meth:`Sandbox.layer_problem` of None for it: the workspace is then the lower layer of an
    # overlay, untouched until the caller commits ``layer/upper`` (docs/undo.md).
    layer: Path | None = None


class Sandbox(Protocol):
    """An OS layer around every RUN_COMMAND (or none)."""

    name: str  # the value of the ``sandbox`` setting that asks for it
    isolated: bool  # an OS layer contains the command (the approval default depends on it)
    user_namespace: bool  # commands get a user namespace of their own (RLIMIT_NPROC binds them)
    hides_files: bool  # commands read :attr:`Job.secret_files` as empty files

    def problem(self) -> str | None:
        """None when it works here, else why not, for people (cached by the backend)."""

    def describe(self) -> str:
        """One line for people: what a command is kept from."""

    def model_note(self) -> str | None:
        """One line for the model's Environment section, or None."""

    def wrap(self, argv: list[str], job: Job) -> list[str]:
        """``argv`` run inside the sandbox."""

    def hidden_paths(self, extra: Iterable[str]) -> list[str]:
        """What commands do not see (``extra``: the ``sandbox_hide`` setting)."""

    def layer_problem(self, workspace: Path, layer: Path) -> str | None:
        """None when a command can write to a layer over ``workspace`` kept in the empty folder
        ``layer`` (:attr:`Job.layer`), else why not, for people."""

    def limit_note(self, output: str, tmp_bytes: int | None) -> str:
        """A line naming a limit of the sandbox's own that a failed command hit, or ``""``."""

    def protections(self, tmp_bytes: int | None) -> list[tuple[str, str]]:
        """``doctor``'s rows for what this layer protects, each (protection, status)."""


class NoSandbox:
    """No OS layer: commands run with the user's permissions (limits and the scrubbed
    environment still apply)."""

    name = "none"
    isolated = False
    user_namespace = False
    hides_files = False
    _ROWS = (
        "read-only system",
        "no network",
        "no host socket files",
        "private /tmp and home",
        "tool credential files",
        "workspace secret files",
        "/tmp size limit",
    )

    def problem(self) -> str | None:
        return None

    def describe(self) -> str:
        return "no OS sandbox: commands run with your permissions"

    def model_note(self) -> str | None:
        return None

    def wrap(self, argv: list[str], job: Job) -> list[str]:
        return argv

    def hidden_paths(self, extra: Iterable[str]) -> list[str]:
        return []

    def layer_problem(self, workspace: Path, layer: Path) -> str | None:
        return "no OS sandbox"

    def limit_note(self, output: str, tmp_bytes: int | None) -> str:
        return ""

    def protections(self, tmp_bytes: int | None) -> list[tuple[str, str]]:
        return [(row, "off: needs an OS sandbox") for row in self._ROWS]


# The registry's entry-point group; settings.py reads the same group for the setting's values
# (without importing a backend: this package must not need pydantic, nor settings a backend).
SANDBOXES = "codingagent.sandboxes"


@functools.cache
def backends() -> dict[str, Callable[[], Sandbox]]:
    """The registry: each sandbox backend registered in the package's entry points (group
    ``codingagent.sandboxes`` in pyproject.toml), by the name the ``sandbox`` setting uses.
    Read once a process: the installed packages' entry points are read from disk."""
    return {entry.name: entry.load() for entry in entry_points(group=SANDBOXES)}


class SandboxUnavailable(Exception):
    """The backend asked for by name does not work here; ``str(e)`` says why."""


def choose(mode: str = "auto") -> tuple[Sandbox, str]:
    """The backend ``mode`` gives here and, for people, why: a named backend that does not
    work raises :class:`SandboxUnavailable`; ``auto`` falls back to :class:`NoSandbox`."""
    registry = backends()
    modes = ("auto", *sorted(registry))
    if mode not in modes:
        raise ValueError(f"sandbox must be one of {', '.join(modes)}, not {mode!r}")
    if mode == NoSandbox.name:
        return NoSandbox(), f"no OS sandbox (sandbox = {mode}): commands run with your permissions"
    problems = []
    auto = [name for name, backend in sorted(registry.items()) if backend().isolated]
    for name in auto if mode == "auto" else [mode]:
        backend = registry[name]()
        problem = backend.problem()
        if problem is None:
            return backend, backend.describe()
        if mode != "auto":
            raise SandboxUnavailable(problem)
        problems.append(problem)
    return NoSandbox(), f"no OS sandbox: {'; '.join(problems)}; commands run with your permissions"


def status(mode: str = "auto") -> tuple[Sandbox, str]:
    """:func:`choose`, where a backend that does not work gives :class:`NoSandbox` (and why)."""
    try:
        return choose(mode)
    except SandboxUnavailable as e:
        return NoSandbox(), f"no OS sandbox: {e}"


def sandbox_status(mode: str = "auto") -> tuple[str, str]:
    """The name of the backend ``mode`` gives here (``"none"`` when none works) and why."""
    backend, reason = status(mode)
    return backend.name, reason


def default_approval(isolated: bool, stdin_is_tty: bool) -> Literal["ask", "allow"]:
    """The ``--commands`` policy when none is configured (docs/security.md §3, 'Approval'): ask
    only when no OS sandbox contains the command and a person at the terminal can answer."""
    return "ask" if not isolated and stdin_is_tty else "allow"
