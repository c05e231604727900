"""The queue on the command line (docs/queue.md): ``start`` with several tasks or ``--tasks
FILE`` runs a queue, ``resume`` continues one, ``codingagent queue`` shows it. The console
says "Task 2/5: <task>" as each task starts, how each ended, and a summary table at the end.

A queue run exits as :func:`codingagent.frontends.exits.queue_summary` says (halted by
``--stop-on-failure`` counts as not completed; ``resume`` continues a queue Ctrl-C stopped).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codingagent.frontends.console import console, safe_text, say, shorten
from codingagent.frontends.exits import Exit
from codingagent.frontends.options import root_option, run_settings, session_loop

if TYPE_CHECKING:
    from rich.table import Table

    from codingagent.records.queues import QueueState
    from codingagent.records.store import SessionStore
    from codingagent.session.loop import SessionLoop
    from codingagent.session.seams import ReplySource
    from codingagent.sources.providers.client import ChatClient

    # The command line's reply source for a loop: the model's, else the inbox (and clipboard).
    SourceFor = Callable[[SessionLoop, ChatClient | None], AbstractContextManager[ReplySource]]

STYLES = {"completed": "green", "stopped": "yellow", "skipped": "yellow", "running": "bold"}


def task_list(
    tasks: tuple[str, ...], task_file: str | None, configured: tuple[str, ...]
) -> list[str]:
    """The queue's tasks: the arguments, then the file's; the settings' when neither is given."""
    from codingagent.queue.tasks import checked_tasks, parse_tasks

    found = checked_tasks(list(tasks), "the task arguments") if tasks else []
    if task_file is not None:
        with click.open_file(task_file, encoding="utf-8") as f:
            found += parse_tasks(f.read(), "stdin" if task_file == "-" else task_file)
    if not found and configured:
        found = checked_tasks(list(configured), "tasks in the settings")
    if not found:
        raise click.UsageError(
            'Give a TASK ("task one" "task two" for a queue), --tasks FILE, or tasks = [...] '
            "in codingagent.toml"
        )
    return found


def start_queue(
    root: Path,
    tasks: list[str],
    workspace: Path | None,
    stop_on_failure: bool,
    flags: dict[str, Any],
    model: ChatClient | None,
    source: SourceFor,
    watch: bool = True,
) -> None:
    """``codingagent start`` with a queue: write the queue file, then run it."""
    from codingagent.records.queues import QueueStore
    from codingagent.records.store import SessionStore

    store = SessionStore(root)
    store.ensure_dirs()
    queue = QueueStore(store).create(tasks, workspace, stop_on_failure)
    say(f"Queue {queue.queue_id}: {len(tasks)} tasks, one session each", "bold")
    run_queue(root, queue.queue_id, flags, model, source, watch=watch)


def queue_of(root: Path, session: str) -> str | None:
    """The unfinished queue whose task to run now is SESSION's, or the halted one whose task
    that halted it is, if any (for ``resume``)."""
    from codingagent.records.queues import QueueStore
    from codingagent.records.store import SessionStore

    store = SessionStore(root)
    found = QueueStore(store).of_session(store.resolve(session))
    return None if found is None else found.queue_id


def run_queue(
    root: Path,
    queue_id: str,
    flags: dict[str, Any],
    model: ChatClient | None,
    source: SourceFor,
    watch: bool = True,
    reopen: bool = False,
) -> None:
    """Run the queue from the task to run now (``reopen``: a halted queue goes on from the
    task that halted it); the summary, and the exit status."""
    from codingagent.queue.queue_runner import QueueRunner
    from codingagent.records.queues import QueueStore
    from codingagent.records.store import SessionStore
    from codingagent.sources.providers.client import ChatClient

    store = SessionStore(root)
    queues = QueueStore(store)
    workspace = queues.load(queue_id).workspace
    settings = run_settings(root, flags, Path(workspace) if workspace else None)
    profile = None if model is None else model.profile
    if model is not None:
        model.__exit__(None, None, None)  # each task asks with a client of its own

    def open_source(loop: SessionLoop) -> AbstractContextManager[ReplySource]:
        return source(loop, None if profile is None else ChatClient(profile))

    runner = QueueRunner(
        queues,
        settings,
        lambda session_id: session_loop(root, session_id, dict(flags), profile is not None),
        open_source,
        ConsoleQueueListener(),
    )
    try:
        end = runner.run(queue_id, watch, reopen)
    except KeyboardInterrupt:
        end = None
    if end is None or end.interrupted:
        queue = queues.load(queue_id)
        index = queue.position
        running = "" if index is None else f" {queue.tasks[index].session_id or ''}"
        say(f"Queue {queue_id} stopped. Continue it with: codingagent resume{running}".rstrip())
        sys.exit(Exit.INTERRUPTED)
    if not watch:
        return
    console.print(summary_table(store, end.queue))
    if end.queue.halted:
        say(f"The queue halted: {end.queue.halted}", "yellow")
    if not end.queue.succeeded:
        sys.exit(Exit.QUEUE_INCOMPLETE)


