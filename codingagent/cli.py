"""The command line: click commands and the console. Nothing else lives here.

Console output goes to stderr; stdout carries only data (``show`` prints the outbox,
``sessions`` prints the table), so both can be piped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import __version__
from .commands import CommandResult, plural
from .render import estimate_tokens
from .session import SessionError, SessionState, SessionStore, age
from .shell import Shell
from .turn import (
    REPLY_SIZE_CAP,
    TurnReport,
    apply_reply,
    apply_reply_file,
    ensure_outbox,
    recover,
    start_session,
    undo,
)

console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
STYLE = {True: "green", False: "red"}


class _Group(click.Group):
    """Turns user errors into one red line and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except SessionError as e:
            console.print(Text("error: ", style="bold red") + Text(str(e)))
            ctx.exit(1)


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    envvar="CODINGAGENT_ROOT",
    help="Run directory holding workspace/, outbox/, inbox/ and sessions/.",
)
poll_option = click.option(
    "--poll", is_flag=True, help="Poll inbox/ instead of using OS events (network drives, WSL)."
)
max_reply_option = click.option(
    "--max-reply-bytes",
    type=click.IntRange(min=1),
    default=REPLY_SIZE_CAP,
    show_default=True,
    envvar="CODINGAGENT_MAX_REPLY_BYTES",
    help="Replies larger than this are not run; the LLM is told so.",
)
session_argument = click.argument("session", default="latest", required=False)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codingagent")
def main() -> None:
    """Drive a coding agent with any chat LLM, by copy-paste.

    `start` writes a prompt into outbox/; paste it into your chat LLM and save the reply as a
    .txt file in inbox/; the agent applies it and writes the next prompt.
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
@max_reply_option
def start(
    task: str, workspace: Path | None, root: Path, no_watch: bool, poll: bool, max_reply_bytes: int
) -> None:
    """Start a session for TASK and watch inbox/ for the LLM's replies."""
    store = SessionStore(root)
    state, outbox = start_session(store, task, workspace)
    console.print(
        Text.assemble(
            ("Session ", ""), (state.session_id, "bold"), f" started on {state.workspace}"
        )
    )
    if no_watch:
        _print_outbox(outbox)
    else:
        _watch(store, state, poll, max_reply_bytes)


@main.command()
@session_argument
@root_option
@poll_option
@max_reply_option
def resume(session: str, root: Path, poll: bool, max_reply_bytes: int) -> None:
    """Continue watching for replies to SESSION (default: the latest).

    A turn interrupted by a crash is first rolled back and applied again.
    """
    store = SessionStore(root)
    state = store.load(store.resolve(session))
    _watch(store, state, poll, max_reply_bytes)


