"""The command line: click commands that parse flags and print. Policy lives in the session
loop (:mod:`codingagent.session.loop`); printing in :mod:`codingagent.frontends.console`.

Console output goes to stderr; stdout carries only data (``show`` prints the outbox,
``sessions`` and ``log`` print tables or JSON), so both can be piped.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.shell_completion import CompletionItem
from rich.console import Console

from codingagent import __version__
from codingagent.frontends.console import STYLE, console, error, safe_text, say, shorten

# The agent's own modules load pydantic, filelock and watchdog: each command imports what it
# uses, so `codingagent --help` starts in a fraction of the time.
if TYPE_CHECKING:
    from codingagent.session.loop import SessionLoop
    from codingagent.session.seams import ReplySource
    from codingagent.settings import Settings
    from codingagent.sources.chat import ChatClient


class _Group(click.Group):
    """Turns user errors, and faults of the machine (a full disk, no permission: see
    :mod:`codingagent.faults`), into one red line and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        from codingagent.faults import message
        from codingagent.session.seams import SourceError
        from codingagent.settings import SettingsError
        from codingagent.state import SessionError

        try:
            return super().invoke(ctx)
        except (SessionError, SettingsError, SourceError) as e:
            error(str(e))
            ctx.exit(1)
        except OSError as e:
            error(message(e))
            ctx.exit(1)


# --- options -----------------------------------------------------------------------------


def _complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion: the session ids of the run directory, with their tasks."""
    from codingagent.session.store import SessionStore
    from codingagent.state import SessionError

    root = ctx.params.get("root") or os.environ.get("CODINGAGENT_ROOT", ".")
    store = SessionStore(Path(root))
    try:
        states = [store.load(session_id) for session_id in store.ids()]
    except SessionError:
        return []
    return [
        CompletionItem(s.session_id, help=shorten(s.task, 40))
        for s in states
        if s.session_id.startswith(incomplete)
    ]


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    envvar="CODINGAGENT_ROOT",
    help="Run directory holding workspace/, outbox/, inbox/ and sessions/.",
)
session_argument = click.argument(
    "session", default="latest", required=False, shell_complete=_complete_session
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
            help="The full PROTOCOL in every prompt (default), or in the first only.",
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
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


def _model(root: Path, flags: dict[str, Any], workspace: Path | None = None) -> ChatClient | None:
    """Takes :func:`model_options` out of ``flags``: a client for the endpoint they name, if
    any. Settings errors and a missing key stop us before a session is made or touched."""
    from codingagent.sources.chat import ChatClient

    given = [flags.pop(key) for key in ("model_name", "base_url", "model_id", "api_key_env")]
    profile = _settings(root, flags, workspace).model_profile(*given)
    return None if profile is None else ChatClient(profile)


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


def _settings(root: Path, flags: dict[str, Any], workspace: Path | None = None) -> Settings:
    """The settings for a run on ``workspace``; files in it may not loosen them (SPEC 4.1)."""
    from codingagent.settings import load_settings

    return load_settings(root, flags, workspaces=[workspace] if workspace is not None else [])


def _loop(root: Path, session: str, flags: dict[str, Any], automatic: bool = False) -> SessionLoop:
    """The session loop for SESSION in ROOT with the settings and these flags, on the console;
    settings a workspace file tried to loosen are named on the console."""
    from codingagent.frontends.approval import answer_on_terminal, ask_on_terminal
    from codingagent.frontends.console import ConsoleListener
    from codingagent.session.loop import SessionLoop
    from codingagent.session.store import SessionStore
    from codingagent.sources import pasteboard

    store = SessionStore(root)
    settings = _settings(root, flags, Path(store.load(store.resolve(session)).workspace))
    for line in settings.ignored:
        say(line, "yellow")
    return SessionLoop(
        store,
        settings,
        session,
        ConsoleListener(
            ask=ask_on_terminal,
            answer=answer_on_terminal,
            pasting=not automatic,
            clipboard_loop=settings.clipboard_watch and not automatic,
        ),
        interactive=sys.stdin.isatty(),
        automatic=automatic,
        copy=pasteboard.copy,
    )


def _stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


# --- commands ----------------------------------------------------------------------------


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codingagent")
def main() -> None:
    """Drive a coding agent with any chat LLM, by copy-paste.

    `start` writes a prompt into outbox/; paste it into your chat LLM and save the reply as a
    .txt file in inbox/ (or run `codingagent paste`); the agent applies it and writes the next
    prompt. With `start --clipboard`, prompts go onto the clipboard and copying the reply in the
    chat is enough.

    Exit codes: 0 ok, 1 a problem to fix (the message says which), 2 wrong usage,
    130 stopped with Ctrl-C.
    """


@main.command()
@click.argument("task")
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Work on this existing folder instead of ROOT/workspace.",
)
@root_option
@click.option("--no-watch", is_flag=True, help="Write the first prompt and exit.")
@poll_option
@model_options
@clipboard_option
@tuning_options
def start(task: str, workspace: Path | None, root: Path, no_watch: bool, **flags: Any) -> None:
    """Start a session for TASK and watch inbox/ (and with --clipboard, the clipboard) for the
    LLM's replies, or let --model answer."""
    from codingagent.session.lifecycle import new_session
    from codingagent.session.store import SessionStore
    from codingagent.sources.clipboard import require_clipboard

    # Settings errors, a model's missing key, or a clipboard loop without a clipboard stop us
    # before a session is made.
    model = _model(root, flags, workspace)
    settings = _settings(root, flags, workspace)
    if model is None and not no_watch and settings.clipboard_watch:
        require_clipboard()
    state = new_session(SessionStore(root), settings, task, workspace)
    console.print(
        safe_text("Session ")
        + safe_text(state.session_id, "bold")
        + safe_text(f" started on {state.workspace}")
    )
    _watch(_loop(root, state.session_id, flags, model is not None), watch=not no_watch, model=model)


