"""The user's y/n before a RUN_COMMAND runs (approval ``ask``) or copied text that names no
session is applied, answers to the LLM's questions (ASK), and the review of a reply's held
file changes (docs/review.md), on a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from codingagent.frontends.console import console, safe_text

if TYPE_CHECKING:
    from codingagent.review.decision import Choice
    from codingagent.review.record import HeldReview


def ask_on_terminal(command: str) -> bool:
    """Show the command and wait for y/n; no answer (end of input) is a no."""
    console.print(safe_text("The LLM wants to run:", style="bold yellow"))
    console.print(safe_text(command))
    try:
        return click.confirm("Run it?", default=False, err=True)
    except click.Abort:
        return False


def answer_on_terminal(question: str) -> str | None:
    """Wait for the user's answer to the LLM's question (shown already); None if they give
    none (an empty line, or the end of input)."""
    try:
        return _line("Your answer (empty: answer later with 'codingagent answer')") or None
    except click.Abort:
        return None


def _line(question: str) -> str:
    """One line the user types after ``question`` (may be empty), stripped; click.Abort at
    the end of input."""
    return str(click.prompt(question, default="", show_default=False, err=True)).strip()


def confirm_on_terminal(what: str) -> bool:
    """Show what copied text that names no session would do; one key applies it: ``y``
    (docs/admission.md). Any other key, or the end of input, is a no."""
    console.print(safe_text(what, style="bold yellow"))
    console.print(safe_text("Apply it? Press y to apply, any other key to ignore it: "), end="")
    try:
        key = click.getchar()
    except (click.Abort, EOFError):
        key = ""
    console.print(safe_text(key if key.isprintable() else ""))
    return key.lower() == "y"


def confirm_check(said: str, command: str) -> bool:
    """Whether the check command a workspace file offers (``said``: which file, and how it
    names it) is to be run in the sandbox before the first prompt and after each turn that
    changes files (asked once, at start)."""
    console.print(safe_text(f"{said}:", style="bold yellow"))
    console.print(safe_text(command))
    try:
        return click.confirm(
            "Run it before the first prompt and after each turn that changes files?",
            default=False,
            err=True,
        )
    except click.Abort:
        return False


STYLES = {"+": "green", "-": "red"}


def review_lines(held: HeldReview) -> list[tuple[str, str]]:
    """The review as lines of text, each with its style: files, hunks and their lines."""
    lines = [
        (
            f"Session {held.session_id}: the reply {held.source} to prompt {held.sequence} "
            f"holds {held.summary()} for your review",
            "bold",
        )
    ]
    for f in held.files:
        count = len(f.hunks)
        kind = {"created": "new file", "deleted": "deleted"}.get(f.change, "changed")
        whole = ", all or nothing" if f.whole and f.change == "changed" else ""
        lines.append(
            (f"{f.number}  {f.shown}  ({kind}, {count} hunk{'s' * (count != 1)}{whole})", "bold")
        )
        for hunk in f.hunks:
            lines.append((f"  {hunk.number}  {hunk.header}".rstrip(), "cyan"))
            lines += [(f"       {line}", STYLES.get(line[:1], "")) for line in hunk.body]
    for result in held.failed():
        lines.append((f"Fails whatever you decide: {result.headline}", "yellow"))
    return lines


def _show(held: HeldReview) -> None:
    for text, style in review_lines(held):
        console.print(safe_text(text, style))


def review_on_terminal(held: HeldReview) -> Choice | None:
    """Show the held changes and ask: accept all, reject all, choose per file and hunk, or
    decide later (also the end of input: None)."""
    from codingagent.review.decision import Choice

    _show(held)
    try:
        how = click.prompt(
            "Accept all [a], reject all [r], choose per file and hunk [c], decide later [l]",
            type=click.Choice(["a", "r", "c", "l"]),
            err=True,
        )
        if how == "l":
            return None
        if how == "a":
            return Choice(("all",))
        accepted = _choose(held) if how == "c" else []
        note = _line("A note for the LLM on what you rejected (empty: none)")
    except click.Abort:
        return None
    return Choice(tuple(accepted), note)


def _choose(held: HeldReview) -> list[str]:
    """Per file, then per hunk where the user asks: the numbers accepted."""
    accepted = []
    for f in held.files:
        several = len(f.hunks) > 1
        keys = ["y", "n", "h"] if several else ["y", "n"]
        hunks = " [h] choose its hunks," if several else ""
        answer = click.prompt(
            f"File {f.number} {f.shown}: accept [y], reject [n],{hunks}",
            type=click.Choice(keys),
            err=True,
        )
        if answer == "y":
            accepted.append(f.number)
        elif answer == "h":
            for hunk in f.hunks:
                if click.confirm(f"  Accept hunk {hunk.number} {hunk.header}?", err=True):
                    accepted.append(hunk.number)
    return accepted
