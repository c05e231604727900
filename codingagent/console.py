"""The terminal front end: the rich console on stderr, and the session loop's listener for it.

stdout carries only data (``show`` prints the prompt, ``sessions`` and ``log`` tables or JSON),
so both can be piped. Text from replies and file names is shown, never obeyed: terminal escapes
in it (clear the screen, write the clipboard with OSC 52) are printed as ``\\x1b``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from .app import Prompt, Reply, ReplySource, Stop
    from .commands import CommandResult
    from .journal import UndoReport
    from .turn import TurnReport

console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
STYLE = {True: "green", False: "red"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe_text(text: str, style: str = "") -> Text:
    """Console text with control characters shown as ``\\xNN`` instead of obeyed."""
    return Text(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text), style=style)


def say(text: str, style: str = "") -> None:
    console.print(safe_text(text, style))


def error(message: str) -> None:
    console.print(safe_text("error: ", style="bold red") + safe_text(message))


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_result(result: CommandResult) -> None:
    say(result.headline, STYLE[result.success])


class ConsoleListener:
    """Shows a session loop on the terminal: one line per result, a summary per turn, where
    the next prompt is, and a spinner while a command runs. ``ask`` answers approval."""

    def __init__(self, ask: Callable[[str], bool]) -> None:
        self._ask = ask
        self._status: Any = None
        self._copy_note_shown = False

    def note(self, text: str) -> None:
        say(text, "dim")

    def reply_received(self, reply: Reply) -> None:
        say(f"Reply {reply.source} received", "bold")

    @contextmanager
    def running(self, command: str) -> Iterator[None]:
        first = (command.strip().splitlines() or [""])[0]
        with console.status(safe_text(f"Running {shorten(first, 60)}")) as status:
            self._status = status
            try:
                yield
            finally:
                self._status = None

    def approve(self, command: str) -> bool:
        if self._status is not None:
            self._status.stop()
        try:
            return self._ask(command)
        finally:
            if self._status is not None:
                self._status.start()

    def result(self, result: CommandResult) -> None:
        print_result(result)

    def turn_applied(self, report: TurnReport) -> None:
        from .commands import plural

        for note in report.notes:
            say(note, "yellow")
        if report.skipped:
            return
        outcome = report.outcome
        for message in outcome.messages:
            console.print(safe_text("Message from the LLM: ", "bold cyan") + safe_text(message))
        failed = sum(not r.success for r in outcome.results)
        ran = sum(r.command == "RUN_COMMAND" for r in outcome.results)
        say(
            f"Turn {report.state.sequence_number - 1}: "
            f"{plural(len(outcome.results), 'command')} ({ran} run), "
            f"{plural(len(outcome.changed), 'file')} changed, {failed} failed"
        )
        if report.state.is_complete:
            console.print(
                safe_text("Session complete: ", "bold green")
                + safe_text(report.state.summary or "")
            )

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        say(
            f"Next prompt: {prompt.path} ({len(prompt.text):,} characters, "
            f"~{prompt.tokens:,} tokens). Paste it into your chat LLM."
        )
        if prompt.tokens > token_budget:
            say(
                f"warning: the prompt is over the token budget ({prompt.tokens:,} > "
                f"{token_budget:,}); some chat UIs will cut it",
                "yellow",
            )
        if copy_problem is None:
            say("Copied to the clipboard.")
        elif copy_problem and not self._copy_note_shown:
            self._copy_note_shown = True
            say(f"note: prompt not copied: {copy_problem}", "dim")

    def undone(self, report: UndoReport) -> None:
        numbers = ", ".join(map(str, report.turns))
        files = ", ".join(report.restored) or "no files"
        say(f"Undid turn {numbers} of session {report.state.session_id}: restored {files}")
        for problem in report.problems:
            say(f"Could not restore {problem}", "yellow")

    def watching(self, source: ReplySource) -> None:
        say(f"{source.description}. Ctrl-C stops.")

    def stopped(self, stop: Stop) -> None:
        from .app import StopReason

        if stop.message:
            say(stop.message, "yellow" if stop.reason is StopReason.TURN_LIMIT else "")
