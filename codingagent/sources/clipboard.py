"""The clipboard loop (``--clipboard``): a reply copied in the chat is applied, no file needed.

A turn then takes two actions: paste the prompt (the agent put it on the clipboard) into the
chat, and click the chat's Copy button under the answer. :class:`ClipboardSource` watches the
clipboard and ``inbox/`` together (it wraps an :class:`~codingagent.sources.inbox.InboxSource`)
and hands over whichever reply comes first.

Which copied text is a reply
----------------------------
People copy other things while they work, so :func:`is_reply` takes a text only when it is a
reply for this session's current prompt: it echoes ``Session: <id> Sequence: <n>`` of that
prompt near its top, or it echoes nothing at all and holds a command whose tag stands alone at
the start of a line. Our own prompts (whole or a piece), text for another session or an older
prompt, code with brackets and prose that mentions ``[DONE]`` are ignored without a word (so
is an echo-less reply found word for word in our prompt, such as one of the PROTOCOL's examples:
copying a piece of the prompt must never run it). Each text is judged once, when it appears on
the clipboard, and a reply already handed over is never handed over again, so copying a reply
twice applies it once.

Noticing a copy
---------------
The clipboard is read when it changes: :mod:`.clipboard_events` listens for X11's XFixes events (or
``wl-paste --watch`` on Wayland) and polls every ``POLL_INTERVAL`` seconds only where the
platform tells nothing. ``benchmarks/clipboard.py`` measures both; docs/performance.md has the
table (idle, polling at 0.5 s cost 0.8 % of one core and an ``xclip`` process every half
second; told of changes, the idle loop starts no process).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from codingagent.prompt.render import is_prompt
from codingagent.protocol.scan import has_command_line, reply_echo
from codingagent.session.admission import reply_digest
from codingagent.session.seams import Prompt, Reply
from codingagent.session.turn import TurnReport
from codingagent.settings import SettingsError
from codingagent.sources import pasteboard as clipboard
from codingagent.sources.clipboard_events import POLL_INTERVAL, Polling, open_changes
from codingagent.sources.inbox import FileReply, InboxSource

SOURCE = "<clipboard>"  # a clipboard reply's name on the console and in the history
_PROMPTS_KEPT = 4  # recent prompts a copied piece of text is compared with


def is_reply(text: str, prompt: Prompt, prompts: Iterable[str] = ()) -> bool:
    """Whether ``text``, just copied, is a reply to ``prompt``.

    ``prompts`` are the texts of our recent prompts: no piece of one is ever a reply.
    """
    if not text.strip() or is_our_prompt(text, prompts):
        return False
    session, sequence = reply_echo(text)
    if session not in (None, prompt.session_id) or sequence not in (None, prompt.sequence):
        return False  # for another session, or for another prompt of this one
    if session is not None and sequence is not None:
        return True
    return has_command_line(text)


def is_our_prompt(text: str, prompts: Iterable[str] = ()) -> bool:
    """Whether ``text`` is one of our prompts, or a piece of one of ``prompts``."""
    text = _unix_lines(text).strip()
    return is_prompt(text) or any(text in _unix_lines(p) for p in prompts)


def _unix_lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def require_clipboard() -> str:
    """The clipboard tool in use; a SettingsError naming what to install when there is none that
    can be read."""
    problem = clipboard.prepare_to_watch() or clipboard.problem()
    if problem is None:
        return clipboard.backend() or "clipboard"
    message = f"--clipboard (clipboard_watch) cannot watch the clipboard here: {problem}"
    if clipboard.osc52_possible():
        message += (
            ". Over SSH the prompts are still copied (OSC 52), but a reply cannot be read back:"
            " run without --clipboard and save replies into inbox/"
        )
    raise SettingsError(message)


class ClipboardSource:
    """Replies copied to the clipboard, and replies saved into ``inbox``: whichever comes first.

    ``read`` reads the clipboard: the text and None, or None and why not (:func:`clipboard.paste`).
    """

    def __init__(
        self,
        inbox: InboxSource,
        *,
        interval: float = POLL_INTERVAL,
        read: Callable[[], tuple[str | None, str | None]] = clipboard.paste,
        changes: Callable[[str, float], Polling] = open_changes,
    ) -> None:
        tool = require_clipboard()
        self._inbox = inbox
        self._interval = interval
        self._read = read
        self._changes = changes(tool, interval)
        self._last: str | None = None  # the clipboard's text when last read
        self._handed: set[str] = set()  # digests of the replies handed over
        self._prompts: deque[str] = deque(maxlen=_PROMPTS_KEPT)
        self._waiting: str | None = None  # a copied reply that came with an inbox reply
        also = inbox.description[:1].lower() + inbox.description[1:]
        self.description = (
            f"Watching the clipboard ({tool}: {self._changes.description}) for the LLM's "
            f"reply; also {also}"
        )

    def __enter__(self) -> ClipboardSource:
        self._inbox.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._changes.close()
        self._inbox.__exit__(*exc_info)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        """The first reply for ``prompt`` to be copied or saved; None once ``stop`` is set.

        The inbox waits in this thread; the clipboard is read in another, which ends the inbox's
        wait (``found``) when a reply is copied or ``stop`` is set.
        """
        self._prompts.append(prompt.text)
        waiting, self._waiting = self._waiting, None
        if waiting is not None and self._takes(waiting, prompt):
            return self._handing(Reply(waiting.encode("utf-8"), SOURCE))
        found = threading.Event()
        copied: list[str] = []
        errors: list[BaseException] = []
        watch = threading.Thread(
            target=self._watch, args=(prompt, stop, found, copied, errors), daemon=True
        )
        watch.start()
        try:
            reply = self._inbox.next_reply(prompt, found)
        finally:
            found.set()
            self._changes.wake()
            watch.join()
        if errors:
            raise errors[0]
        if reply is not None:
            self._waiting = copied[0] if copied else None  # judged again for the next prompt
            return self._handing(reply)
        return self._handing(Reply(copied[0].encode("utf-8"), SOURCE)) if copied else None

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        if isinstance(reply, FileReply):
            self._inbox.done_with(reply, report)

    def _watch(
        self,
        prompt: Prompt,
        stop: threading.Event,
        found: threading.Event,
        copied: list[str],
        errors: list[BaseException],
    ) -> None:
        """Read the clipboard when it changes, until a reply is copied, ``stop`` is set or
        ``found`` is."""
        try:
            changed = True  # what is on the clipboard now is judged first
            while not found.is_set() and not stop.is_set():
                if changed:
                    text = self._read()[0]
                    if text is not None and text != self._last:
                        self._last = text
                        if self._takes(text, prompt):
                            copied.append(text)
                            return
                changed = self._changes.wait()
        except BaseException as e:  # raised again in the loop's thread
            errors.append(e)
        finally:
            found.set()

    def _takes(self, text: str, prompt: Prompt) -> bool:
        return reply_digest(text.encode("utf-8")) not in self._handed and is_reply(
            text, prompt, self._prompts
        )

    def _handing(self, reply: Reply) -> Reply:
        self._handed.add(reply_digest(reply.data))
        return reply