@main.command()
@click.argument("session")
@click.argument("reply", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@root_option
@click.option("--force", is_flag=True, help="Apply the reply even if it was applied before.")
@max_reply_option
def step(session: str, reply: str, root: Path, force: bool, max_reply_bytes: int) -> None:
    """Apply one REPLY file (or - for stdin) to SESSION, write the next prompt, and exit."""
    store = SessionStore(root)
    session_id = store.resolve(session)
    options = {"shell": Shell(), "on_result": _print_result, "max_reply_bytes": max_reply_bytes}
    with _holding(store, session_id):
        recovered = recover(store, session_id, **options)
        if recovered is not None:
            _print_turn(recovered)
        if reply == "-":
            data = sys.stdin.buffer.read()
            report = apply_reply(store, session_id, data, source="<stdin>", force=force, **options)
        else:
            report = apply_reply_file(store, session_id, Path(reply), force=force, **options)
    _print_turn(report)


@main.command(name="undo")
@session_argument
@root_option
@click.option("--turns", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--force", is_flag=True, help="Undo even over files changed since by hand.")
def undo_command(session: str, root: Path, turns: int, force: bool) -> None:
    """Restore the files of the last turns of SESSION exactly and rewind it."""
    store = SessionStore(root)
    session_id = store.resolve(session)
    with _holding(store, session_id):
        report = undo(store, session_id, turns, force)
    numbers = ", ".join(map(str, report.turns))
    files = ", ".join(report.restored) or "no files"
    console.print(f"Undid turn {numbers} of session {session_id}: restored {files}")
    _print_outbox(report.outbox)


@main.command()
@session_argument
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the log as JSON.")
def log(session: str, root: Path, as_json: bool) -> None:
    """Show each turn of SESSION: when, which reply, each command's result and duration."""
    store = SessionStore(root)
    session_id = store.resolve(session)
    entries = store.log(session_id)
    if as_json:
        click.echo(json.dumps(entries, indent=2, ensure_ascii=False))
        return
    out = Console(soft_wrap=True, highlight=False, markup=False)
    if not entries:
        out.print(f"Session {session_id} has no turns yet")
    for entry in entries:
        out.print(
            Text(
                f"Turn {entry['sequence']}  {entry['appliedAt']}  {entry['replyFile']}  "
                f"{entry['durationMs']:.0f} ms",
                style="bold",
            )
        )
        for result in map(CommandResult.model_validate, entry["results"]):
            out.print(
                Text(f"  {result.headline}", style=STYLE[result.success])
                + Text(f"  ({result.duration_ms:.0f} ms)", style="dim")
            )


@main.command()
@root_option
def sessions(root: Path) -> None:
    """List the sessions, most recent first."""
    store = SessionStore(root)
    ids = store.ids()
    if not ids:
        console.print(f"No sessions in {store.sessions}")
        return
    table = Table("id", "task", "turn", "state", "updated")
    for session_id in ids:
        state = store.load(session_id)
        table.add_row(
            session_id,
            Text(_shorten(state.task, 50)),
            str(state.sequence_number),
            "done" if state.is_complete else "open",
            age(state.updated_at),
        )
    Console(soft_wrap=True, markup=False).print(table)


@main.command()
@session_argument
@root_option
def show(session: str, root: Path) -> None:
    """Print the current prompt of SESSION (default: the latest) to stdout."""
    store = SessionStore(root)
    state = store.load(store.resolve(session))
    if state.is_complete:
        console.print(Text(f"Session {state.session_id} is complete: {state.summary or ''}"))
        return
    click.echo(ensure_outbox(store, state).read_text(encoding="utf-8"), nl=False)


# --- watching --------------------------------------------------------------------------


@contextmanager
def _holding(store: SessionStore, session_id: str) -> Iterator[None]:
    lock = store.hold(session_id)
    try:
        yield
    finally:
        lock.release()


def _watch(store: SessionStore, state: SessionState, poll: bool, max_reply_bytes: int) -> None:
    from .watcher import session_watcher  # watchdog is slow to import; only watching needs it

    session_id = state.session_id
    options = {"shell": Shell(), "on_result": _print_result, "max_reply_bytes": max_reply_bytes}
    with _holding(store, session_id):
        recovered = recover(store, session_id, **options)
        if recovered is not None:
            _print_turn(recovered)
        state = store.load(session_id)
        if state.is_complete:
            if recovered is not None:
                return
            raise SessionError(f"Session {session_id} is complete: {state.summary or ''}".strip())
        _print_outbox(ensure_outbox(store, state))
        watcher = session_watcher(
            store, session_id, poll=poll, on_reply=_print_reply, on_turn=_print_turn, **options
        )
        console.print(
            f"Watching {store.inbox} ({watcher.backend}): save the LLM's reply there as a .txt "
            "file. Ctrl-C stops."
        )
        try:
            watcher.run()
        except KeyboardInterrupt:
            console.print(f"Stopped. Continue later with: codingagent resume {session_id}")
            sys.exit(130)


# --- console output --------------------------------------------------------------------


def _print_reply(path: Path) -> None:
    console.print(Text(f"Reply {path.name} received", style="bold"))


def _print_result(result: CommandResult) -> None:
    console.print(Text(result.headline, style=STYLE[result.success]))


def _print_turn(report: TurnReport) -> None:
    for note in report.notes:
        console.print(Text(note, style="yellow"))
    if report.skipped:
        return
    outcome = report.outcome
    for message in outcome.messages:
        console.print(Text("Message from the LLM: ", style="bold cyan") + Text(message))
    failed = sum(not r.success for r in outcome.results)
    console.print(
        f"Turn {report.state.sequence_number - 1}: {plural(len(outcome.results), 'command')}, "
        f"{plural(len(outcome.changed), 'file')} changed, {failed} failed"
    )
    if report.outbox is None:
        console.print(
            Text("Session complete: ", style="bold green") + Text(report.state.summary or "")
        )
    else:
        _print_outbox(report.outbox)


def _print_outbox(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    console.print(
        f"Next prompt: {path} ({len(text):,} characters, ~{estimate_tokens(text):,} tokens). "
        "Paste it into your chat LLM."
    )


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
