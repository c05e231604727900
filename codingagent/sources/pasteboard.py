"""The system clipboard, through pyperclip's public functions: copy a prompt, read a reply, name
the tool in use, and say why there is none.

pyperclip's ``copy``, ``paste`` and ``set_clipboard`` do the copying and reading: xclip or xsel
on X11, wl-clipboard on Wayland, pbcopy on macOS, the Windows API, clip.exe on WSL. pyperclip
has no function that names the tool it chose or says why there is none (it raises one message
for every cause, and its xclip and wl-paste readers return an empty text when the tool fails).
So on Linux this module makes the choice itself, in pyperclip's order (Wayland first when
``WAYLAND_DISPLAY`` is set and wl-clipboard is installed, then xclip or xsel when ``DISPLAY`` is
set), hands it to pyperclip with ``set_clipboard``, and names the real cause when there is no
tool to use: no display at all, a Wayland socket that is not there, an X display that does not
answer, or a tool that is not installed, each with its fix (docs/frontends.md). On macOS,
Windows and WSL pyperclip's own choice stands.

Watching the clipboard (:func:`prepare_to_watch`): wl-paste cannot read quietly everywhere:
where the compositor lacks the wlr-data-control protocol (GNOME's Mutter), it must take the
keyboard focus to read, so each read would flicker the window in use. Where XWayland runs
(``DISPLAY`` is set, as on GNOME and KDE), xclip or xsel read the same clipboard without the
focus, so they are used instead. How the loop learns of a change: :mod:`.clipboard_events`.

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
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

NO_DISPLAY = (
    "no display: neither DISPLAY nor WAYLAND_DISPLAY is set, so there is no desktop clipboard "
    "here (an SSH session, a container or a service); run codingagent in a terminal of your "
    "desktop session, or save replies into inbox/ (codingagent paste < reply.txt)"
)
OSC52 = "OSC 52"

_X11_TOOLS = ("xclip", "xsel")  # in pyperclip's order of preference
_prefer_x11 = False  # set by prepare_to_watch: read through XWayland, not wl-paste
_handed: str | None = None  # the tool last handed to pyperclip.set_clipboard


def tool() -> tuple[str | None, str | None]:
    """The clipboard tool to use here and None, or None and why there is none (with its fix).

    On Linux it is this module's choice (see above); elsewhere, pyperclip's: ``pbcopy``,
    ``windows`` or ``clip.exe`` (WSL), named by the platform."""
    system = platform.system()
    if system == "Windows":
        return "windows", None
    if system == "Darwin":
        return "pbcopy", None
    if system != "Linux":
        return None, f"no clipboard support on {system}"
    if _on_wsl():
        return "clip.exe", None
    return _linux_tool()


def _linux_tool() -> tuple[str | None, str | None]:
    wayland, x11 = os.environ.get("WAYLAND_DISPLAY"), os.environ.get("DISPLAY")
    if not wayland and not x11:
        return None, NO_DISPLAY
    problems: list[str] = []
    if wayland and not (_prefer_x11 and x11):
        runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
        socket = Path(runtime, wayland)  # an absolute WAYLAND_DISPLAY stands alone
        if not socket.exists():
            problems.append(
                f"WAYLAND_DISPLAY is {wayland!r} but there is no Wayland socket at {socket} "
                "(the compositor is not running there, or XDG_RUNTIME_DIR is wrong)"
            )
        elif shutil.which("wl-copy") and shutil.which("wl-paste"):
            return "wl-clipboard", None
        else:
            problems.append(
                "on Wayland the clipboard tool is wl-clipboard, which is not installed: "
                "install it (apt install wl-clipboard)"
            )
    if x11:
        found = next((name for name in _X11_TOOLS if shutil.which(name)), None)
        if found is None:
            problems.append(
                f"DISPLAY is {x11!r} but neither xclip nor xsel is installed: install xclip "
                "(apt install xclip)"
            )
        elif (unreachable := _x11_unreachable(x11)) is not None:
            problems.append(unreachable)
        else:
            return found, None
    return None, "; and ".join(problems)


_answered: set[str] = set()  # X displays that answered once: not asked again at every read


def _x11_unreachable(display: str) -> str | None:
    """Why the X display does not answer (so xclip would fail), or None when it does."""
    if display in _answered:
        return None
    try:
        from Xlib import display as xdisplay
        from Xlib import error as xerror
    except ImportError:  # python-xlib is for Linux only: then xclip's own failure tells
        return None
    try:
        xdisplay.Display(display).close()
    except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as e:
        return (
            f"the X display {display!r} does not answer ({e}): the desktop session it belonged "
            "to has ended, or DISPLAY is wrong; run codingagent in a terminal of your desktop"
        )
    _answered.add(display)
    return None


def _on_wsl() -> bool:
    try:
        return "microsoft" in Path("/proc/version").read_text().lower()
    except OSError:
        return False


def _use(action: Callable[[Any], Any]) -> tuple[Any, str | None]:
    """``action(pyperclip)``'s result and None, or None and why there is no usable clipboard."""
    global _handed
    name, why = tool()
    if name is None:
        return None, why
    try:
        import pyperclip
    except ImportError:
        return None, "pyperclip is not installed"
    try:
        if sys.platform == "linux" and name != "clip.exe" and _handed != name:
            pyperclip.set_clipboard(name)
            _handed = name
        return action(pyperclip), None
    except pyperclip.PyperclipException as e:
        return None, f"{name} cannot be used: {e}"
    except (OSError, UnicodeDecodeError) as e:  # the tool failed, or held no text
        return None, f"{name} failed: {e}"


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


