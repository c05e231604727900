"""What ``codingagent doctor`` says: what works on this machine (sandbox, each protection, file
events, clipboard, settings and where they came from, versions), and of a run folder: free
space, the agent's folders, and whether a session's files can all be read back (each damaged or
unreadable one is named)."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import sys
import textwrap
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

from codingagent import __version__
from codingagent.codemap.grammars import available as grammars
from codingagent.faults import describe
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.sandbox.backends import default_approval, status
from codingagent.sandbox.protections import protections
from codingagent.session.seams import SourceError
from codingagent.settings import ModelProfile, Settings, load_settings
from codingagent.sources.pasteboard import describe as describe_clipboard
from codingagent.sources.providers.client import ChatClient
from codingagent.sources.watching import backend_name
from codingagent.state import Damaged, SessionError
from codingagent.transaction.capture import capture_way, describe_capture
from codingagent.transaction.journal import Journal

LOW_SPACE = 100 * 1024 * 1024  # bytes free in the run folder under which doctor warns
PACKAGES = (
    *("click", "pydantic", "watchdog", "rich", "pathspec", "filelock", "pyperclip"),
    *("httpx", "starlette", "uvicorn"),
)

Row = tuple[str, str]


def report(
    root: Path, session: str | None, interactive: bool, offline: bool = False
) -> tuple[list[Row], list[str]]:
    """``doctor``'s rows, and the damaged or unreadable session files among them; each model
    profile's endpoint is asked whether it answers unless ``offline``."""
    store = SessionStore(root)
    settings = load_settings(root)
    rows = machine_rows(settings, interactive)
    rows += [
        (f"model {name}", profile_check(profile, offline))
        for name, profile in settings.models.items()
    ]
    of = f" (for the project {store.project}, kept outside it)" if store.project else ""
    of += "" if store.root.is_dir() else " (not made yet)"
    rows.append(("agent's folders", f"{store.root}{of}"))
    rows.append(("free space", free_space(store.root)))
    rows.append(("RUN_COMMAND changes kept by", capture_row(store, settings, session)))
    rows += [("run folder", problem) for problem in folder_problems(store)]
    if session is not None:
        session_id = store.resolve(session)
        damaged = session_problems(store, session_id)
        rows.append((f"session {session_id}", "damaged" if damaged else "every file reads back"))
    else:  # the state file of each session; SESSION checks one in full
        ids = store.ids()
        damaged = [problem for session_id in ids for problem in state_problems(store, session_id)]
        rows.append(("sessions", "damaged" if damaged else f"{len(ids)} readable"))
    rows += [("  damaged", problem) for problem in damaged]
    return rows, damaged


def machine_rows(settings: Settings, interactive: bool) -> list[Row]:
    """What works here: the sandbox and each protection, approval, file events, clipboard; the
    settings and where each came from; the versions of the packages the agent runs on."""
    backend, reason = status(settings.sandbox)
    approval = settings.commands or default_approval(backend.isolated, interactive)
    hidden = ", ".join(backend.hidden_paths(settings.sandbox_hide))
    origins = settings.origins
    return [
        (
            "codingagent",
            f"{__version__} on Python {platform.python_version()}, {platform.platform()}",
        ),
        (
            "RUN_COMMAND sandbox",
            f"{backend.name}: {reason} (setting sandbox = {setting_text(settings.sandbox)})",
        ),
        (
            "RUN_COMMAND approval",
            f"{approval} (setting commands = {setting_text(settings.commands)})",
        ),
        ("hidden from commands", hidden or "nothing"),
        ("inbox watcher", f"{backend_name(settings.poll)} (poll = {setting_text(settings.poll)})"),
        ("clipboard", describe_clipboard()),
        ("code map grammars", ", ".join(grammars()) or "none: Python is read with ast"),
        *protections(settings),
        *(
            (key, setting_text(value) + (f" (from {origins[key]})" if key in origins else ""))
            for key, value in settings.model_dump().items()
        ),
        *(("ignored", line) for line in settings.ignored),
        *((package, _version(package)) for package in PACKAGES),
    ]


def capture_row(store: SessionStore, settings: Settings, session: str | None) -> str:
    """How a command's changes are kept for undo: on an overlay, or by stat scans and why
    (docs/undo.md); for SESSION's workspace, else the run directory's."""
    backend, _ = status(settings.sandbox)
    workspace, folder = store.workspace, store.sessions
    if session is not None:
        with contextlib.suppress(SessionError):
            session_id = store.resolve(session)
            workspace = Path(store.load(session_id).workspace)
            folder = store.sessions / session_id
    return describe_capture(capture_way(backend, workspace, folder))


