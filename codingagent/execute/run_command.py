"""RUN_COMMAND: one shell command in the workspace, through the shell (sandbox, limits)."""

from __future__ import annotations

from codingagent.execute.context import CommandFailed, Success, Turn
from codingagent.protocol.commands import RunCommand


def run_command(cmd: RunCommand, turn: Turn) -> Success:
    shown = cmd.command.strip()
    if not shown:
        raise CommandFailed("No command given")
    first, _, more = shown.partition("\n")
    shown = f"{first} ..." if more else first
    result = turn.shell.run(cmd.command, turn.workspace.root)
    if not result.approved:
        raise CommandFailed("not approved by the user")
    output = result.output or "(no output)"
    if result.timed_out:
        raise CommandFailed(f"'{shown}' timed out after {turn.shell.timeout:g} s", output)
    ran = f"Ran '{shown}' (exit code {result.exit_code})"
    if result.exit_code != 0:
        raise CommandFailed(ran, output)
    return Success(ran, output)
