"""How the clipboard loop learns that the clipboard changed, at near-zero cost while idle.

Reading the clipboard is a process (``xclip -o``, about 2.5 ms of CPU), so reading it every
half second costs about 1 % of a core with nothing happening. Where the platform says when the
clipboard changes, the loop reads it only then:

* **X11** (and XWayland): the XFixes extension sends an event whenever a program takes the
  ``CLIPBOARD`` selection, which every copy does; :class:`X11Changes` listens on the X
  connection through python-xlib, with no process at all.
* **Wayland** with the wlr-data-control protocol (sway, Hyprland, KDE): ``wl-paste --watch``
  runs a command at each change; :class:`WaylandChanges` keeps one such process and reads a
  line per change.
* Elsewhere (macOS, Windows, WSL, GNOME's Wayland without XWayland), :class:`Polling` says
  "read now" every ``POLL_INTERVAL`` seconds.

With a notification the clipboard is still read every ``SAFETY_READ`` seconds, so a change the
notification missed (a program that changes what it serves without taking the selection again)
costs latency, never a reply. docs/frontends.md and docs/performance.md have the measures.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time

POLL_INTERVAL = 0.5  # seconds between two reads where nothing tells of a change
SAFETY_READ = 10.0  # seconds between two reads even when nothing changed
SLICE = 0.5  # seconds a wait blocks at most, so a stop is noticed


class Polling:
    """No change notification: every ``interval`` seconds may be a change."""

    def __init__(self, interval: float = POLL_INTERVAL, why: str = "") -> None:
        self.interval = interval
        self.description = f"read every {interval:g} s, no change notification{why}"
        self._wake_r, self._wake_w = os.pipe()
        self._last = time.monotonic()

    def wait(self) -> bool:
        """Block until the clipboard may have changed (True) or at most ``SLICE`` seconds, or
        until :meth:`wake` (False: look at the stop flags)."""
        due = self._last + self._between()
        ready = self._select(max(0.0, min(SLICE, due - time.monotonic())))
        if self._wake_r in ready:
            os.read(self._wake_r, 512)
            return False
        if self._changed(ready) or time.monotonic() >= due:
            self._last = time.monotonic()
            return True
        return False

    def wake(self) -> None:
        """End a :meth:`wait` now (from another thread)."""
        os.write(self._wake_w, b"!")

    def close(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def _between(self) -> float:
        return self.interval

    def _select(self, timeout: float) -> list[int]:
        return select.select([self._wake_r], [], [], timeout)[0]

    def _changed(self, ready: list[int]) -> bool:
        return False


class X11Changes(Polling):
    """XFixes selection-owner events for ``CLIPBOARD`` on the X display ``name``."""

    def __init__(self, name: str) -> None:
        from Xlib import display
        from Xlib.ext import xfixes

        self._display = display.Display(name)
        try:
            if not self._display.has_extension("XFIXES"):
                raise OSError(f"the X display {name} has no XFIXES extension")
            self._display.xfixes_query_version()
            mask = (
                xfixes.XFixesSetSelectionOwnerNotifyMask
                | xfixes.XFixesSelectionWindowDestroyNotifyMask
                | xfixes.XFixesSelectionClientCloseNotifyMask
            )
            root = self._display.screen().root
            self._display.xfixes_select_selection_input(
                root, self._display.get_atom("CLIPBOARD"), mask
            )
            self._display.flush()
        except Exception:
            self._display.close()
            raise
        super().__init__()
        self.description = "told of each copy by X11's XFixes events, no polling"

    def close(self) -> None:
        self._display.close()
        super().close()

    def _between(self) -> float:
        return SAFETY_READ

    def _select(self, timeout: float) -> list[int]:
        if self._display.pending_events():
            return [self._display.fileno()]
        fds = [self._wake_r, self._display.fileno()]
        return select.select(fds, [], [], timeout)[0]

    def _changed(self, ready: list[int]) -> bool:
        if self._display.fileno() not in ready:
            return False
        seen = False
        while self._display.pending_events():  # reads what arrived; never blocks
            self._display.next_event()
            seen = True
        return seen


class WaylandChanges(Polling):
    """A ``wl-paste --watch`` process that prints a line at each change of the clipboard."""

    def __init__(self) -> None:
        self._watcher = subprocess.Popen(
            ["wl-paste", "--watch", "echo"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._watcher.stdout is not None and self._watcher.stderr is not None
        self._out: int | None = self._watcher.stdout.fileno()
        # A compositor without wlr-data-control makes wl-paste --watch exit at once.
        try:
            self._watcher.wait(timeout=0.3)
        except subprocess.TimeoutExpired:
            super().__init__()
            self.description = "told of each copy by wl-paste --watch, no polling"
            return
        problem = self._watcher.stderr.read().decode(errors="replace").strip()
        self._close_streams()
        raise OSError(problem or "wl-paste --watch ended at once")

    def close(self) -> None:
        self._watcher.terminate()
        self._watcher.wait()
        self._close_streams()
        super().close()

    def _close_streams(self) -> None:
        for stream in (self._watcher.stdout, self._watcher.stderr):
            if stream is not None:
                stream.close()

    def _between(self) -> float:
        return SAFETY_READ if self._out is not None else self.interval

    def _select(self, timeout: float) -> list[int]:
        fds = [self._wake_r] + ([self._out] if self._out is not None else [])
        return select.select(fds, [], [], timeout)[0]

    def _changed(self, ready: list[int]) -> bool:
        if self._out is None or self._out not in ready:
            return False
        if not os.read(self._out, 4096):  # wl-paste ended: poll from now on
            self._out = None
        return True


def open_changes(tool: str | None, interval: float = POLL_INTERVAL) -> Polling:
    """The best way to learn of clipboard changes for ``tool`` here; polling at ``interval``
    where there is none. Why a notification could not be had is in the description."""
    try:
        if tool in ("xclip", "xsel") and os.environ.get("DISPLAY"):
            return X11Changes(os.environ["DISPLAY"])
        if tool == "wl-clipboard" and shutil.which("wl-paste"):
            return WaylandChanges()
    except ImportError:
        return Polling(interval, ": python-xlib is not installed")
    except Exception as e:  # any failure here only means: poll
        return Polling(interval, f": {e or type(e).__name__}")
    return Polling(interval, " here")
