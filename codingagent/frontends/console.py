"""The terminal's console: rich on stderr, and the helpers that print to it safely. The session
loop's listener for the terminal is :mod:`.console_listener` (apart, so that commands that only
print, such as ``sessions``, start without loading the session loop's types).

stdout carries only data (``show`` prints the prompt, ``sessions`` and ``log`` tables or JSON),
so both can be piped. Text from replies and file names is shown, never obeyed: terminal escapes
in it (clear the screen, write the clipboard with OSC 52) are printed as ``\\x1b``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


class _Console:
    """rich's console on stderr, made when a command first prints to it: importing rich costs
    a command that prints nothing there (``sessions``, ``show``) a fifth of its start-up."""

    _made: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if _Console._made is None:
            from rich.console import Console

            _Console._made = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
        return getattr(_Console._made, name)


console: Console = _Console()  # type: ignore[assignment]  # a Console, made when first used
STYLE = {True: "green", False: "red"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` instead of obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def safe_text(text: str, style: str = "") -> Text:
    """Console text with control characters shown as ``\\xNN`` instead of obeyed."""
    from rich.text import Text

    return Text(printable(text), style=style)


def say(text: str, style: str = "") -> None:
    console.print(safe_text(text, style))


def error(message: str) -> None:
    console.print(safe_text("error: ", style="bold red") + safe_text(message))


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def aligned(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` as lines of columns two spaces apart, each as wide as its widest cell (the
    last not padded): a table any terminal or pipe shows alike, made in one pass (a rich
    table of a thousand sessions took half a second to lay out)."""
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
