"""The user's y/n before a RUN_COMMAND runs (approval ``ask``) on a terminal."""

from __future__ import annotations

import click

from .console import console, safe_text


def ask_on_terminal(command: str) -> bool:
    """Show the command and wait for y/n; no answer (end of input) is a no."""
    console.print(safe_text("The LLM wants to run:", style="bold yellow"))
    console.print(safe_text(command))
    try:
        return click.confirm("Run it?", default=False, err=True)
    except click.Abort:
        return False