# How a tool reads the clipboard's kinds of content, and one of them: xclip and wl-paste can,
# xsel and pyperclip's other tools read text only.
_HTML_READERS = {
    "xclip": (
        ("xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"),
        ("xclip", "-selection", "clipboard", "-t", "text/html", "-o"),
    ),
    "wl-clipboard": (("wl-paste", "--list-types"), ("wl-paste", "--no-newline", "-t", "text/html")),
}
HTML_TIMEOUT = 2.0  # seconds a read of the clipboard's kinds or its HTML may take


def paste_html() -> str | None:
    """The clipboard's ``text/html`` (what a browser copies beside the text of a selection),
    or None where there is none or the tool cannot read it (xsel, macOS, Windows)."""
    readers = _HTML_READERS.get(backend() or "")
    if readers is None:
        return None
    kinds, html = readers
    try:
        listed = subprocess.run(kinds, capture_output=True, timeout=HTML_TIMEOUT, check=False)
        if b"text/html" not in listed.stdout.split():
            return None
        read = subprocess.run(html, capture_output=True, timeout=HTML_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return decode_html(read.stdout) if read.returncode == 0 else None


def decode_html(data: bytes) -> str:
    """HTML as a browser puts it on the clipboard: UTF-8, or UTF-16 (with a byte order mark,
    or without one, as some browsers write it)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if len(data) >= 4 and data[1:4:2] == b"\0\0":
        return data.decode("utf-16-le", errors="replace")
    return data.decode("utf-8", errors="replace")


def problem() -> str | None:
    """Why there is no clipboard here that can be read, or None. Reads it, never changes it."""
    return paste()[1]


def backend() -> str | None:
    """The tool in use here ("xclip", "xsel", "wl-clipboard", "pbcopy", "windows",
    "clip.exe"), or None when there is none."""
    return tool()[0]


def prepare_to_watch() -> str | None:
    """Choose a tool that can read the clipboard often without side effects; why there is
    none, or None. On Wayland that is xclip or xsel through XWayland when it runs."""
    global _prefer_x11
    if backend() != "wl-clipboard":
        return None
    if os.environ.get("DISPLAY") and any(shutil.which(name) for name in _X11_TOOLS):
        _prefer_x11 = True
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
