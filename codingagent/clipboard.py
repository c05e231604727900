"""The system clipboard, through pyperclip: copy a prompt, read a reply.

A missing clipboard is never an error here: each call says why it could not, and callers say
so in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NO_CLIPBOARD = "no clipboard tool found; on Linux install xclip, xsel or wl-clipboard"


def _use(action: Callable[[Any], Any]) -> tuple[Any, str | None]:
    """``action(pyperclip)``'s result and None, or None and why there is no usable clipboard."""
    try:
        import pyperclip
    except ImportError:
        return None, "pyperclip is not installed"
    try:
        return action(pyperclip), None
    except pyperclip.PyperclipException:
        return None, NO_CLIPBOARD


def copy(text: str) -> str | None:
    """Put ``text`` on the clipboard; the reason it could not, or None."""
    return _use(lambda pyperclip: pyperclip.copy(text))[1]


def paste() -> tuple[str | None, str | None]:
    """The clipboard's text and None, or None and why it could not be read."""
    return _use(lambda pyperclip: pyperclip.paste())


def problem() -> str | None:
    """Why there is no usable clipboard here, or None. Reads it, never changes it."""
    return paste()[1]