class ConsoleQueueListener:
    """The queue on the terminal: a line as each task starts and ends; after Ctrl-C, asks
    whether to skip the task or stop the queue (stop, without a terminal to ask)."""

    def task_started(self, queue: QueueState, index: int) -> None:
        entry = queue.tasks[index]
        console.print(
            safe_text(f"Task {index + 1}/{len(queue.tasks)}: ", "bold")
            + safe_text(shorten(entry.task, 100))
            + safe_text(f" (session {entry.session_id})", "dim")
        )

    def task_ended(self, queue: QueueState, index: int) -> None:
        entry = queue.tasks[index]
        outcome = entry.outcome.value
        why = f": {shorten(entry.reason, 200)}" if entry.reason else ""
        say(f"Task {index + 1}/{len(queue.tasks)} {outcome}{why}", STYLES.get(outcome, ""))

    def skip_or_stop(self, queue: QueueState, index: int) -> bool:
        if not sys.stdin.isatty():
            return False
        try:
            choice = click.prompt(
                f"Skip task {index + 1} and go on with the next (s), or stop the queue (q)?",
                type=click.Choice(["s", "q"]),
                default="q",
                err=True,
            )
        except (click.Abort, KeyboardInterrupt):
            return False
        return bool(choice == "s")


def summary_table(store: SessionStore, queue: QueueState) -> Table:
    from rich.table import Table

    from codingagent.queue.tasks import summary_rows

    table = Table(
        "#", "task", "session", "turns", "outcome", "time", "tokens in/out", "why",
        title=f"Queue {queue.queue_id}",
    )  # fmt: skip
    for row in summary_rows(store, queue):
        outcome = safe_text(row["outcome"], STYLES.get(row["outcome"], ""))
        tokens = "" if row["tokensIn"] is None else f"{row['tokensIn']:,}/{row['tokensOut'] or 0:,}"
        table.add_row(
            str(row["number"]),
            safe_text(shorten(row["task"], 40)),
            row["session"] or "",
            str(row["turns"]),
            outcome,
            "" if row["seconds"] is None else f"{row['seconds']:.0f} s",
            tokens,
            safe_text(shorten(row["reason"], 60), "dim"),
        )
    return table


@click.command(name="queue")
@click.argument("queue_ref", metavar="[QUEUE]", default="latest", required=False)
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the queue and its summary as JSON.")
@click.option("--skip", is_flag=True, help="Ask the queue's runner to skip the running task.")
def queue_command(queue_ref: str, root: Path, as_json: bool, skip: bool) -> None:
    """Show QUEUE (default: the latest): each task, its session, turns, outcome, time and
    tokens."""
    from codingagent.queue.tasks import summary_rows
    from codingagent.records.queues import QueueStore
    from codingagent.records.store import SessionStore

    store = SessionStore(root)
    queues = QueueStore(store)
    queue = queues.load(queues.resolve(queue_ref))
    if skip:
        session_id = queues.request_skip(queue.queue_id)
        say(f"Asked the queue's runner to skip the task of session {session_id}")
        return
    if as_json:
        value = json.loads(queue.to_json())
        value["summary"] = summary_rows(store, queue)
        value["succeeded"] = queue.succeeded
        click.echo(json.dumps(value, indent=2, ensure_ascii=False))
    else:
        from rich.console import Console

        Console(soft_wrap=True, markup=False, highlight=False).print(summary_table(store, queue))
