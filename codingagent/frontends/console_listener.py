"""The session loop's listener for the terminal: :class:`ConsoleListener` prints what the loop
does on the console (:mod:`.console`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from codingagent.frontends.console import STYLE, console, safe_text, say, shorten
from codingagent.session.seams import Listener

if TYPE_CHECKING:
    from codingagent.review.decision import Choice
    from codingagent.review.record import HeldReview
    from codingagent.session.seams import Prompt, Reply, ReplySource, Stop, TurnReport
    from codingagent.state import CommandResult
    from codingagent.transaction.undo import UndoReport


NO_COMMAND = (
    "No command found in the reply; the next prompt asks the LLM to write commands. If that "
    "was the wrong text, 'codingagent undo' takes it back"
)


def print_result(result: CommandResult) -> None:
    say(result.headline, STYLE[result.success])


class ConsoleListener(Listener):
    """Shows a session loop on the terminal: one line per result, a summary per turn, where
    the next prompt is, a spinner while a command runs, and a live line while a model
    answers. ``ask`` answers approval; ``answer``, if given, asks the user the LLM's question
    (ASK) on the terminal; ``pasting``: the user carries each prompt to a chat (not so when a
    model endpoint answers)."""

    def __init__(
        self,
        ask: Callable[[str], bool],
        answer: Callable[[str], str | None] | None = None,
        pasting: bool = True,
        clipboard_loop: bool = False,
        review: Callable[[HeldReview], Choice | None] | None = None,
    ) -> None:
        """``clipboard_loop``: replies come from the clipboard, so a prompt copied there is all
        the user needs to hear of it. ``review``: puts a reply's held file changes to the
        user on the terminal (docs/review.md)."""
        self._ask = ask
        self._answer = answer
        self._review = review
        self._pasting = pasting
        self._clipboard_loop = clipboard_loop
        self._status: Any = None
        self._live: Any = None
        self._copy_note_shown = False

    def note(self, text: str) -> None:
        say(text, "dim")

    def progress(self, text: str | None) -> None:
        if text is None:
            if self._live is not None:
                self._live.stop()
                self._live = None
        elif self._live is None:
            self._live = console.status(safe_text(text))
            self._live.start()
        else:
            self._live.update(safe_text(text))

    def reply_received(self, reply: Reply) -> None:
        from codingagent.protocol.reasoning import split_reasoning

        say(f"Reply {reply.source} received", "bold")
        thought = split_reasoning(reply.data.decode("utf-8", "replace")).thinking
        if thought:  # in the text, in any model's dress (what an API sent apart: its own note)
            say(
                f"thought for {len(thought):,} characters (never run; log --thinking shows it)",
                "dim",
            )

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

    def answer_question(self, question: str) -> str | None:
        return self._answer(question) if self._answer is not None else None

    def review(self, held: HeldReview) -> Choice | None:
        return self._review(held) if self._review is not None else None

    def result(self, result: CommandResult) -> None:
        print_result(result)

    def turn_applied(self, report: TurnReport) -> None:
        from codingagent.protocol.commands import plural

        for note in report.notes:
            say(note, "yellow")
        if report.skipped:
            return
        if report.review is not None:
            say(f"Held for your review: {report.review.summary()}; nothing written or run yet")
            for f in report.review.files:
                say(f"  {f.number}  {f.shown} ({f.change}, {plural(len(f.hunks), 'hunk')})")
            return
        if report.found_no_command:
            say(NO_COMMAND, "yellow")
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
        if report.state.question is not None:
            console.print(
                safe_text("The LLM asks: ", "bold magenta") + safe_text(report.state.question)
            )
        for line in report.auto_run:
            console.print(
                safe_text("Runs code outside the sandbox: ", "bold red") + safe_text(line)
            )
        if report.masked:
            say(f"Masked {plural(report.masked, 'secret')} in the next prompt", "yellow")
        if report.state.is_complete:
            console.print(
                safe_text("Session complete: ", "bold green")
                + safe_text(report.state.summary or "")
            )

    def prompt_ready(self, prompt: Prompt, token_budget: int, copy_problem: str | None) -> None:
        if copy_problem is None and self._clipboard_loop:
            say(f"Prompt {prompt.sequence} is on the clipboard: paste it into the chat", "bold")
        else:
            paste = " Paste it into your chat LLM." if self._pasting else ""
            say(
                f"Next prompt: {prompt.path} ({len(prompt.text):,} characters, "
                f"~{prompt.tokens:,}{_of(prompt.window)} tokens).{paste}"
            )
        if prompt.window and prompt.tokens > prompt.window:
            say(
                f"warning: the prompt (~{prompt.tokens:,} tokens) is over the chat's window "
                f"({prompt.window:,}, setting context_tokens) even with all that can be cut "
                "left out; use a chat with a larger window",
                "yellow",
            )
        elif prompt.tokens > token_budget:
            say(
                f"warning: the prompt is over the token budget ({prompt.tokens:,} > "
                f"{token_budget:,}); some chat UIs will cut it",
                "yellow",
            )
        if copy_problem is None and not self._clipboard_loop:
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
        if report.untracked:
            folders = ", ".join(report.untracked)
            say(
                f"Not put back, by rule: what commands changed in ignored folders ({folders}); "
                "see docs/undo.md",
                "dim",
            )

    def watching(self, source: ReplySource) -> None:
        say(f"{source.description}. Ctrl-C stops.")

    def stopped(self, stop: Stop) -> None:
        from codingagent.session.seams import StopReason

        if stop.message:
            attention = stop.reason in (
                StopReason.TURN_LIMIT,
                StopReason.QUESTION,
                StopReason.REVIEW,
            )
            say(stop.message, "yellow" if attention else "")


def _of(window: int | None) -> str:
    """ " of M" after a prompt's tokens when the chat's window is known (context_tokens)."""
    return f" of {window:,}" if window else ""
