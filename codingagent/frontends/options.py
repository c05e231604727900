"""The command line's shared options, and the settings and session loop a command runs with.

Heavy modules (pydantic, filelock, watchdog) are imported inside each function, so
``codingagent --help`` stays fast.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from click.shell_completion import CompletionItem

from codingagent.frontends.console import say, shorten

if TYPE_CHECKING:
    from codingagent.records.runfolder import Place
    from codingagent.session.loop import SessionLoop
    from codingagent.settings import Settings
    from codingagent.sources.providers.client import ChatClient


def complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion: the session ids of the run directory, with their tasks."""
    from codingagent.records.summaries import summaries

    given = ctx.params.get("root") or os.environ.get("CODINGAGENT_ROOT")
    root = Path(given) if given else run_place().root
    return [
        CompletionItem(s.session_id, help=shorten(s.task, 40))
        for s in summaries(root.resolve() / "sessions")
        if s.session_id.startswith(incomplete)
    ]


def run_place(workspace: Path | None = None) -> Place:
    """Where the run folder is for a command run here without ``--root`` (``workspace``:
    ``start --workspace``): the current folder with the seed layout, or the agent's folder of
    the project the user stands in (docs/commands.md, "Where the agent's folders go")."""
    from codingagent.records.runfolder import place

    return place(Path.cwd(), workspace)


def _root(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """``--root`` as given (or ``$CODINGAGENT_ROOT``); when neither, :func:`run_place`."""
    if ctx.get_parameter_source(param.name or "root") is not ParameterSource.DEFAULT:
        return value
    return run_place().root


def root_given() -> bool:
    """Whether the running command was given ``--root`` (or ``$CODINGAGENT_ROOT``)."""
    source = click.get_current_context().get_parameter_source("root")
    return source is not ParameterSource.DEFAULT


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    envvar="CODINGAGENT_ROOT",
    callback=_root,
    help="Run directory holding workspace/, outbox/, inbox/ and sessions/ (default: here, or "
    "in a project the agent's folder for it, outside the project).",
)
session_argument = click.argument(
    "session", default="latest", required=False, shell_complete=complete_session
)


