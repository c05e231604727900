"""How many tokens a prompt costs: the first prompt and a continuation prompt, with
``protocol = "every"`` and ``"first"``, on a small workspace and on one of 10,000 files.

    python benchmarks/prompts.py

Prints one markdown table (tokens are ``render.estimate_tokens``: about four characters a
token). Deterministic: no timing. Everything happens in a temporary folder; the continuation
prompt follows a typical reply (a REPLACE and a test run).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from codingagent.prompt.render import PromptOptions, estimate_tokens
from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.store import SessionStore
from codingagent.session.turn import TurnOptions, apply_reply

TASK = "Add a --verbose flag to cli.py that prints each step, with a test"
REPLY = """\
Session: {sid} Sequence: 1
I will add the flag and run the tests.
[REPLACE path="cli.py"]
<<<<<<< SEARCH
def main():
=======
def main(verbose=False):
>>>>>>> REPLACE
[/REPLACE]
[RUN_COMMAND]
python3 -c "print('ok')"
[/RUN_COMMAND]
"""


def small(root: Path) -> None:
    """A small project: a module, its test, a README."""
    root.mkdir(parents=True)
    (root / "cli.py").write_text("def main():\n    print('hello')\n")
    (root / "test_cli.py").write_text("import cli\n\ndef test_main():\n    cli.main()\n")
    (root / "README.md").write_text("# demo\n")


def large(root: Path) -> None:
    """10,000 small source files in folders of 100, and cli.py."""
    small(root)
    for i in range(10_000):
        folder = root / "src" / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"mod{i % 100:02d}.py").write_text(f"VALUE = {i}\n")


def prompts(folder: Path, protocol: str) -> tuple[int, int]:
    """Tokens of the first prompt and of the continuation prompt after REPLY."""
    store = SessionStore(folder / "run")
    shell = Shell(timeout=10, sandbox="auto")
    options = PromptOptions(protocol=protocol)  # type: ignore[arg-type]
    state, first = start_session(
        store, TASK, folder / "ws", options, environment=lambda ws: probe(shell, ws)
    )
    reply = REPLY.format(sid=state.session_id).encode()
    report = apply_reply(
        store, state.session_id, Reply(reply, "r.txt"), TurnOptions(shell=shell, prompt=options)
    )
    assert report.outbox is not None
    return (
        estimate_tokens(first.read_text(encoding="utf-8")),
        estimate_tokens(report.outbox.read_text(encoding="utf-8")),
    )


def main() -> int:
    rows: list[list[str]] = []
    scratch = Path(tempfile.mkdtemp(prefix="ca-prompts-"))
    try:
        for name, make in (("small (3 files)", small), ("10,000 files", large)):
            results = {}
            for protocol in ("every", "first"):
                folder = scratch / f"{make.__name__}-{protocol}"
                make(folder / "ws")
                results[protocol] = prompts(folder, protocol)
            every, first = results["every"], results["first"]
            counts = [f"{n:,}" for n in (every[0], first[0], every[1], first[1])]
            rows.append([name, *counts, f"{first[1] / every[1]:.0%}"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        "| workspace | first prompt, every | first prompt, first | continuation, every "
        "| continuation, first | continuation, first / every |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
