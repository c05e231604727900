"""The command line: click commands and the console. Nothing else lives here.

Console output goes to stderr; stdout carries only data (``show`` prints the outbox,
``sessions`` and ``log`` print tables or JSON), so both can be piped.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.shell_completion import CompletionItem
from rich.console import Console
from rich.text import Text

from . import __version__

# The agent's own modules load pydantic, filelock and watchdog: each command imports what it
# uses, so `codingagent --help` starts in a fraction of the time.
if TYPE_CHECKING:
    from .commands import CommandResult
    from .session import SessionState, SessionStore
    from .settings import Settings
    from .shell import Shell
    from .turn import TurnReport

console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
STYLE = {True: "green", False: "red"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _text(text: str, style: str = "") -> Text:
    """Console text. Replies and file names may hold terminal escapes (clear the screen, write
    the clipboard with OSC 52): they are shown as ``\\x1b``, never obeyed."""
    return Text(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text), style=style)


class _Group(click.Group):
    """Turns user errors into one red line and exit code 1."""

    def invoke(self, ctx: click.Context) -> object:
        from .session import SessionError
        from .settings import SettingsError

        try:
            return super().invoke(ctx)
        except (SessionError, SettingsError) as e:
            console.print(_text("error: ", style="bold red") + _text(str(e)))
            ctx.exit(1)


# --- options -----------------------------------------------------------------------------


def _complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion: the session ids of the run directory, with their tasks."""
    from .session import SessionError, SessionStore

    root = ctx.params.get("root") or os.environ.get("CODINGAGENT_ROOT", ".")
    store = SessionStore(Path(root))
    try:
        states = [store.load(session_id) for session_id in store.ids()]
    except SessionError:
        return []
    return [
        CompletionItem(s.session_id, help=_shorten(s.task, 40))
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
            type=click.Choice(["auto", "bwrap", "none"]),
            help="RUN_COMMAND inside bubblewrap (auto: when it works here).",
        ),
        click.option(
            "--commands",
            type=click.Choice(["allow", "ask", "deny"]),
            help="RUN_COMMAND approval (default: ask without a sandbox on a terminal).",
        ),
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


poll_option = click.option(
    "--poll/--no-poll",
    default=None,
    help="Poll inbox/ instead of using OS file events (network drives, WSL, containers).",
)


@dataclass
class _Run:
    """A run directory with its settings: what every command that applies replies needs."""

    store: SessionStore
    settings: Settings
    clipboard_note_shown: bool = False

    @classmethod
    def open(cls, root: Path, **flags: Any) -> _Run:
        from .session import SessionStore
        from .settings import load_settings

        return cls(SessionStore(root), load_settings(Path(root), flags))

    def turn_options(self) -> dict[str, Any]:
        """Keyword arguments for ``apply_reply``/``recover``; says which sandbox is active."""
        from .settings import SettingsError
        from .shell import Limits, SandboxUnavailable, Shell, default_approval

        settings = self.settings
        try:
            shell = Shell(
                timeout=settings.command_timeout,
                max_output=settings.max_output,
                sandbox=settings.sandbox,
                limits=Limits.of(settings),
                read_only=self.store.agent_dirs,
            )
        except SandboxUnavailable as e:
            raise SettingsError(f"sandbox = 'bwrap' was asked for, but {e}") from None
        policy = settings.commands or default_approval(shell.sandbox_layer, sys.stdin.isatty())
        if policy == "deny":
            shell.approve = lambda command: False
        console.print(
            _text(f"RUN_COMMAND: {shell.sandbox_reason}; approval: {policy}", style="dim")
        )
        return {
            "shell": _ConsoleShell(shell, ask=policy == "ask"),
            "on_result": _print_result,
            "max_reply_bytes": settings.max_reply_bytes,
            "token_budget": settings.token_budget,
        }

    def check_turn_limit(self, state: SessionState) -> None:
        from .session import SessionError

        limit = self.settings.max_turns
        if limit is not None and state.sequence_number > limit:
            raise SessionError(
                f"Session {state.session_id} reached max_turns ({limit}); raise it "
                "(--max-turns, CODINGAGENT_MAX_TURNS or codingagent.toml) to go on"
            )

    def announce(self, path: Path) -> None:
        """Say where the next prompt is, how big it is, and copy it to the clipboard."""
        from .render import estimate_tokens

        text = path.read_text(encoding="utf-8")
        tokens = estimate_tokens(text)
        console.print(
            _text(
                f"Next prompt: {path} ({len(text):,} characters, ~{tokens:,} tokens). "
                "Paste it into your chat LLM."
            )
        )
        if tokens > self.settings.token_budget:
            console.print(
                _text(
                    f"warning: the prompt is over the token budget ({tokens:,} > "
                    f"{self.settings.token_budget:,}); some chat UIs will cut it",
                    style="yellow",
                )
            )
        if self.settings.clipboard:
            problem = copy_to_clipboard(text)
            if problem is None:
                console.print("Copied to the clipboard.")
            elif not self.clipboard_note_shown:
                self.clipboard_note_shown = True
                console.print(_text(f"note: prompt not copied: {problem}", style="dim"))


