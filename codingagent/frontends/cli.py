"""The command line: click commands that parse flags and print. Policy lives in the session
loop (:mod:`codingagent.session.loop`); printing in :mod:`codingagent.frontends.console`.

Console output goes to stderr; stdout carries only data (``show`` prints the outbox,
``sessions`` and ``log`` print tables or JSON), so both can be piped.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codingagent import __version__
from codingagent.frontends import accounts, exits, inspection, queueing, relaying, reviews
from codingagent.frontends.console import error, say
from codingagent.frontends.options import (
    clipboard_option,
    complete_session,
    file_option,
    instructed_check,
    model_client,
    model_options,
    named_files,
    one_source,
    poll_option,
    root_option,
    run_settings,
    session_argument,
    session_loop,
    tuning_options,
)

# The agent's own modules load pydantic, filelock and watchdog: each command imports what it
# uses, so `codingagent --help` starts in a fraction of the time.
if TYPE_CHECKING:
    from codingagent.session.loop import SessionLoop
    from codingagent.session.seams import ReplySource
    from codingagent.sources.providers.client import ChatClient


class _Group(click.Group):
    """Turns user errors, and faults of the machine (a full disk, no permission: see
    :mod:`codingagent.faults`), into one red line and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as e:
            from codingagent.faults import message

            error(message(e))
            ctx.exit(exits.Exit.PROBLEM)
        except Exception as e:
            # Imported only now: a command that needs none of them (`sessions`) starts faster.
            from codingagent.session.seams import SourceError
            from codingagent.settings import SettingsError
            from codingagent.state import SessionError

            if not isinstance(e, (SessionError, SettingsError, SourceError)):
                raise
            error(str(e))
            ctx.exit(exits.Exit.PROBLEM)


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
    """


main.help = exits.appended(main.help, exits.summary())


def watch_options(command: Callable) -> Callable:
    """The options of a command that watches for replies (``start``, ``resume``)."""
    relay = relaying.relay_options
    options: list[Callable[[Callable], Callable]] = [file_option, poll_option, model_options]
    options += [clipboard_option, relay, tuning_options]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


@main.command()
@click.argument("tasks", nargs=-1, metavar="[TASK]...")
@click.option(
    "--tasks",
    "task_file",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="A queue: one task per block of FILE (blank lines between), or a JSON/TOML array.",
)
@click.option("--stop-on-failure", is_flag=True, help="A queue stops at its first task that stops.")
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Work on this existing folder instead of ROOT/workspace (never /, a home folder or a "
    "system folder).",
)
@click.option(
    "--allow-broad-workspace",
    is_flag=True,
    help="Accept a --workspace that is /, a home folder or a system folder anyway (one "
    "session, not a queue).",
)
@root_option
@click.option("--no-watch", is_flag=True, help="Write the first prompt and exit.")
@watch_options
def start(
    tasks: tuple[str, ...],
    task_file: str | None,
    stop_on_failure: bool,
    workspace: Path | None,
    allow_broad_workspace: bool,
    root: Path,
    no_watch: bool,
    files: tuple[str, ...],
    **flags: Any,
) -> None:
    """Start a session for TASK and watch inbox/ (and with --clipboard, the clipboard) for the
    LLM's replies, or let --model answer. Several TASKs, or --tasks FILE, make a queue: one
    session per task, each started when the one before ends (docs/queue.md)."""
    from codingagent.frontends import starting
    from codingagent.frontends.kept import keep
    from codingagent.records.store import SessionStore
    from codingagent.session.lifecycle import new_session
    from codingagent.sources.clipboard import require_clipboard
    from codingagent.workspace.choice import BROAD_OVERRIDE, check_workspace

    relay = relaying.take_relay(flags)
    options = dict(flags)  # kept with the session (docs/prompts.md)
    # A workspace too broad to hand to the LLM, settings errors, a model's missing key, or a
    # clipboard loop without a clipboard stop us before a session is made.
    queue = len(tasks) != 1 or task_file is not None or stop_on_failure
    if queue and allow_broad_workspace:
        raise click.UsageError("--allow-broad-workspace is for one session, not a queue")
    if queue and relay:
        raise click.UsageError("--relay serves one session, not a queue")
    if queue and files:
        raise click.UsageError("--file is for one session, not a queue")
    if workspace is not None:
        check_workspace(workspace.resolve(), allow_broad_workspace, BROAD_OVERRIDE)
    one_source(flags)
    place = starting.settle(root, workspace)  # in a project: the agent's folder for it
    root = place.root
    model = model_client(root, flags, workspace)
    settings = run_settings(root, flags, workspace)
    if model is None and not no_watch and settings.clipboard_watch and not relay:
        require_clipboard()
    store = SessionStore(root)
    folder = workspace.resolve() if workspace is not None else store.workspace
    if place.project is None:  # before any prompt is written, for a queue's too
        starting.empty_workspace_note(folder, root, tasks[0] if len(tasks) == 1 else "TASK")
    if queue:
        queued = queueing.task_list(tasks, task_file, settings.tasks)
        if model is not None and not no_watch:
            model.check()  # an endpoint that is down, or without the model: no queue is made
        queueing.start_queue(
            root, queued, workspace, stop_on_failure, flags, model, _source, watch=not no_watch
        )
        return
    named = named_files(folder, files, tasks[0])  # a name that matches nothing: no session
    settings = instructed_check(root, workspace, folder, flags, options)  # AGENTS.md
    window = None  # the model's window, asked of its server: the code map's budget follows it
    if model is not None and not no_watch:
        model.check()  # an endpoint that is down, or without the model: no session is made
        window = model.window().tokens
    state = new_session(
        store,
        settings,
        tasks[0],
        workspace,
        allow_broad=allow_broad_workspace,
        override=BROAD_OVERRIDE,
        files=named,
        window=window,
    )
    keep(store, state.session_id, options)
    starting.say_started(state.session_id, Path(state.workspace), place)
    if state.check is not None:
        say(f"Check: {state.check.result.headline}")
    _watch(
        session_loop(root, state.session_id, flags, model is not None, relay),
        watch=not no_watch,
        model=model,
        relay=relay,
    )


start.help = exits.appended(start.help, exits.queue_summary())


@main.command()
@session_argument
@root_option
@click.option(
    "--task",
    "follow_up",
    help="A follow-up instruction: reopens a completed session with it as the new prompt.",
)
@click.option("--no-watch", is_flag=True, help="Write the prompt and exit.")
@watch_options
def resume(
    session: str,
    root: Path,
    follow_up: str | None,
    no_watch: bool,
    files: tuple[str, ...],
    **flags: Any,
) -> None:
    """Continue watching for replies to SESSION (default: the latest), or let --model answer.

    A turn interrupted by a crash is first rolled back and applied again. When SESSION is the
    running task of a queue, the queue goes on after it. The options the session was started
    with hold unless a flag here says otherwise (docs/prompts.md).
    """
    from codingagent.frontends.kept import kept_flags
    from codingagent.records.store import SessionStore

    one_source(flags)
    relay = relaying.take_relay(flags)
    flags = kept_flags(root, session, flags, model=True)
    if relay:
        flags = relaying.without_other_sources(flags)
    named: list[str] = []
    if files or "@" in (follow_up or ""):
        store = SessionStore(root)
        state = store.load(store.resolve(session))
        named = named_files(Path(state.workspace), files, follow_up or "")
    model = model_client(root, flags)
    queue_id = None if follow_up is not None or named else queueing.queue_of(root, session)
    if queue_id is not None and relay:
        raise click.UsageError("--relay serves one session, not a queue's task")
    if queue_id is not None:  # the session is a queue's task: the queue goes on after it
        queueing.run_queue(root, queue_id, flags, model, _source, watch=not no_watch, reopen=True)
        return
    loop = session_loop(root, session, flags, model is not None, relay)
    _watch(loop, follow_up=follow_up, watch=not no_watch, model=model, files=named, relay=relay)


@main.command()
@click.argument(
    "words", nargs=-1, required=True, metavar="[SESSION] REPLY", shell_complete=complete_session
)
@root_option
@click.option(
    "--force",
    is_flag=True,
    help="Apply REPLY even if the same text was applied before (a repeated reply is skipped).",
)
@tuning_options
def step(words: tuple[str, ...], root: Path, force: bool, **flags: Any) -> None:
    """Apply one REPLY file (or - for stdin) to SESSION (default: the latest), write the next
    prompt, and exit."""
    from codingagent.faults import TurnNotApplied
    from codingagent.frontends.kept import kept_flags
    from codingagent.session.seams import Reply
    from codingagent.sources.inbox import InboxSource
    from codingagent.transaction.rollback import interrupted_turn

    if len(words) > 2:
        raise click.UsageError("Give at most a session and one reply file: step [SESSION] REPLY")
    session, reply = words if len(words) == 2 else ("latest", words[0])
    if reply != "-" and not Path(reply).is_file():
        raise click.BadParameter(f"{reply!r} is not a file", param_hint="'REPLY'")
    with session_loop(root, session, kept_flags(root, session, flags)) as loop:
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
            sys.exit(exits.Exit.INTERRUPTED)


@main.command()
@session_argument
@root_option
def paste(session: str, root: Path) -> None:
    """Save the LLM's reply from the clipboard (or piped stdin) into inbox/ for SESSION
    (default: the latest).

    A watcher (`start` or `resume`) applies it at once; otherwise the next one does.
    """
    from codingagent.records.store import SessionStore
    from codingagent.sources.clipboard import copied_reply as read_clipboard
    from codingagent.sources.inbox import save_reply
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
    from codingagent.frontends.kept import kept_flags

    session, text = words if len(words) == 2 else ("latest", words[0])
    with session_loop(root, session, kept_flags(root, session, {})) as loop:
        loop.answer(text)


@main.command(name="undo")
@session_argument
@root_option
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many of the last turns to undo.",
)
@click.option("--force", is_flag=True, help="Undo even over files changed since by hand.")
def undo_command(session: str, root: Path, turns: int, force: bool) -> None:
    """Restore the files of the last turns of SESSION (default: the latest) exactly and
    rewind it."""
    from codingagent.frontends.kept import kept_flags

    with session_loop(root, session, kept_flags(root, session, {})) as loop:
        loop.undo(turns, force)


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
@relaying.relay_options
@tuning_options
def ui(session: str, root: Path, port: int, no_open: bool, **flags: Any) -> None:
    """Serve a local web page for SESSION (default: the latest): copy the prompt, paste the
    reply, see each turn's results and diffs, undo. Its address carries a secret token. With
    --relay, the browser extension's relay for SESSION runs beside it."""
    from codingagent.frontends import starting
    from codingagent.frontends.kept import kept_flags
    from codingagent.frontends.page.server import run
    from codingagent.records.store import SessionStore

    relay = relaying.take_relay(flags)
    root = starting.settle(root, None).root  # in a project, the page starts sessions on it
    if SessionStore(root).ids():  # the page of a new run directory starts its own sessions
        flags = kept_flags(root, session, flags)
    try:
        run(root, session, port, not no_open, flags, relay)
    except KeyboardInterrupt:  # the way to stop it
        sys.exit(exits.Exit.INTERRUPTED)


