"""The chat-tab relay on the command line (docs/relay.md): the ``--relay`` and
``--relay-port`` flags of ``start`` and ``resume``, the relay as the session's reply source
with its pairing code shown once, and ``codingagent relay``, which says where the browser
extension is and how to load it."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codingagent.frontends.console import console, safe_text, say

if TYPE_CHECKING:
    from codingagent.records.store import SessionStore
    from codingagent.session.loop import SessionLoop
    from codingagent.session.seams import FrontEnd
    from codingagent.settings import Settings
    from codingagent.sources.relay import RelaySource


def relay_options(command: Callable) -> Callable:
    """``--relay`` (not kept with the session: a choice of this run) and ``--relay-port``."""
    options = [
        click.option(
            "--relay",
            is_flag=True,
            default=None,
            help="Serve the chat-tab relay: the browser extension puts each prompt into a chat "
            "tab; one Apply click sends the answer back (codingagent relay says how to load it).",
        ),
        click.option(
            "--relay-port",
            type=click.IntRange(0, 65535),
            help="The relay's port on 127.0.0.1 (setting relay_port; default 8766; 0: any free).",
        ),
    ]
    return functools.reduce(lambda f, option: option(f), reversed(options), command)


def take_relay(flags: dict[str, Any]) -> bool:
    """Takes ``--relay`` out of ``flags`` (it is no setting); a usage error beside a model or
    the clipboard loop: one source of replies at a time."""
    relay = bool(flags.pop("relay", None))
    if relay and (flags.get("model_name") or flags.get("base_url")):
        raise click.UsageError("--relay and --model exclude each other: the model gives replies")
    if relay and flags.get("clipboard_watch"):
        raise click.UsageError("--relay and --clipboard exclude each other: choose one")
    return relay


def without_other_sources(flags: dict[str, Any]) -> dict[str, Any]:
    """A resumed session's kept flags under ``--relay``: its replies come from a person, so a
    kept model or clipboard loop yields."""
    from codingagent.frontends.kept import MODEL_KEYS

    kept = {key: value for key, value in flags.items() if key not in MODEL_KEYS}
    return {**kept, "clipboard_watch": False}


@contextmanager
def relay_source(
    loop: SessionLoop, note: Callable[[str], None] | None = None, page: str | None = None
) -> Iterator[RelaySource]:
    """The relay for ``loop``'s session, served while the context holds; its address and
    pairing code are printed once. ``note`` tells the user of pairings (the loop's listener
    by default); ``page``: the address of the page served beside it, where a held review is
    decided (docs/review.md)."""
    from codingagent.session.reviewing import current
    from codingagent.sources.inbox import InboxSource
    from codingagent.sources.relay import Exchange, Pairing
    from codingagent.sources.relay_server import open_relay

    settings = loop.settings
    state = loop.store.load(loop.session_id)
    pairing = Pairing(note=note or loop.listener.note)
    inbox = InboxSource(loop.store.inbox, settings.max_reply_bytes, poll=settings.poll)
    exchange = Exchange(loop.session_id, state.task, page)
    held = current(loop.store, loop.session_id, state)
    if held is not None:  # held when the agent last stopped: the loop puts it to the user
        exchange.reviewing(held.id, held.summary())
    source = open_relay(exchange, pairing, inbox, settings.relay_port, settings.max_reply_bytes)
    with source:
        console.print(
            safe_text("Relay for session ")
            + safe_text(loop.session_id, "bold")
            + safe_text(f" on {source.address}. Pairing code: ")
            + safe_text(pairing.code, "bold reverse")
        )
        say(
            "Type the code into the extension's popup (shown once; 5 wrong codes void it). "
            "Load the extension: codingagent relay",
            "dim",
        )
        yield source


@contextmanager
def relay_beside_page(
    store: SessionStore,
    settings: Settings,
    session_id: str,
    listener: FrontEnd,
    page: str | None = None,
    reviewing: threading.Event | None = None,
) -> Iterator[None]:
    """``codingagent ui --relay``: the session's loop, with the relay as its source, runs in a
    thread of the page's process while the context holds; the page sees its turns through
    ``listener``. The loop holds the session, so a reply pasted on the page goes into
    ``inbox/``, which the relay's source watches too. A session that cannot be served (held
    by another process, complete) is a SessionError before the page is served. ``page``: the
    page's address; ``reviewing`` is set once the loop waits for the page to decide a held
    review (docs/review.md): the page is served then, before any prompt is offered."""
    from codingagent.session.loop import SessionLoop

    served: list[RelaySource] = []
    failed: list[BaseException] = []
    loop = SessionLoop(store, settings, session_id, listener, interactive=True)

    def run() -> None:
        try:
            quiet = functools.partial(say, style="dim")
            with loop, relay_source(loop, quiet, page) as source:
                served.append(source)
                loop.run(source)
        except BaseException as e:  # raised again, or shown by the page's terminal
            failed.append(e)

    thread = threading.Thread(target=run, name="relay loop", daemon=True)
    thread.start()
    # Served once the loop offers its first prompt, or waits for the page to decide a review;
    # or it failed before (or ended at once).
    while not (served and served[0].exchange.offered.wait(0.05)) and thread.is_alive():
        if reviewing is not None and reviewing.is_set():
            break
    if failed:
        thread.join()
        raise failed[0]
    try:
        yield
    finally:
        loop.stop()
        thread.join(30)
    if failed:
        say(f"The relay's loop failed: {failed[0]}", "red")


def extension_folder() -> Path:
    """The browser extension's folder inside the installed package."""
    return Path(str(resources.files("codingagent.frontends") / "extension"))


@click.command()
def relay() -> None:
    """Print the browser extension's folder and how to load it (once, in Chrome, Chromium,
    Edge or Firefox); then run `codingagent start TASK --relay`."""
    folder = extension_folder()
    click.echo(str(folder))  # stdout: the one line of data, for scripts
    if not (folder / "manifest.json").is_file():
        say(f"warning: no manifest.json in {folder}: this install lacks the extension", "yellow")
    say(
        "Load it once, in Chrome, Chromium or Edge (121 or later):\n"
        "  1. Open chrome://extensions (edge://extensions in Edge) and turn on Developer mode.\n"
        "  2. Click Load unpacked and choose the folder above.\n"
        "Or in Firefox (128 or later; no signed build exists, so once per Firefox start):\n"
        "  1. Open about:debugging#/runtime/this-firefox.\n"
        "  2. Click Load Temporary Add-on and choose manifest.json in the folder above.\n"
        "Then run: codingagent start TASK --relay, and type the pairing code it shows into "
        "the extension's popup (docs/relay.md)."
    )
