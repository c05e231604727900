"""RUN_COMMAND: one shell command in the workspace, through the shell (sandbox, limits), the
workspace's secret files kept from it where the sandbox can (docs/secrets.md)."""

from __future__ import annotations

from codingagent.execute.context import CommandFailed, Success, Turn
from codingagent.protocol.commands import RunCommand
from codingagent.secrecy.masking import for_session
from codingagent.secrecy.secret_files import secret_files


def run_command(cmd: RunCommand, turn: Turn) -> Success:
    shown = cmd.command.strip()
    if not shown:
        raise CommandFailed("No command given")
    first, _, more = shown.partition("\n")
    shown = f"{first} ..." if more else first
    root = turn.workspace.root
    found = secret_files(root, turn.shell.secret_files_allow, for_session(turn.session_id))
    hidden = [str(root / rel) for rel in found.hidden] if turn.shell.hides_files else []
    result = turn.shell.run(cmd.command, root, hidden)
    if not result.approved:
        raise CommandFailed("not approved by the user")
    output = result.output or "(no output)"
    if result.timed_out:
        raise CommandFailed(f"'{shown}' timed out after {turn.shell.timeout:g} s", output)
    ran = f"Ran '{shown}' (exit code {result.exit_code})"
    if result.exit_code != 0:
        raise CommandFailed(ran, output)
    return Success(ran, output)
