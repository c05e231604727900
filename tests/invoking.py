"""The command line as tests drive it: click's CliRunner, in a run directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

from codingagent.frontends.cli import main


def run(root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root)], input=input)


@dataclass
class Run:
    """A run folder and workspace driven through ``codingagent start`` and ``step``."""

    root: Path
    ws: Path
    session: str = ""
    replies: int = 0

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--root", str(self.root)])

    def start(self, *flags: str) -> None:
        result = self.cli("start", "t", "--no-watch", "--workspace", str(self.ws), *flags)
        assert result.exit_code == 0, result.output
        (state,) = (self.root / "sessions").glob("*.json")
        self.session = state.stem

    def step(self, reply: str, *flags: str) -> Result:
        """Apply ``reply`` (saved beside the run folder); the result of ``codingagent step``."""
        self.replies += 1
        path = self.root.parent / f"reply{self.replies}.txt"
        path.write_text(reply)
        result = self.cli("step", self.session, str(path), *flags)
        assert result.exit_code == 0, result.output
        return result

    def prompt(self) -> str:
        (latest,) = sorted((self.root / "outbox").glob("*.txt"))[-1:]
        return latest.read_text()
