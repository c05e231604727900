"""RUN_COMMAND: results, output and timeouts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from executing import only, posix_only, run

from codingagent.protocol.commands import RunCommand
from codingagent.sandbox.shell import Shell, ShellResult
from codingagent.workspace import Workspace


class _TimedOutShell(Shell):
    """A shell that reports a timeout at once, to check the wording for the default timeout."""

    def run(
        self,
        command: str,
        cwd: Path,
        secret_files: Iterable[str] = (),
        layer: Path | None = None,
    ) -> ShellResult:
        return ShellResult(None, "partial\n", timed_out=True, duration_s=30.0, cut_chars=0)


@posix_only
def test_run_command_results(ws: Workspace) -> None:
    outcome = run(
        ws,
        RunCommand(line=1, command="echo hi"),
        RunCommand(line=2, command="echo oops >&2; exit 3"),
        RunCommand(line=3, command="true"),
        RunCommand(line=4, command="echo a\necho b"),
        RunCommand(line=5, command="  \n "),
        RunCommand(line=6, command="pwd -P"),
    )
    assert [r.lines() for r in outcome.results] == [
        ["[OK] RUN_COMMAND: Ran 'echo hi' (exit code 0)", "  Output: hi"],
        ["[FAILED] RUN_COMMAND: Ran 'echo oops >&2; exit 3' (exit code 3)", "  Output: oops"],
        ["[OK] RUN_COMMAND: Ran 'true' (exit code 0)", "  Output: (no output)"],
        ["[OK] RUN_COMMAND: Ran 'echo a ...' (exit code 0)", "  Output:", "    a", "    b"],
        ["[FAILED] RUN_COMMAND: No command given"],
        ["[OK] RUN_COMMAND: Ran 'pwd -P' (exit code 0)", f"  Output: {ws.root}"],
    ]
    assert outcome.results[0].output == "hi\n"


@posix_only
def test_run_command_timeout(ws: Workspace) -> None:
    result = only(run(ws, RunCommand(line=1, command="sleep 5"), shell=Shell(timeout=0.25)))
    assert result.headline == "[FAILED] RUN_COMMAND: 'sleep 5' timed out after 0.25 s"
    assert result.output == "(no output)"


@pytest.mark.parametrize(("timeout", "shown"), [(30.0, "30 s"), (2.5, "2.5 s"), (120, "120 s")])
def test_timeout_wording(ws: Workspace, timeout: float, shown: str) -> None:
    result = only(
        run(ws, RunCommand(line=1, command="make\nmake test"), shell=_TimedOutShell(timeout))
    )
    assert result.headline == f"[FAILED] RUN_COMMAND: 'make ...' timed out after {shown}"
    assert result.output == "partial\n"