@main.command()
@click.argument("session", required=False, shell_complete=complete_session)
@root_option
@click.option("--offline", is_flag=True, help="Do not ask the model profiles' endpoints.")
def doctor(session: str | None, root: Path, offline: bool) -> None:
    """Say what works on this machine: sandbox, file events, clipboard, settings, versions,
    free space, each model profile (its key variable, whether its endpoint answers); with
    SESSION, check that every file of that session can be read back.

    Exits 1 when a session file is damaged or unreadable (each one is named).
    """
    from codingagent.frontends.doctor import report, show_rows

    rows, damaged = report(root, session, interactive=sys.stdin.isatty(), offline=offline)
    show_rows(rows)
    if damaged:
        error(f"{len(damaged)} damaged or unreadable file(s) listed above")
        sys.exit(exits.Exit.PROBLEM)


# --- watching --------------------------------------------------------------------------


for _command in (
    inspection.log,
    inspection.sessions,
    inspection.show,
    inspection.diff_command,
    queueing.queue_command,
    reviews.review,
):
    main.add_command(_command)


def _watch(
    loop: SessionLoop,
    follow_up: str | None = None,
    watch: bool = True,
    model: ChatClient | None = None,
    files: list[str] | None = None,
    relay: bool = False,
) -> None:
    """Prepare the session; then, with ``watch``, apply the replies saved into inbox/ (and with
    ``clipboard_watch``, copied), or the answers of ``model``, until the session stops (exit 130
    after Ctrl-C)."""
    from codingagent.faults import TurnNotApplied
    from codingagent.session.seams import SourceError, StopReason

    with loop:
        if not watch:
            loop.prepare(follow_up, files or ())
            return
        opened = relaying.relay_source(loop) if relay else _source(loop, model)
        with opened as source:
            try:
                stop = loop.run(source, follow_up, files or ())
            except SourceError as failed:  # the endpoint failed mid-run: its own exit code
                error(str(failed))  # (a window too small for the prompt: a problem to fix, 1)
                fix_first = getattr(failed, "fix_first", False)
                sys.exit(exits.Exit.PROBLEM if fix_first else exits.Exit.ENDPOINT_FAILED)
            except TurnNotApplied as fault:  # the watcher stops: the user must act first
                if (loop.store.inbox / fault.source).is_file():
                    fault.retry = (
                        f"run 'codingagent resume {loop.session_id}': the reply waits in "
                        f"{loop.store.inbox}"
                    )
                raise
    if stop.reason is StopReason.INTERRUPTED:
        sys.exit(exits.Exit.INTERRUPTED)
    if model is not None and stop.reason is not StopReason.COMPLETE:
        sys.exit(exits.MODEL_STOP[stop.reason.value])


def _source(loop: SessionLoop, model: ChatClient | None) -> AbstractContextManager[ReplySource]:
    """The inbox watcher (with the clipboard's, for the clipboard loop), or the model endpoint
    when one is given."""
    settings = loop.settings
    if model is None:
        from codingagent.sources.clipboard import ClipboardSource
        from codingagent.sources.inbox import InboxSource

        inbox = InboxSource(loop.store.inbox, settings.max_reply_bytes, poll=settings.poll)
        if not settings.clipboard_watch:
            return inbox
        from codingagent.frontends.approval import confirm_on_terminal

        confirm = confirm_on_terminal if _stdin_is_terminal() else None
        return ClipboardSource(inbox, confirm=confirm, note=loop.listener.note)
    from codingagent.protocol.manual import protocol_text
    from codingagent.sources.endpoint import EndpointSource

    return EndpointSource(
        model,
        loop.store,
        loop.listener,
        protocol_text(settings.command_timeout, settings.max_output),
        history_turns=settings.model_history_turns,
        history_chars=settings.model_history_chars,
    )


main.add_command(relaying.relay)
main.add_command(accounts.login)
main.add_command(accounts.logout)
