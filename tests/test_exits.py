"""One source for the exit codes (codingagent.frontends.exits): the help texts print from it,
and the README, docs/admission.md and docs/queue.md say the same."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from codingagent.frontends import exits
from codingagent.frontends.cli import main
from codingagent.frontends.exits import Exit
from codingagent.session.seams import StopReason

ROOT = Path(__file__).resolve().parent.parent

# A word each place that explains a code must use for it.
MEANS = {
    Exit.OK: "",
    Exit.PROBLEM: "problem",
    Exit.USAGE: "usage",
    Exit.TURN_LIMIT: "turn limit",
    Exit.NO_COMMANDS: "no command",
    Exit.REFUSED: "not applied",
    Exit.ENDPOINT_FAILED: "endpoint",
    Exit.QUESTION: "question",
    Exit.QUEUE_INCOMPLETE: "queue",
    Exit.INTERRUPTED: "ctrl-c",
}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return _flat(result.output)


def _every_help() -> dict[str, str]:
    helps = {"codingagent": _help()}
    for name in main.list_commands(click.Context(main)):
        helps[name] = _help(name)
    return helps


def test_the_main_help_lists_every_code_from_the_table():
    assert _flat(exits.summary()) in _help()
    for code in Exit:
        assert re.search(rf"\b{int(code)}\b", exits.summary()), code


def test_start_says_how_a_queue_exits_from_the_table():
    assert _flat(exits.queue_summary()) in _help("start")


def test_no_help_text_names_an_exit_code_the_table_does_not_have():
    pattern = re.compile(r"\bexits?(?: code| status)? (\d+)|\b(\d+) when", re.I)
    named = {
        name: [int(a or b) for a, b in pattern.findall(text)]
        for name, text in _every_help().items()
    }
    assert {name: codes for name, codes in named.items() if set(codes) - set(Exit)} == {}
    # the check reads numbers where a help text names one
    assert 8 in named["start"]


def test_every_stop_of_a_model_run_has_its_code():
    stops = {reason.value for reason in StopReason} - {"complete", "interrupted"}
    assert stops == set(exits.MODEL_STOP)


def test_the_readme_says_what_the_help_says():
    assert _flat(exits.summary()) in _flat((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_docs_queue_section_says_what_start_help_says():
    assert _flat(exits.queue_summary()) in _flat((ROOT / "docs/queue.md").read_text())


def _table(doc: str, heading: str) -> dict[int, str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: section.index("\n#", 1)] if "\n#" in section[1:] else section
    return {int(m[1]): m[2].lower() for m in re.finditer(r"^\| (\d+) \| (.*) \|$", section, re.M)}


@pytest.mark.parametrize(
    ("doc", "heading", "codes"),
    [
        ("docs/admission.md", "### Exit codes", set(Exit)),
        ("docs/queue.md", "## Exit status", {0, 1, 2, 8, 130}),
    ],
)
def test_the_docs_tables_agree_with_the_table(doc, heading, codes):
    rows = _table(doc, heading)
    assert set(rows) == codes
    assert {code: cause for code, cause in rows.items() if MEANS[Exit(code)] not in cause} == {}
