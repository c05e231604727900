"""Commands that read sessions and change nothing in them: ``log``, ``sessions``, ``show`` and
``diff``.
Their data goes to stdout (tables, JSON, the prompt), so it can be piped.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from codingagent.frontends.console import (
    STYLE,
    aligned,
    console,
    error,
    printable,
    safe_text,
    say,
    shorten,
)
from codingagent.frontends.options import root_option, session_argument


@click.command()
@session_argument
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the log as JSON.")
@click.option("--thinking", is_flag=True, help="Also print what a reasoning model thought.")
def log(session: str, root: Path, as_json: bool, thinking: bool) -> None:
    """Show each turn of SESSION (default: the latest): when, which reply, each command's
    result and duration, and how much the model thought (never run: docs/protocol.md)."""
    from codingagent.records.store import SessionStore
    from codingagent.session.reading import turns
    from codingagent.state import CommandResult

    store = SessionStore(root)
    session_id = store.resolve(session)
    entries = []
    for turn in turns(store, store.load(session_id)):
        entry = {**turn.meta, "results": turn.results}
        entry["thinking"] = turn.thinking
        entries.append(entry)
    if as_json:
        click.echo(json.dumps(entries, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    out = Console(soft_wrap=True, highlight=False, markup=False)
    if not entries:
        out.print(f"Session {session_id} has no turns yet")
    for entry in entries:
        out.print(
            safe_text(
                f"Turn {entry['sequence']}  {entry['appliedAt']}  {entry['replyFile']}  "
                f"{entry['durationMs']:.0f} ms",
                style="bold",
            )
        )
        if "model" in entry:
            tokens = [
                ("?" if n is None else f"{n:,}") for n in (entry["tokensIn"], entry["tokensOut"])
            ]
            out.print(
                safe_text(
                    f"  model {entry['model']}: {tokens[0]} tokens in, {tokens[1]} out, "
                    f"{entry['modelSeconds']:.1f} s",
                    style="dim",
                )
            )
        if entry["thinking"]:
            said = f"  thought for {len(entry['thinking']):,} characters (never run)"
            out.print(safe_text(said, style="dim"))
            if thinking:
                for line in entry["thinking"].splitlines():
                    out.print(safe_text(f"    | {line}", style="dim"))
        for result in map(CommandResult.model_validate, entry["results"]):
            out.print(
                safe_text(f"  {result.headline}", style=STYLE[result.success])
                + safe_text(f"  ({result.duration_ms:.0f} ms)", style="dim")
            )
        for line in entry.get("autoRun", []):
            out.print(safe_text(f"  Runs code outside the sandbox: {line}", style="bold red"))
        if entry.get("masked"):
            kinds = entry.get("maskedKinds") or {}
            by_kind = ": " + ", ".join(f"{kind} {n}" for kind, n in kinds.items()) if kinds else ""
            out.print(
                safe_text(f"  {entry['masked']} secret(s) masked in the next prompt{by_kind}")
            )


@click.command()
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
def sessions(root: Path, as_json: bool) -> None:
    """List the sessions, most recent first (damaged ones too, marked so)."""
    from codingagent.records.summaries import age, summaries

    folder = root.resolve() / "sessions"
    if as_json:  # whole states: data for scripts
        from codingagent.records.store import SessionStore
        from codingagent.session.reading import states

        click.echo(
            json.dumps([json.loads(s.to_json()) for s in states(SessionStore(root))], indent=2)
        )
        return
    rows = summaries(folder)  # only what the table shows: fast for a thousand
    if not rows:
        console.print(safe_text(f"No sessions in {folder}"))
        return
    table = [("id", "task", "turn", "state", "age")] + [
        (
            row.session_id,
            printable(shorten(row.task, 50)),
            str(row.sequence),
            row.status,
            age(row.updated_at),
        )
        for row in rows
    ]
    click.echo(aligned(table))
    for row in rows:
        if row.damaged:
            error(f"damaged session file: {row.damaged}")


@click.command()
@session_argument
@root_option
@click.option("--copy", is_flag=True, help="Also copy the prompt to the clipboard.")
@click.option(
    "--full",
    is_flag=True,
    help="With the full PROTOCOL, Environment and listing, for a new chat (protocol = first).",
)
@click.option("--settings", "settings_", is_flag=True, help="Print the settings in force instead.")
def show(session: str, root: Path, copy: bool, full: bool, settings_: bool) -> None:
    """Print the current prompt of SESSION (default: the latest) to stdout."""
    from codingagent.frontends.kept import MODEL_KEYS, in_force
    from codingagent.prompt.render import PromptOptions
    from codingagent.records.store import SessionStore
    from codingagent.session.reading import full_prompt, standing
    from codingagent.settings import load_settings

    store = SessionStore(root)
    session_id = store.resolve(session)
    if settings_:
        click.echo("\n".join(in_force(root, store.load(session_id))))
        return
    options = store.load(session_id).options
    prompt = PromptOptions.from_settings(
        load_settings(root, {k: v for k, v in options.items() if k not in MODEL_KEYS})
    )
    now = standing(store, session_id, prompt, with_prompt=not full)
    state = now.state
    if state.is_complete:
        say(f"Session {state.session_id} is complete: {state.summary or ''}")
        return
    if state.question is not None:
        say(f"Session {state.session_id} waits for your answer to the LLM's question:")
        say(state.question, "bold")
        say(f'Answer with: codingagent answer {state.session_id} "..."')
        return
    if now.review is not None:  # the prompt below is the one the held reply answered
        say(f"A reply's changes ({now.review.summary()}) wait for your review: codingagent review")
    text = full_prompt(store, state, prompt) if full else now.prompt or ""
    click.echo(text, nl=False)
    if copy:
        from codingagent.sources.pasteboard import copy as copy_text

        problem = copy_text(text)
        say("Copied to the clipboard." if problem is None else f"Not copied: {problem}")


@click.command(name="diff")
@session_argument
@root_option
@click.option("--turn", type=click.IntRange(min=1), metavar="N", help="Only what turn N changed.")
@click.option(
    "--color/--no-color", default=None, help="Color the diff (default: on a terminal only)."
)
def diff_command(session: str, root: Path, turn: int | None, color: bool | None) -> None:
    """Print what SESSION (default: the latest) changed in the workspace, commands' changes
    included, as one unified diff (git's a/ b/ paths). On a terminal it is paged and colored,
    as git does; piped, it is plain, and `patch -R -p1` of it puts the files back."""
    from codingagent.records.store import SessionStore
    from codingagent.session.reading import patch

    store = SessionStore(root)
    session_id = store.resolve(session)
    text, binary = patch(store, session_id, turn)
    for path in binary:
        say(f"{path}: not text, so not in the patch (undo puts it back)")
    if not text:
        say(f"Session {session_id} changed no file" + (f" in turn {turn}" if turn else ""))
        return
    terminal = sys.stdout.isatty()
    if color if color is not None else terminal:
        text = "".join(_colored(line) for line in text.splitlines(keepends=True))
    if terminal:
        os.environ.setdefault("LESS", "FRX")  # as git pages: quit if one screen, keep colors
        click.echo_via_pager(text, color=bool(color if color is not None else terminal))
    else:
        click.echo(text, nl=False, color=bool(color))


_DIFF_STYLE = (("diff --git", "bold"), ("+++", "bold"), ("---", "bold"), ("@@", "cyan"))


def _colored(line: str) -> str:
    body = line.rstrip("\n")
    end = line[len(body) :]
    for start, style in _DIFF_STYLE:
        if body.startswith(start):
            return (
                click.style(body, fg="cyan" if style == "cyan" else None, bold=style == "bold")
                + end
            )
    if body.startswith("+"):
        return click.style(body, fg="green") + end
    if body.startswith("-"):
        return click.style(body, fg="red") + end
    return line