def tuning_options(command: Callable) -> Callable:
    """Flags that override settings; ``None`` means "not given, use the settings"."""
    options = [
        click.option("--timeout", "command_timeout", type=float, help="RUN_COMMAND time limit, s."),
        click.option("--max-reply-bytes", type=int, help="Larger replies are not run."),
        click.option("--max-turns", type=int, help="Stop the session after this many turns."),
        click.option("--copy/--no-copy", "clipboard", default=None, help="Copy new prompts."),
        click.option(
            "--sandbox",
            metavar="NAME",
            help="RUN_COMMAND's OS sandbox: auto (the first that works here), none, or a "
            "backend's name (doctor lists them).",
        ),
        click.option(
            "--commands",
            type=click.Choice(["allow", "ask", "deny"]),
            help="RUN_COMMAND approval (default: ask without a sandbox on a terminal).",
        ),
        click.option(
            "--mask/--no-mask",
            "mask_secrets",
            default=None,
            help="Mask secrets in prompts (default: on).",
        ),
        click.option(
            "--trust-settings",
            is_flag=True,
            default=None,
            help="Let settings files inside the workspace loosen the sandbox, approval or limits.",
        ),
        click.option(
            "--protocol",
            type=click.Choice(["every", "first"]),
            help="The full PROTOCOL in the first prompt only (default), or in every one.",
        ),
        click.option(
            "--check",
            metavar="CMD",
            help="Run CMD (e.g. 'pytest -q') before the first prompt and after each turn that "
            "changed files; its result is in the prompt, DONE refused while it fails ('': none).",
        ),
        click.option(
            "--review/--no-review",
            default=None,
            help="Hold each reply's file changes until you accept or reject them, per file and "
            "per hunk (codingagent review; docs/review.md).",
        ),
        click.option(
            "--context-tokens",
            type=int,
            metavar="N",
            help="The chat's window in tokens: prompts are fitted to it (docs/models.md).",
        ),
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


def model_options(command: Callable) -> Callable:
    """The model endpoint that answers the prompts instead of the user (docs/models.md)."""
    options = [
        click.option(
            "--model", "model_name", metavar="NAME", help="Let this [models.NAME] answer."
        ),
        click.option("--base-url", metavar="URL", help="Or an OpenAI-compatible API's root ..."),
        click.option("--model-id", metavar="ID", help="... and the model id it serves."),
        click.option("--api-key-env", metavar="VAR", help="The variable holding the API key."),
        click.option(
            "--model-timeout", type=float, help="Seconds without an answer before giving up."
        ),
        click.option(
            "--no-model", is_flag=True, default=None, help="Drop the model the session keeps."
        ),
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


def one_source(flags: dict[str, Any]) -> None:
    """A usage error when the flags name two sources of replies."""
    if flags.get("clipboard_watch") and (flags.get("model_name") or flags.get("base_url")):
        raise click.UsageError(
            "--clipboard and --model (or --base-url) exclude each other: with a model, the "
            "model gives the replies and nothing is taken from the clipboard"
        )


def model_client(
    root: Path, flags: dict[str, Any], workspace: Path | None = None
) -> ChatClient | None:
    """Takes :func:`model_options` out of ``flags``: a client for the endpoint they name, if
    any. Settings errors and a missing key stop us before a session is made or touched."""
    from codingagent.sources.providers.client import ChatClient

    flags.pop("no_model", None)
    names = ("model_name", "base_url", "model_id", "api_key_env", "model_timeout")
    given = [flags.pop(key, None) for key in names]
    profile = run_settings(root, flags, workspace).model_profile(*given)
    return None if profile is None else ChatClient(profile)


file_option = click.option(
    "--file",
    "files",
    multiple=True,
    metavar="PATH",
    help="Show this workspace file or folder whole in the prompt (repeatable; globs as in "
    ".gitignore). '@path' words in the task do the same.",
)


def named_files(folder: Path, patterns: tuple[str, ...], text: str) -> list[str]:
    """The workspace paths ``--file`` ``patterns`` and the ``@path`` words of ``text`` name
    (docs/prompts.md); a SessionError, before any session is made or changed, for a name that
    matches nothing."""
    if not patterns and "@" not in text:
        return []
    from codingagent.prompt.named import named_paths
    from codingagent.state import SessionError
    from codingagent.workspace import Workspace

    if not folder.is_dir():
        if not patterns:
            return []
        raise SessionError(f"Workspace folder does not exist: {folder}")
    paths = named_paths(Workspace(folder), patterns, text)
    if paths:
        say(f"Named: {', '.join(paths)} (shown whole in the prompt)")
    return paths


poll_option = click.option(
    "--poll/--no-poll",
    default=None,
    help="Poll inbox/ instead of using OS file events (network drives, WSL, containers).",
)
clipboard_option = click.option(
    "--clipboard/--no-clipboard",
    "clipboard_watch",
    default=None,
    help="Also take the LLM's reply from the clipboard: copy it in the chat, nothing else.",
)


def _terminal() -> bool:
    return sys.stdin.isatty()


def instructed_check(
    root: Path, workspace: Path | None, folder: Path, flags: dict[str, Any], kept: dict[str, Any]
) -> Settings:
    """The settings of a new session, with the check command the workspace offers (see
    :func:`_offered_check`) when none is set and the user confirms it on a terminal: then it
    is in ``flags`` and ``kept`` (the session keeps it). Without a terminal it is not used, and
    the console says how to use it (docs/prompts.md, "The check")."""
    from codingagent.frontends.approval import confirm_check

    settings = run_settings(root, flags, workspace)
    offered = _offered_check(folder, settings) if settings.check is None else None
    if offered is None:
        if settings.check:
            say(f"Running the check before the first prompt: {settings.check}")
        return settings
    said, command = offered
    if not _terminal():
        say(
            f"{said}, '{command}'; it is not run without a terminal to confirm it: start "
            f'with --check "{command}" to use it',
            "yellow",
        )
        return settings
    if not confirm_check(said, command):
        return settings
    flags["check"] = kept["check"] = command
    say(f"Running the check before the first prompt: {command}")
    return run_settings(root, flags, workspace)


def _offered_check(folder: Path, settings: Settings) -> tuple[str, str] | None:
    """The check command ``folder`` offers, and how it is said: the one its AGENTS.md (or
    kin) names, else the test command its project files declare (pytest's configuration,
    package.json, ...); None for neither."""
    from codingagent.prompt.instructions import named_check
    from codingagent.workspace import Workspace
    from codingagent.workspace.declared import declared_check

    if not folder.is_dir():
        return None
    ws = Workspace(folder)
    named = named_check(ws, settings.instructions)
    if named is not None:
        return f"{named[0]} names a check command", named[1]
    declared = declared_check(ws)
    if declared is None:
        return None
    return f"{declared.source} declares the project's tests", declared.command


def run_settings(root: Path, flags: dict[str, Any], workspace: Path | None = None) -> Settings:
    """The settings for a run on ``workspace``; files in it may not loosen them
    (docs/security.md §5)."""
    from codingagent.settings import load_settings

    return load_settings(root, flags, workspaces=[workspace] if workspace is not None else [])


def session_loop(
    root: Path,
    session: str,
    flags: dict[str, Any],
    automatic: bool = False,
    relay: bool = False,
) -> SessionLoop:
    """The session loop for SESSION in ROOT with the settings and these flags, on the console;
    settings a workspace file tried to loosen are named on the console. ``relay``: the
    browser extension carries each prompt to the chat (nobody pastes it)."""
    from codingagent.frontends.approval import (
        answer_on_terminal,
        ask_on_terminal,
        review_on_terminal,
    )
    from codingagent.frontends.console_listener import ConsoleListener
    from codingagent.frontends.kept import described
    from codingagent.records.store import SessionStore
    from codingagent.session.loop import SessionLoop
    from codingagent.sources import pasteboard

    store = SessionStore(root)
    state = store.load(store.resolve(session))
    settings = run_settings(root, flags, Path(state.workspace))
    for line in settings.ignored:
        say(line, "yellow")
    if state.options:
        say(f"Options kept with the session: {described(state)}")
    _settle()
    return SessionLoop(
        store,
        settings,
        session,
        ConsoleListener(
            ask=ask_on_terminal,
            answer=answer_on_terminal,
            review=review_on_terminal,
            pasting=not automatic and not relay,
            clipboard_loop=settings.clipboard_watch and not automatic,
        ),
        interactive=sys.stdin.isatty(),
        automatic=automatic,
        copy=pasteboard.copy,
    )


def _settle() -> None:
    """Keep the cycle collector off what the process made so far (its modules, classes and
    settings live until it ends): a turn on a big tree makes tens of thousands of objects (a
    walk's stat data, the secret scan's record), and each time they set off a collection of
    the oldest generation it would walk every one of those again (~15 ms on this machine;
    benchmarks/commands.py --step). Once a process: the first loop's objects are those."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
