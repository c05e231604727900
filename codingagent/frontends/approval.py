"""The user's y/n before a RUN_COMMAND runs (approval ``ask``) or copied text that names no
session is applied, and answers to the LLM's questions (ASK), on a terminal."""

from __future__ import annotations

import click

from codingagent.frontends.console import console, safe_text


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
        text = click.prompt(
            "Your answer (empty: answer later with 'codingagent answer')",
            default="",
            show_default=False,
            err=True,
        )
    except click.Abort:
        return None
    return text.strip() or None


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
