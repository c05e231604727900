"""The command line as tests drive it: click's CliRunner, in a run directory."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from codingagent.frontends.cli import main


def run(root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root)], input=input)