class _ConsoleShell:
    """The Shell, with a spinner on the console while a command runs, and the user's y/n
    before each command when approval is ``ask``."""

    def __init__(self, shell: Shell, ask: bool) -> None:
        self._shell = shell
        self._status: Any = None
        if ask:
            shell.approve = self._confirm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shell, name)

    def run(self, command: str, cwd: Path) -> Any:
        first = (command.strip().splitlines() or [""])[0]
        with console.status(_text(f"Running {_shorten(first, 60)}")) as status:
            self._status = status
            return self._shell.run(command, cwd)

    def _confirm(self, command: str) -> bool:
        self._status.stop()
        console.print(_text("The LLM wants to run:", style="bold yellow"))
        console.print(_text(command))
        try:
            answer = click.confirm("Run it?", default=False, err=True)
        except click.Abort:  # no answer (end of input): not approved
            answer = False
        self._status.start()
        return answer


def _clipboard(use: Callable[[Any], Any]) -> tuple[Any, str | None]:
    """``use(pyperclip)``'s result and None, or None and why there is no usable clipboard.

    A missing clipboard is never an error: callers say so in one line.
    """
    try:
        import pyperclip
    except ImportError:
        return None, "pyperclip is not installed"
    try:
        return use(pyperclip), None
    except pyperclip.PyperclipException:
        return None, _NO_CLIPBOARD


def copy_to_clipboard(text: str) -> str | None:
    """Copy ``text``; the reason it could not, or None."""
    return _clipboard(lambda pyperclip: pyperclip.copy(text))[1]


def _stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def paste_from_clipboard() -> str:
    from .session import SessionError

    text, problem = _clipboard(lambda pyperclip: pyperclip.paste())
    if problem is not None:
        raise SessionError(
            f"No clipboard here ({problem}); pipe the reply: codingagent paste < reply.txt"
        )
    return text


_NO_CLIPBOARD = "no clipboard tool found; on Linux install xclip, xsel or wl-clipboard"


# --- commands ----------------------------------------------------------------------------


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codingagent")
def main() -> None:
    """Drive a coding agent with any chat LLM, by copy-paste.

    `start` writes a prompt into outbox/; paste it into your chat LLM and save the reply as a
    .txt file in inbox/ (or run `codingagent paste`); the agent applies it and writes the next
    prompt.

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
@tuning_options
def start(task: str, workspace: Path | None, root: Path, no_watch: bool, **flags: Any) -> None:
    """Start a session for TASK and watch inbox/ for the LLM's replies."""
    from .turn import start_session

    run = _Run.open(root, **flags)
    state, outbox = start_session(run.store, task, workspace)
    console.print(
        _text("Session ")
        + _text(state.session_id, "bold")
        + _text(f" started on {state.workspace}")
    )
    if no_watch:
        run.announce(outbox)
    else:
        _watch(run, state.session_id)


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
@tuning_options
def resume(session: str, root: Path, follow_up: str | None, no_watch: bool, **flags: Any) -> None:
    """Continue watching for replies to SESSION (default: the latest).

    A turn interrupted by a crash is first rolled back and applied again.
    """
    run = _Run.open(root, **flags)
    _watch(run, run.store.resolve(session), follow_up=follow_up, watch=not no_watch)