@main.command()
@session_argument
@root_option
@click.option(
    "--task",
    "follow_up",
    help="A follow-up instruction: reopens a completed session with it as the new prompt.",
)
@click.option("--no-watch", is_flag=True, help="Write the prompt and exit.")
@poll_option
@model_options
@clipboard_option
@tuning_options
def resume(session: str, root: Path, follow_up: str | None, no_watch: bool, **flags: Any) -> None:
    """Continue watching for replies to SESSION (default: the latest), or let --model answer.

    A turn interrupted by a crash is first rolled back and applied again.
    """
    model = _model(root, flags)
    loop = _loop(root, session, flags, model is not None)
    _watch(loop, follow_up=follow_up, watch=not no_watch, model=model)


@main.command()
@click.argument("session", shell_complete=_complete_session)
@click.argument("reply", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@root_option
@click.option("--force", is_flag=True, help="Apply the reply even if it was applied before.")
@tuning_options
def step(session: str, reply: str, root: Path, force: bool, **flags: Any) -> None:
    """Apply one REPLY file (or - for stdin) to SESSION, write the next prompt, and exit."""
    from codingagent.faults import TurnNotApplied
    from codingagent.session.loop import interrupted_turn
    from codingagent.session.seams import Reply
    from codingagent.sources.inbox import InboxSource

    with _loop(root, session, flags) as loop:
        inbox = InboxSource(loop.store.inbox, loop.settings.max_reply_bytes)
        if reply == "-":
            given = Reply(sys.stdin.buffer.read(), source="<stdin>")
        else:
            given = inbox.read(Path(reply))
        try:
            loop.step(given, force, done_with=inbox.done_with)
        except TurnNotApplied as fault:
            if reply != "-" and fault.source == given.source:
                fault.retry = f"run 'codingagent step {loop.session_id} {reply}' again"
            raise
        except KeyboardInterrupt as e:
            say(f"Stopped (Ctrl-C): {interrupted_turn(e)}", "yellow")
            sys.exit(130)


@main.command()
@session_argument
@root_option
def paste(session: str, root: Path) -> None:
    """Save the LLM's reply from the clipboard (or piped stdin) into inbox/.

    A watcher (`start` or `resume`) applies it at once; otherwise the next one does.
    """
    from codingagent.session.store import SessionStore
    from codingagent.sources.inbox import save_reply
    from codingagent.sources.pasteboard import paste as read_clipboard
    from codingagent.state import SessionError

    store = SessionStore(root)
    session_id = store.resolve(session)
    if _stdin_is_terminal():
        text, problem = read_clipboard()
        if text is None:
            raise SessionError(
                f"No clipboard here ({problem}); pipe the reply: codingagent paste < reply.txt"
            )
    else:
        text = sys.stdin.read()
    path = save_reply(store.inbox, session_id, text)
    say(f"Saved the reply ({len(text):,} characters) as {path}")


@main.command()
@click.argument("words", nargs=-1, required=True, metavar="[SESSION] TEXT")
@root_option
def answer(words: tuple[str, ...], root: Path) -> None:
    """Answer the LLM's question (ASK) in SESSION (default: the latest) with TEXT, and write
    the next prompt, which carries the answer."""
    if len(words) > 2:
        raise click.UsageError(
            'Give the answer as one argument, in quotes: answer [SESSION] "TEXT"'
        )
    session, text = words if len(words) == 2 else ("latest", words[0])
    with _loop(root, session, {}) as loop:
        loop.answer(text)


@main.command(name="undo")
@session_argument
@root_option
@click.option("--turns", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--force", is_flag=True, help="Undo even over files changed since by hand.")
def undo_command(session: str, root: Path, turns: int, force: bool) -> None:
    """Restore the files of the last turns of SESSION exactly and rewind it."""
    with _loop(root, session, {}) as loop:
        loop.undo(turns, force)


@main.command()
@session_argument
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the log as JSON.")
def log(session: str, root: Path, as_json: bool) -> None:
    """Show each turn of SESSION: when, which reply, each command's result and duration."""
    from codingagent.session.history import turn_log
    from codingagent.session.store import SessionStore
    from codingagent.state import CommandResult

    store = SessionStore(root)
    session_id = store.resolve(session)
    entries = turn_log(store, session_id)
    if as_json:
        click.echo(json.dumps(entries, indent=2, ensure_ascii=False))
        return
    out = Console(soft_wrap=True, highlight=False, markup=False)
    if not entries:
        out.print(f"Session {session_id} has no turns yet")
    for entry in entries:
        out.print(
            safe_text(
                f"Turn {entry['sequence']}  {entry['appliedAt']}  {entry['replyFile']}  "
                f"{entry['durationMs']:.0f} ms",
                style="bold",
            )
        )
        if "model" in entry:
            tokens = [
                ("?" if n is None else f"{n:,}") for n in (entry["tokensIn"], entry["tokensOut"])
            ]
            out.print(
                safe_text(
                    f"  model {entry['model']}: {tokens[0]} tokens in, {tokens[1]} out, "
                    f"{entry['modelSeconds']:.1f} s",
                    style="dim",
                )
            )
        for result in map(CommandResult.model_validate, entry["results"]):
            out.print(
                safe_text(f"  {result.headline}", style=STYLE[result.success])
                + safe_text(f"  ({result.duration_ms:.0f} ms)", style="dim")
            )
        for line in entry.get("autoRun", []):
            out.print(safe_text(f"  Runs code outside the sandbox: {line}", style="bold red"))
        if entry.get("masked"):
            out.print(safe_text(f"  {entry['masked']} secret(s) masked in the next prompt"))


@main.command()
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
def sessions(root: Path, as_json: bool) -> None:
    """List the sessions, most recent first."""
    from rich.table import Table

    from codingagent.session.store import SessionStore, age

    store = SessionStore(root)
    states = [store.load(session_id) for session_id in store.ids()]
    if as_json:
        click.echo(json.dumps([json.loads(s.to_json()) for s in states], indent=2))
        return
    if not states:
        console.print(safe_text(f"No sessions in {store.sessions}"))
        return
    table = Table("id", "task", "turn", "state", "age")
    for state in states:
        table.add_row(
            state.session_id,
            safe_text(shorten(state.task, 50)),
            str(state.sequence_number),
            "done" if state.is_complete else "asks" if state.question else "open",
            age(state.updated_at),
        )
    Console(soft_wrap=True, markup=False).print(table)


@main.command()
@session_argument
@root_option
@click.option("--copy", is_flag=True, help="Also copy the prompt to the clipboard.")
@click.option(
    "--full",
    is_flag=True,
    help="With the full PROTOCOL and Environment sections, for a new chat (protocol = first).",
)
def show(session: str, root: Path, copy: bool, full: bool) -> None:
    """Print the current prompt of SESSION (default: the latest) to stdout."""
    from dataclasses import replace

    from codingagent.prompt.render import PromptOptions
    from codingagent.session.outbox import ensure_outbox, prompt_text
    from codingagent.session.store import SessionStore
    from codingagent.settings import load_settings

    store = SessionStore(root)
    session_id = store.resolve(session)
    prompt = PromptOptions.from_settings(load_settings(root))
    # A watcher holding the session keeps its prompt; without its lock nothing is saved.
    with store.held_if_free(session_id) as held:
        state = store.load(session_id)
        if state.is_complete:
            say(f"Session {state.session_id} is complete: {state.summary or ''}")
            return
        if state.question is not None:
            say(f"Session {state.session_id} waits for your answer to the LLM's question:")
            say(state.question, "bold")
            say(f'Answer with: codingagent answer {state.session_id} "..."')
            return
        if full:
            text = prompt_text(store, state, replace(prompt, full_protocol=True))[0]
        else:
            path = ensure_outbox(store, state, prompt, keep_digests=held)
            text = path.read_text(encoding="utf-8")
    click.echo(text, nl=False)
    if copy:
        from codingagent.sources.pasteboard import copy as copy_text

        problem = copy_text(text)
        say("Copied to the clipboard." if problem is None else f"Not copied: {problem}")


@main.command()
@session_argument
@root_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@click.option("--no-open", is_flag=True, help="Print the page's address; do not open a browser.")
@tuning_options
def ui(session: str, root: Path, port: int, no_open: bool, **flags: Any) -> None:
    """Serve a local web page for SESSION (default: the latest): copy the prompt, paste the
    reply, see each turn's results and diffs, undo. Its address carries a secret token."""
    from codingagent.frontends.page.server import run

    try:
        run(root, session, port, not no_open, flags)
    except KeyboardInterrupt:  # the way to stop it
        sys.exit(130)


@main.command()
@click.argument("session", required=False, shell_complete=_complete_session)
@root_option
def doctor(session: str | None, root: Path) -> None:
    """Say what works on this machine: sandbox, file events, clipboard, settings, versions,
    free space; with SESSION, check that every file of that session can be read back.

    Exits 1 when a session file is damaged or unreadable (each one is named).
    """
    from codingagent.frontends.doctor import report

    rows, damaged = report(root, session, interactive=sys.stdin.isatty())
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")
    if damaged:
        error(f"{len(damaged)} damaged or unreadable file(s) listed above")
        sys.exit(1)


# --- watching --------------------------------------------------------------------------


def _watch(
    loop: SessionLoop,
    follow_up: str | None = None,
    watch: bool = True,
    model: ChatClient | None = None,
) -> None:
    """Prepare the session; then, with ``watch``, apply the replies saved into inbox/ (and with
    ``clipboard_watch``, copied), or the answers of ``model``, until the session stops (exit 130
    after Ctrl-C)."""
    from codingagent.faults import TurnNotApplied
    from codingagent.session.seams import StopReason

    with loop:
        if not watch:
            loop.prepare(follow_up)
            return
        with _source(loop, model) as source:
            try:
                stop = loop.run(source, follow_up)
            except TurnNotApplied as fault:  # the watcher stops: the user must act first
                if (loop.store.inbox / fault.source).is_file():
                    fault.retry = (
                        f"run 'codingagent resume {loop.session_id}': the reply waits in "
                        f"{loop.store.inbox}"
                    )
                raise
    if stop.reason is StopReason.INTERRUPTED:
        sys.exit(130)


def _source(loop: SessionLoop, model: ChatClient | None) -> AbstractContextManager[ReplySource]:
    """The inbox watcher (with the clipboard's, for the clipboard loop), or the model endpoint
    when one is given."""
    settings = loop.settings
    if model is None:
        from codingagent.sources.clipboard import ClipboardSource
        from codingagent.sources.inbox import InboxSource

        inbox = InboxSource(loop.store.inbox, settings.max_reply_bytes, poll=settings.poll)
        return ClipboardSource(inbox) if settings.clipboard_watch else inbox
    from codingagent.sources.endpoint import EndpointSource

    return EndpointSource(
        model, loop.store, loop.listener, history_turns=settings.model_history_turns
    )