def profile_check(profile: ModelProfile, offline: bool) -> str:
    """A model profile's API and address, whether its key variable is set (never the key),
    whether the endpoint answers and offers the model, and the model's window and where it
    came from (``offline``: not asked)."""
    said = f"{profile.api} API at {profile.base_url}, model {profile.model}"
    variable = profile.api_key_env
    if variable and not os.environ.get(variable):
        return f"{said}; ${variable} is not set: export it with the key"
    if variable:
        said += f"; ${variable} is set"
    if offline:
        own = profile.context_tokens
        shown = f"; window {own:,} tokens (context_tokens)" if own else ""
        return said + shown + "; not asked (--offline)"
    try:
        with ChatClient(profile) as client:
            client.check()
            window = client.window()
            api = client.adapter.api
    except SourceError as e:
        return f"{said}; {e}"
    spoken = "; Ollama found: its own chat API is used (num_ctx)" if api != profile.api else ""
    loaded = f", {window.loaded:,} as loaded now" if window.loaded else ""
    size = f"window {window.tokens:,} tokens ({window.source}{loaded})"
    return f"{said}; it answers{spoken}; {size}"


def setting_text(value: object) -> str:
    """A setting's value as a person reads it: no Python reprs, no ``None``."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):  # the model profiles, by name
        return ", ".join(f"[models.{name}]" for name in value) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def free_space(root: Path) -> str:
    """The free space where the run folder lives, with a warning when it is low."""
    folder = next((p for p in (root, *root.parents) if p.is_dir()), root)
    try:
        free = shutil.disk_usage(folder).free
    except OSError as e:
        return f"unknown: {describe(e)}"
    text = f"{free / 1e6:,.1f} MB free in {folder}"
    if free < LOW_SPACE:
        text += (
            f"; warning: low (under {LOW_SPACE / 1e6:.0f} MB): a full disk stops a turn, which"
            " is then rolled back; free some space"
        )
    return text


def folder_problems(store: SessionStore) -> list[str]:
    """The agent's folders (and the workspace) that exist but cannot be written in."""
    folders = (store.root, store.workspace, *store.agent_dirs)
    return [
        f"{folder} is not writable: give your user access to it (see: ls -ld)"
        for folder in folders
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK)
    ]


def state_problems(store: SessionStore, session_id: str) -> list[str]:
    """Whether the session's state file reads back: [] or why not."""
    problems: list[str] = []
    _check(lambda: store.load(session_id), problems)
    return problems


def session_problems(store: SessionStore, session_id: str) -> list[str]:
    """Every file of the session that cannot be read back, and why; [] when all are fine."""
    problems: list[str] = []
    check = functools.partial(_check, problems=problems)
    state = check(lambda: store.load(session_id))
    if state is not None and not Path(state.workspace).is_dir():
        problems.append(f"{state.workspace}: the session's workspace is gone")
    journal = store.journal_path(session_id)
    if journal.exists():
        check(lambda: Journal.read(journal))
    # Without a state, every history folder is checked.
    for folder in store.turns(session_id, state.sequence_number if state else 1 << 30):
        record = TurnRecord(folder)
        for read in (record.meta, record.results, record.postimages, record.state_before):
            check(read)
        if not record.reply_path.is_file():
            problems.append(f"{record.reply_path}: it is missing")
    return problems


def _check(read: Callable[[], Any], problems: list[str]) -> Any:
    """What ``read`` returns; None, with the problem added to ``problems``, if it fails."""
    try:
        return read()
    except Damaged as e:
        problems.append(f"{e.path}: {e.reason}")
    except SessionError as e:
        problems.append(str(e))
    except OSError as e:
        problems.append(describe(e))
    return None


def show_rows(rows: list[tuple[str, str]]) -> None:
    """The report as two columns on stdout: on a terminal long values wrap under their
    column; piped, a row stays one line."""
    width = max(len(key) for key, _ in rows) + 2
    wrap = sys.stdout.isatty()
    columns = max(shutil.get_terminal_size().columns, width + 30) if wrap else 1 << 20
    for key, value in rows:
        lines = textwrap.wrap(
            value, columns - width, break_long_words=False, break_on_hyphens=False
        )
        lines = lines or [""]
        click.echo(f"{key:<{width}}{lines[0]}")
        for line in lines[1:]:
            click.echo(" " * width + line)
