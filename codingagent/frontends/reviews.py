"""Review on the command line (docs/review.md): ``codingagent review`` lists what a session
holds for review and decides it (the watch loop's question on the terminal is
:func:`codingagent.frontends.approval.review_on_terminal`).

Files are numbered in the reply's order (``1``, ``2``), their hunks in file order (``2.1``,
``2.2``); a new file, a deleted one and one that is not text are one hunk. What is accepted is
written, the rest is not, and the note goes to the LLM with the rejection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from codingagent.frontends import exits
from codingagent.frontends.approval import review_lines
from codingagent.frontends.console import say
from codingagent.frontends.options import root_option, session_argument, session_loop


@click.command()
@session_argument
@root_option
@click.option(
    "--accept",
    "accepted",
    multiple=True,
    metavar="N",
    help="Accept file N (all its hunks), hunk N.M, or 'all' (repeatable); the rest is rejected.",
)
@click.option(
    "--reject-all", is_flag=True, help="Reject every change (the reply's other commands still run)."
)
@click.option(
    "--note", default="", metavar="TEXT", help="Your note to the LLM on what you rejected."
)
@click.option(
    "--discard",
    is_flag=True,
    help="Drop the held reply unapplied; its prompt waits for another reply.",
)
@click.option("--json", "as_json", is_flag=True, help="List the review as JSON, for scripts.")
def review(
    session: str,
    root: Path,
    accepted: tuple[str, ...],
    reject_all: bool,
    note: str,
    discard: bool,
    as_json: bool,
) -> None:
    """List the file changes SESSION (default: the latest) holds for your review: files
    numbered 1, 2 in the reply's order, their hunks 2.1, 2.2. With --accept (or --reject-all)
    decide: what is accepted is written, the rest is not, and --note goes to the LLM with what
    was rejected; then the reply's other commands run and the next prompt is written."""
    from codingagent.frontends.kept import kept_flags
    from codingagent.records.store import SessionStore
    from codingagent.review.decision import Choice
    from codingagent.session.reviewing import current
    from codingagent.transaction.rollback import interrupted_turn

    deciding = bool(accepted) or reject_all
    if accepted and reject_all:
        raise click.UsageError("--accept and --reject-all exclude each other")
    if discard and (deciding or note):
        raise click.UsageError(
            "--discard drops the reply: it takes no --accept, --reject-all or --note"
        )
    if note and not deciding:
        raise click.UsageError(
            "Say what you accept with the note: --accept N (or all), or --reject-all"
        )
    if not deciding and not discard:
        store = SessionStore(root)
        session_id = store.resolve(session)
        held = current(store, session_id)
        if as_json:
            click.echo(json.dumps(held.as_json() if held is not None else None, indent=2))
        elif held is None:
            say(f"Session {session_id} holds no review")
        else:
            for text, _ in review_lines(held):
                click.echo(text)
            say(
                f"Decide: codingagent review {session_id} --accept all (or --accept 1 "
                "--accept 2.1 ..., --reject-all) [--note TEXT]; or --discard",
                "dim",
            )
        return
    with session_loop(root, session, kept_flags(root, session, {})) as loop:
        try:
            loop.decide(Choice(accepted, note, discard))
        except KeyboardInterrupt as e:
            say(f"Stopped (Ctrl-C): {interrupted_turn(e)}", "yellow")
            sys.exit(exits.Exit.INTERRUPTED)
