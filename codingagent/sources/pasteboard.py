"""The system clipboard, through pyperclip: copy a prompt, read a reply, name the tool in use.

pyperclip picks the tool: xclip or xsel on X11, wl-clipboard on Wayland, pbcopy on macOS, the
Windows API, clip.exe on WSL. A missing clipboard is never an error here: each call says why it
could not, and callers say so in one line.

Watching the clipboard means reading it every half second (:func:`prepare_to_watch`). wl-paste
cannot do that quietly everywhere: where the compositor lacks the wlr-data-control protocol
(GNOME's Mutter), it must take the keyboard focus to read, so each read would flicker the
window in use. Where XWayland runs (``DISPLAY`` is set, as on GNOME and KDE), xclip or xsel read
the same clipboard without the focus, so they are used instead.

Over SSH there is usually no clipboard tool (no display). Then :func:`copy` still hands the text
to the user's own terminal with the OSC 52 escape, which most terminals put on the local
clipboard (tmux needs ``set -g set-clipboard on``). It does so only when ``SSH_TTY`` is set (ssh
gave the session a terminal) and stderr is that terminal, so the escape reaches a terminal and
never a log file. OSC 52 only writes: reading the clipboard back is not possible over SSH, so the
clipboard loop (``--clipboard``) cannot run there; replies go into ``inbox/`` or through
``codingagent paste < reply.txt``.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

NO_CLIPBOARD = "no clipboard tool found; on Linux install xclip, xsel or wl-clipboard"
OSC52 = "OSC 52"

# pyperclip's copy functions are named after their tool: copy_xclip, copy_osx_pbcopy, ...
_TOOL_NAMES = {"wl": "wl-clipboard", "osx_pbcopy": "pbcopy", "osx_pyobjc": "pyobjc"}
_X11_TOOLS = ("xclip", "xsel")  # in pyperclip's order of preference


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
    except (OSError, UnicodeDecodeError) as e:  # the tool failed, or held no text
        return None, f"the clipboard could not be used: {e}"


def copy(text: str) -> str | None:
    """Put ``text`` on the clipboard (over SSH without a tool: with OSC 52); why not, or None."""

    def copy_detached(pyperclip: Any) -> None:
        with _detached_stdio():
            pyperclip.copy(text)

    problem = _use(copy_detached)[1]
    if problem is not None and osc52_possible():
        _osc52(text)
        return None
    return problem


def paste() -> tuple[str | None, str | None]:
    """The clipboard's text and None, or None and why it could not be read."""
    return _use(lambda pyperclip: pyperclip.paste())


def problem() -> str | None:
    """Why there is no clipboard here that can be read, or None. Reads it, never changes it."""
    return paste()[1]


def backend() -> str | None:
    """The tool pyperclip uses here ("xclip", "xsel", "wl-clipboard", "pbcopy", "windows",
    ...), or None when there is none."""
    try:
        import pyperclip
    except ImportError:
        return None
    in_use = pyperclip.copy
    if in_use is pyperclip.lazy_load_stub_copy:  # not chosen yet: what it will choose
        in_use = pyperclip.determine_clipboard()[0]
    name = getattr(in_use, "__name__", "")
    if not name.startswith("copy_"):
        return None  # pyperclip's stand-in that raises on use
    tool = name.removeprefix("copy_")
    return _TOOL_NAMES.get(tool, tool)


def prepare_to_watch() -> str | None:
    """Choose a tool that can read the clipboard every half second without side effects; why
    there is none, or None. On Wayland that is xclip or xsel through XWayland when it runs."""
    if backend() != "wl-clipboard":
        return None
    if os.environ.get("DISPLAY"):
        for tool in _X11_TOOLS:
            if shutil.which(tool):
                import pyperclip

                pyperclip.set_clipboard(tool)
                return None
    if "GNOME" in os.environ.get("XDG_CURRENT_DESKTOP", "").upper():
        return (
            "on GNOME's Wayland, wl-paste takes the keyboard focus each time it reads the "
            "clipboard; install xclip (it reads the same clipboard through XWayland)"
        )
    return None


def describe() -> str:
    """One line for ``doctor`` and the start line: the tool in use, or why there is none."""
    why = problem()
    if why is None:
        return f"{backend() or 'available'} (copies prompts, reads replies)"
    if osc52_possible():
        return (
            f"{OSC52} over SSH: prompts are copied through your terminal; "
            f"replies cannot be read back ({why})"
        )
    return why


def osc52_possible() -> bool:
    """Whether copying may fall back to OSC 52: over SSH, with stderr on the session's terminal."""
    return bool(os.environ.get("SSH_TTY")) and sys.stderr is not None and sys.stderr.isatty()


def osc52_sequence(text: str) -> str:
    """The OSC 52 escape that asks a terminal to put ``text`` on its clipboard."""
    return f"\x1b]52;c;{base64.b64encode(text.encode('utf-8')).decode('ascii')}\x07"


def _osc52(text: str) -> None:
    sys.stderr.write(osc52_sequence(text))
    sys.stderr.flush()


@contextmanager
def _detached_stdio() -> Iterator[None]:
    """Run with stdout and stderr pointing at the null device, at the file-descriptor level.

    xclip, xsel and wl-copy leave a process behind that serves the copied text until something
    else is copied. It would inherit our stdout and stderr and hold them open, so a pipe reading
    them (``codingagent start ... 2>&1 | tee log``, a test capturing output) would never end.
    """
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    saved: list[tuple[int, int]] = []
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
            except OSError:  # not open at all: nothing to protect
                continue
            os.dup2(null, fd)
        yield
    finally:
        for fd, copy_of in saved:
            os.dup2(copy_of, fd)
            os.close(copy_of)
        os.close(null)
