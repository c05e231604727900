"""The terminal's console: rich on stderr, and the helpers that print to it safely. The session
loop's listener for the terminal is :mod:`.console_listener` (apart, so that commands that only
print, such as ``sessions``, start without loading the session loop's types).

stdout carries only data (``show`` prints the prompt, ``sessions`` and ``log`` tables or JSON),
so both can be piped. Text from replies and file names is shown, never obeyed: terminal escapes
in it (clear the screen, write the clipboard with OSC 52) are printed as ``\\x1b``.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

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
