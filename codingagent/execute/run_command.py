"""RUN_COMMAND: one shell command in the workspace, through the shell (sandbox, limits), the
workspace's secret files kept from it where the sandbox can (docs/secrets.md).

Around it, the turn's ``watch`` (lent to the executor: :attr:`Turn.watch`) keeps what the
command changes so that undo can put it back, and the result names the files it created,
changed or deleted.
"""

from __future__ import annotations

from codingagent.execute.context import CommandFailed, Success, Turn, fence_note, noted
from codingagent.protocol.commands import RunCommand
from codingagent.secrecy.masking import for_session
from codingagent.secrecy.secret_files import SKIP_DIRS, secret_files
from codingagent.workspace import display_name
from codingagent.workspace.snapshot import CommandChanges

SHOWN_PATHS = 5  # files a result names; the others are counted


def run_command(cmd: RunCommand, turn: Turn) -> Success:
    shown = cmd.command.strip()
    if not shown:
        raise CommandFailed("No command given")
    first, _, more = shown.partition("\n")
    shown = f"{first} ..." if more else first
    root, tree = turn.workspace.root, turn.workspace.tree
    masker = for_session(turn.session_id)
    allow = turn.shell.secret_files_allow
    found = secret_files(root, allow, masker, tree.stats(SKIP_DIRS), tree.version)
    if turn.outcome.secret_files is None:
        turn.outcome.secret_files = found
    hidden = [str(root / rel) for rel in found.hidden] if turn.shell.hides_files else []
    watch = turn.watch
    layer = watch.before(f"RUN_COMMAND '{shown}'") if watch is not None else None
    result = turn.shell.run(cmd.command, root, hidden, layer)
    turn.workspace.forget_paths()  # it may have made a symlink, or a folder one
    changes = watch.after() if watch is not None else CommandChanges()
    if layer is None:
        tree.drop()  # it wrote to the workspace: only a new walk knows what
    turn.outcome.written.clear()  # a command may change any file: what file commands wrote
    # before it is read back
    known = set(turn.outcome.changed)  # real relative paths already: no lookup that could fail
    turn.outcome.changed += [path for path in changes.paths if path not in known]
    for path in changes.paths:
        turn.outcome.shown.pop(path, None)  # the LLM no longer knows what the file holds
    if not result.approved:
        raise CommandFailed("not approved by the user")
    output = result.output or "(no output)"
    if result.timed_out:
        summary = f"'{shown}' timed out after {turn.shell.timeout:g} s"
        raise CommandFailed(noted(summary, describe(changes)), output)
    ran = noted(f"Ran '{shown}' (exit code {result.exit_code})", fence_note(False, cmd.residue))
    ran = noted(ran, describe(changes))
    if result.exit_code != 0:
        raise CommandFailed(ran, output)
    return Success(ran, output)


def describe(changes: CommandChanges) -> str:
    """What the command changed, for its result: the first few files of each kind, a count.
    A name that is not UTF-8 is shown with ``\\xff`` escapes, as the listing shows it."""
    parts = []
    budget = SHOWN_PATHS
    for verb, paths in (
        ("created", changes.created),
        ("changed", changes.changed),
        ("deleted", changes.deleted),
    ):
        if not paths:
            continue
        part = f"{verb} {len(paths)} file{'s' if len(paths) != 1 else ''}"
        if budget > 0:
            more = len(paths) - budget
            names = ", ".join(map(display_name, paths[:budget]))
            part += f" ({names}{f' and {more} more' if more > 0 else ''})"
        parts.append(part)
        budget -= len(paths)
    if changes.unkept:
        unkept = "; ".join(map(display_name, changes.unkept[:SHOWN_PATHS]))
        parts.append(f"not kept for undo: {unkept}")
    if changes.untracked:
        parts.append(
            "changed in ignored folders, not kept for undo: "
            + ", ".join(map(display_name, changes.untracked[:SHOWN_PATHS]))
            + (
                f" and {len(changes.untracked) - SHOWN_PATHS} more"
                if len(changes.untracked) > SHOWN_PATHS
                else ""
            )
        )
    return "it " + "; ".join(parts) if parts else ""