@main.command()
@click.argument("session", shell_complete=_complete_session)
@click.argument("reply", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@root_option
@click.option("--force", is_flag=True, help="Apply the reply even if it was applied before.")
@tuning_options
def step(session: str, reply: str, root: Path, force: bool, **flags: Any) -> None:
    """Apply one REPLY file (or - for stdin) to SESSION, write the next prompt, and exit."""
    from .turn import apply_reply, apply_reply_file, recover

    run = _Run.open(root, **flags)
    store = run.store
    session_id = store.resolve(session)
    options = run.turn_options()
    with _holding(store, session_id):
        recovered = recover(store, session_id, **options)
        if recovered is not None:
            _print_turn(run, recovered)
        run.check_turn_limit(store.load(session_id))
        if reply == "-":
            data = sys.stdin.buffer.read()
            report = apply_reply(store, session_id, data, source="<stdin>", force=force, **options)
        else:
            report = apply_reply_file(store, session_id, Path(reply), force=force, **options)
    _print_turn(run, report)


@main.command()
@session_argument
@root_option
def paste(session: str, root: Path) -> None:
    """Save the LLM's reply from the clipboard (or piped stdin) into inbox/.

    A watcher (`start` or `resume`) applies it at once; otherwise the next one does.
    """
    from .fsio import atomic_write
    from .session import SessionError, SessionStore, utc_now

    store = SessionStore(root)
    session_id = store.resolve(session)
    text = paste_from_clipboard() if _stdin_is_terminal() else sys.stdin.read()
    if not text.strip():
        raise SessionError("Nothing to paste: the clipboard (or stdin) is empty")
    if text.lstrip().startswith("=== HEADER ==="):
        raise SessionError(
            "That is the prompt, not the LLM's reply: copy the reply from the chat, then paste"
        )
    store.inbox.mkdir(parents=True, exist_ok=True)
    base = f"{session_id}_reply_{utc_now():%Y%m%dT%H%M%S}"
    path, n = store.inbox / f"{base}.txt", 1
    while path.exists():
        n += 1
        path = store.inbox / f"{base}-{n}.txt"
    atomic_write(path, text)
    console.print(_text(f"Saved the reply ({len(text):,} characters) as {path}"))


@main.command(name="undo")
@session_argument
@root_option
@click.option("--turns", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--force", is_flag=True, help="Undo even over files changed since by hand.")
def undo_command(session: str, root: Path, turns: int, force: bool) -> None:
    """Restore the files of the last turns of SESSION exactly and rewind it."""
    from .turn import undo

    run = _Run.open(root)
    session_id = run.store.resolve(session)
    with _holding(run.store, session_id):
        report = undo(run.store, session_id, turns, force)
    numbers = ", ".join(map(str, report.turns))
    files = ", ".join(report.restored) or "no files"
    console.print(_text(f"Undid turn {numbers} of session {session_id}: restored {files}"))
    run.announce(report.outbox)


@main.command()
@session_argument
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the log as JSON.")
def log(session: str, root: Path, as_json: bool) -> None:
    """Show each turn of SESSION: when, which reply, each command's result and duration."""
    from .commands import CommandResult
    from .session import SessionStore

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
            _text(
                f"Turn {entry['sequence']}  {entry['appliedAt']}  {entry['replyFile']}  "
                f"{entry['durationMs']:.0f} ms",
                style="bold",
            )
        )
        for result in map(CommandResult.model_validate, entry["results"]):
            out.print(
                _text(f"  {result.headline}", style=STYLE[result.success])
                + _text(f"  ({result.duration_ms:.0f} ms)", style="dim")
            )


@main.command()
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
def sessions(root: Path, as_json: bool) -> None:
    """List the sessions, most recent first."""
    from rich.table import Table

    from .session import SessionStore, age

    store = SessionStore(root)
    states = [store.load(session_id) for session_id in store.ids()]
    if as_json:
        click.echo(json.dumps([json.loads(s.to_json()) for s in states], indent=2))
        return
    if not states:
        console.print(_text(f"No sessions in {store.sessions}"))
        return
    table = Table("id", "task", "turn", "state", "age")
    for state in states:
        table.add_row(
            state.session_id,
            _text(_shorten(state.task, 50)),
            str(state.sequence_number),
            "done" if state.is_complete else "open",
            age(state.updated_at),
        )
    Console(soft_wrap=True, markup=False).print(table)


@main.command()
@session_argument
@root_option
@click.option("--copy", is_flag=True, help="Also copy the prompt to the clipboard.")
def show(session: str, root: Path, copy: bool) -> None:
    """Print the current prompt of SESSION (default: the latest) to stdout."""
    from .session import SessionStore
    from .turn import ensure_outbox

    store = SessionStore(root)
    state = store.load(store.resolve(session))
    if state.is_complete:
        console.print(_text(f"Session {state.session_id} is complete: {state.summary or ''}"))
        return
    text = ensure_outbox(store, state).read_text(encoding="utf-8")
    click.echo(text, nl=False)
    if copy:
        problem = copy_to_clipboard(text)
        console.print(
            _text("Copied to the clipboard." if problem is None else f"Not copied: {problem}")
        )


@main.command()
@root_option
def doctor(root: Path) -> None:
    """Say what works on this machine: sandbox, file events, clipboard, settings, versions."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from .settings import load_settings
    from .shell import default_approval, protections, sandbox_status
    from .watcher import backend_name

    settings = load_settings(root)
    layer, reason = sandbox_status(settings.sandbox)
    tty = sys.stdin.isatty()
    approval = settings.commands or default_approval(layer, tty)
    clipboard = _clipboard(lambda pyperclip: pyperclip.paste())[1]  # reads, never changes it
    rows = [
        (
            "codingagent",
            f"{__version__} on Python {platform.python_version()}, {platform.platform()}",
        ),
        ("RUN_COMMAND sandbox", f"{layer}: {reason} (setting sandbox = {settings.sandbox!r})"),
        ("RUN_COMMAND approval", f"{approval} (setting commands = {settings.commands!r})"),
        ("inbox watcher", f"{backend_name(settings.poll)} (poll = {settings.poll})"),
        ("clipboard", clipboard or "available"),
        *protections(settings),
    ]
    rows += [(key, repr(value)) for key, value in settings.model_dump().items()]
    for package in ("click", "pydantic", "watchdog", "rich", "pathspec", "filelock", "pyperclip"):
        try:
            rows.append((package, version(package)))
        except PackageNotFoundError:
            rows.append((package, "not installed"))
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")


# --- watching --------------------------------------------------------------------------


@contextmanager
def _holding(store: SessionStore, session_id: str) -> Iterator[None]:
    lock = store.hold(session_id)
    try:
        yield
    finally:
        lock.release()


def _watch(run: _Run, session_id: str, follow_up: str | None = None, watch: bool = True) -> None:
    from .session import SessionError
    from .turn import ensure_outbox, follow_up_session, recover
    from .watcher import session_watcher

    store = run.store
    options = run.turn_options()

    def on_turn(report: TurnReport) -> bool:
        _print_turn(run, report)
        try:
            run.check_turn_limit(report.state)
        except SessionError as e:
            console.print(_text(str(e), style="yellow"))
            return True
        return False

    with _holding(store, session_id):
        recovered = recover(store, session_id, **options)
        if recovered is not None:
            _print_turn(run, recovered)
        if follow_up is not None:
            follow_up_session(store, session_id, follow_up)
        state = store.load(session_id)
        if state.is_complete:
            if recovered is not None:
                return
            raise SessionError(
                f"Session {session_id} is complete: {state.summary or ''} (give it a follow-up "
                'with: codingagent resume --task "...")'
            )
        run.check_turn_limit(state)
        run.announce(ensure_outbox(store, state))
        if not watch:
            return
        watcher = session_watcher(
            store,
            session_id,
            poll=run.settings.poll,
            on_reply=_print_reply,
            on_turn=on_turn,
            **options,
        )
        console.print(
            _text(
                f"Watching {store.inbox} ({watcher.backend}): save the LLM's reply there as a "
                ".txt file. Ctrl-C stops."
            )
        )
        try:
            watcher.run()
        except KeyboardInterrupt:
            console.print(_text(f"Stopped. Continue later with: codingagent resume {session_id}"))
            sys.exit(130)


# --- console output --------------------------------------------------------------------


def _print_reply(path: Path) -> None:
    console.print(_text(f"Reply {path.name} received", style="bold"))


def _print_result(result: CommandResult) -> None:
    console.print(_text(result.headline, style=STYLE[result.success]))


def _print_turn(run: _Run, report: TurnReport) -> None:
    from .commands import plural

    for note in report.notes:
        console.print(_text(note, style="yellow"))
    if report.skipped:
        return
    outcome = report.outcome
    for message in outcome.messages:
        console.print(_text("Message from the LLM: ", style="bold cyan") + _text(message))
    failed = sum(not r.success for r in outcome.results)
    ran = sum(r.command == "RUN_COMMAND" for r in outcome.results)
    console.print(
        _text(
            f"Turn {report.state.sequence_number - 1}: {plural(len(outcome.results), 'command')} "
            f"({ran} run), {plural(len(outcome.changed), 'file')} changed, {failed} failed"
        )
    )
    if report.outbox is None:
        console.print(
            _text("Session complete: ", style="bold green") + _text(report.state.summary or "")
        )
    else:
        run.announce(report.outbox)


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
