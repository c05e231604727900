"""The clipboard loop (``--clipboard``): a reply copied in the chat is applied, no file needed.

A turn then takes two actions: paste the prompt (the agent put it on the clipboard) into the
chat, and click the chat's Copy button under the answer. :class:`ClipboardSource` watches the
clipboard and ``inbox/`` together (it wraps an :class:`~codingagent.sources.inbox.InboxSource`)
and hands over whichever reply comes first.

Which copied text is a reply
----------------------------
People copy other things while they work, so :func:`is_reply` takes a text only when it could
answer this session's current prompt: it echoes ``Session: <id> Sequence: <n>`` of that prompt
near its top, or it echoes nothing at all and holds a command whose tag stands alone at the
start of a line. Our own prompts (whole or a piece), text for another session or an older
prompt, code with brackets and prose that mentions ``[DONE]`` are ignored without a word (so
is an echo-less reply found word for word in our prompt, such as one of the PROTOCOL's examples:
copying a piece of the prompt must never run it). Each text is judged once, when it appears on
the clipboard, and a reply already handed over is never handed over again, so copying a reply
twice applies it once.

Bound by the Session line (docs/admission.md)
---------------------------------------------
Only a text that names this session (``Session: <id>``, which every prompt asks the LLM to
write first) is applied at once. Copied text that names no session (a snippet from another
chat, a fragment of an older reply) is a *candidate*: on a terminal, what it would do is shown
(commands, paths, the first line of each RUN_COMMAND) and it is applied on one key (``y``);
without a terminal it is not applied, and the console says to add the Session line. A
candidate is claimed (a file named by its digest in a per-user folder) before it is offered,
so two sessions watching the clipboard never both apply it. A reply that names this session,
copied while no session watched, is taken when the watch begins (``resume --clipboard``), before
the prompt is copied over it.

Noticing a copy
---------------
The clipboard is read when it changes: :mod:`.clipboard_events` listens for X11's XFixes events (or
``wl-paste --watch`` on Wayland) and polls every ``POLL_INTERVAL`` seconds only where the
platform tells nothing. ``benchmarks/clipboard.py`` measures both; docs/performance.md has the
table (idle, polling at 0.5 s cost 0.8 % of one core and an ``xclip`` process every half
second; told of changes, the idle loop starts no process).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from codingagent.prompt.render import is_prompt
from codingagent.protocol.codeblocks import RENDERED_REFUSAL
from codingagent.protocol.commands import ParseError, RunCommand
from codingagent.protocol.reasoning import split_reasoning
from codingagent.protocol.replies import reply_digest
from codingagent.protocol.scan import commands_and_slips, has_command_line, reply_echo
from codingagent.session.seams import Prompt, Reply, TurnReport
from codingagent.settings import SettingsError
from codingagent.sources import pasteboard as clipboard
from codingagent.sources.clipboard_events import POLL_INTERVAL, Polling, open_changes
from codingagent.sources.inbox import FileReply, InboxSource
from codingagent.sources.pagetext import exact_text, read_copy

CLAIM_SECONDS = 600  # how long a candidate claimed by one session is kept from the others
SOURCE = "<clipboard>"  # a clipboard reply's name on the console and in the history
_PROMPTS_KEPT = 4  # recent prompts a copied piece of text is compared with


class Copied(NamedTuple):
    """A text copied to the clipboard, and the HTML copied with it (None: none)."""

    text: str
    html: str | None


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
    return has_command_line(text) or has_command_line(split_reasoning(text).answer)


def copied_reply() -> tuple[str | None, str | None]:
    """The reply on the clipboard to keep as raw text (``codingagent paste``) and None, or
    None and why there is none: a selection of a chat's rendered page is read from its HTML,
    and kept only when exact (:func:`.pagetext.exact_text`)."""
    text, problem = clipboard.paste()
    if text is None:
        return None, problem
    return exact_text(read_copy(text, clipboard.paste_html())), None


def names_session(text: str, prompt: Prompt) -> bool:
    """Whether ``text`` names the session of ``prompt`` (its Session line): bound to it."""
    return reply_echo(text)[0] == prompt.session_id


def what_it_would_do(text: str, rendered: bool = False) -> str:
    """The commands of a candidate, one a line: name, path, first line of a RUN_COMMAND;
    ``rendered``: read from a rendered page, where some are refused (and said so)."""
    shown = []
    commands = commands_and_slips(split_reasoning(text).answer, rendered)[0]  # never a draft
    for command in commands:
        if isinstance(command, ParseError) and command.message == RENDERED_REFUSAL:
            shown.append(f"  {command.name}: refused (outside a code block of a rendered page)")
        elif isinstance(command, RunCommand):
            first = (command.command.strip().splitlines() or [""])[0]
            shown.append(f"  RUN_COMMAND: {first}")
        else:
            shown.append(f"  {command.name} {command.target or ''}".rstrip())
    return "\n".join(shown)


def claim(text: str, session_id: str, folder: Path | None = None) -> str | None:
    """Claim a candidate for ``session_id``: None if it is now ours, else the session that
    claimed it first (two sessions watching one clipboard never both apply it). A claim older
    than ``CLAIM_SECONDS`` has lapsed: the same text copied again later is a new candidate."""
    folder = folder or Path(tempfile.gettempdir()) / f"codingagent-clipboard-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / reply_digest(text.encode("utf-8"))
    # The claim appears with its owner in it (a link of a file already written): a session that
    # loses the race reads who won, never an empty file.
    mine = folder / f".{path.name}.{session_id}.{os.getpid()}"
    mine.write_text(session_id, encoding="utf-8")
    try:
        os.link(mine, path)
    except FileExistsError:
        owner = path.read_text(encoding="utf-8", errors="replace").strip()
        if owner == session_id or time.time() - path.stat().st_mtime > CLAIM_SECONDS:
            os.replace(mine, path)  # ours, or an old claim: taken anew
            return None
        return owner or "another session"
    finally:
        mine.unlink(missing_ok=True)
    return None


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
        read_html: Callable[[], str | None] = clipboard.paste_html,
        changes: Callable[[str, float], Polling] = open_changes,
        confirm: Callable[[str], bool] | None = None,
        note: Callable[[str], None] = lambda text: None,
        claims: Path | None = None,
    ) -> None:
        """``confirm`` asks the user on a terminal whether to apply a candidate (shown to
        them), None without one; ``note`` tells them why one was not applied; ``claims`` is
        the folder of claimed candidates (see :func:`claim`); ``read_html`` reads the HTML a
        browser copies beside a selection's text (None: there is none)."""
        tool = require_clipboard()
        self._confirm = confirm
        self._note = note
        self._claims = claims
        self._inbox = inbox
        self._interval = interval
        self._read = read
        self._read_html = read_html
        self._changes = changes(tool, interval)
        self._last: str | None = None  # the clipboard's text when last read
        self._handed: set[str] = set()  # digests of the replies handed over
        self._prompts: deque[str] = deque(maxlen=_PROMPTS_KEPT)
        self._waiting: Copied | None = None  # a copied reply that came with an inbox reply
        self._at_start: Copied | None = None  # on the clipboard when the watch began
        also = inbox.description[:1].lower() + inbox.description[1:]
        self.description = (
            f"Watching the clipboard ({tool}: {self._changes.description}) for the LLM's "
            f"reply; also {also}"
        )

    def __enter__(self) -> ClipboardSource:
        """Start watching; what is on the clipboard now is kept, to be judged against the
        first prompt before that prompt is copied over it."""
        self._inbox.__enter__()
        self._last = self._read()[0]
        self._at_start = None if self._last is None else self._copied(self._last)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._changes.close()
        self._inbox.__exit__(*exc_info)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        """The first reply for ``prompt`` to be copied or saved; None once ``stop`` is set.

        A copied text that names no session is applied only once the user says so
        (:meth:`_admits`); until then the watch goes on.
        """
        self._prompts.append(prompt.text)
        at_start, self._at_start = self._at_start, None
        # A reply copied while no session watched counts if it names this session.
        if (
            at_start is not None
            and names_session(at_start.text, prompt)
            and self._takes(at_start.text, prompt)
        ):
            return self._handing(at_start)
        waiting, self._waiting = self._waiting, None
        if (
            waiting is not None
            and self._takes(waiting.text, prompt)
            and self._admits(waiting, prompt)
        ):
            return self._handing(waiting)
        while True:
            reply, copied = self._first(prompt, stop)
            if reply is not None:
                self._handed.add(reply_digest(reply.data))
                return reply
            if copied is None:
                return None
            if self._admits(copied, prompt):
                return self._handing(copied)

    def _first(self, prompt: Prompt, stop: threading.Event) -> tuple[Reply | None, Copied | None]:
        """The inbox waits in this thread; the clipboard is read in another, which ends the
        inbox's wait (``found``) when a reply is copied or ``stop`` is set. The inbox's reply
        or the copied text, whichever came (a text copied with an inbox reply waits)."""
        found = threading.Event()
        copied: list[Copied] = []
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
            return reply, None
        return None, copied[0] if copied else None

    def _admits(self, copied: Copied, prompt: Prompt) -> bool:
        """Whether a copied text is applied: at once if it names this session; a candidate
        (it names none) only on the user's ``y`` (shown what the copy will do, as it will be
        read: :mod:`.pagetext`), and only if no other session claimed it."""
        text = copied.text
        if names_session(text, prompt):
            return True
        would = what_it_would_do(*read_copy(text, copied.html)) or "  (no command)"
        if self._confirm is None:
            self._note(
                "Copied text that names no session was not applied; it would do:\n"
                f"{would}\nTo apply it, have it start with 'Session: {prompt.session_id} "
                f"Sequence: {prompt.sequence}' (the prompt asks the LLM for that line) and "
                "copy it again, or save it into inbox/"
            )
            return False
        owner = claim(text, prompt.session_id, self._claims)
        if owner is not None:
            self._note(f"Copied text that names no session was taken by session {owner}")
            return False
        return self._confirm(f"Copied text that names no session would do:\n{would}")

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        if isinstance(reply, FileReply):
            self._inbox.done_with(reply, report)

    def _watch(
        self,
        prompt: Prompt,
        stop: threading.Event,
        found: threading.Event,
        copied: list[Copied],
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
                            copied.append(self._copied(text))
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

    def _copied(self, text: str) -> Copied:
        """A copied text, with the HTML the clipboard holds beside it, read at once."""
        return Copied(text, self._read_html())

    def _handing(self, copied: Copied) -> Reply:
        """The reply a copy stands for: the text as copied, or, for a selection of a chat's
        rendered page, the answer read from its HTML (:mod:`.pagetext`)."""
        self._handed.add(reply_digest(copied.text.encode("utf-8")))
        text, rendered = read_copy(copied.text, copied.html)
        meta = {"copied": "rendered page (read from its HTML)"} if rendered else {}
        return Reply(text.encode("utf-8"), SOURCE, meta=meta, rendered=rendered)
