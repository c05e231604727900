"""Slips a model or a chat page makes, and refusals that teach (issue 23, docs/admission.md).

Part of the reply corpus (tests/replies/, one file a case, the exact result text the model sees
asserted; the harness is :mod:`test_replies`), and a property: for random replies, every line
that holds a tag given as a command is accounted for (applied, noted or refused), never
silently dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples
from test_replies import CALC, Case, check_case

from codingagent.prompt.render import NO_COMMANDS_NOTE as NO_COMMANDS
from codingagent.protocol.commands import CreateFile, ParseError
from codingagent.protocol.parser import TAGS, parse_spans, split_lines
from codingagent.protocol.scan import MAX_SLIPS, commands_and_slips, slips

COMMANDS = ", ".join(TAGS)

SLIP_CASES: dict[str, Case] = {
    "slip_two_tags_on_one_line": Case(
        [
            "[NOTE] reply line 5: a second tag follows [READ_FILE ...] on the same line "
            "('[READ_FILE path=\"notes.md\"]'), so it was not run; put each command at the start "
            "of a line of its own",
            "[OK] READ_FILE: 'calc.py' is shown under Requested File Contents",
        ]
    ),
    "slip_done_inside_prose": Case(
        [
            "[NOTE] reply line 7: [DONE] stands inside a line of prose ('The calculator works, so "
            "the task is finished. [DONE]'), so it was not taken as a command; to run it, write "
            "the tag at the start of a line of its own",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import calc; print(calc.add(1, 2))\"' "
            "(exit code 0)",
        ],
    ),
    "slip_unknown_tag": Case(
        [
            f"[NOTE] reply line 3: [WRITE_FILE] is not a command, so the line was ignored; the "
            f"commands are {COMMANDS}",
            "[OK] RUN_COMMAND: Ran 'ls' (exit code 0)",
        ],
        after={"hello.py": None},
    ),
    "slip_tag_given_in_prose_and_stray_closing": Case(
        [
            '[NOTE] reply line 3: [CREATE_FILE path="mul.py"] stands inside a line of prose '
            "('Here is the new module: [CREATE_FILE path=\"mul.py\"]'), so it was not taken as a "
            "command; to run it, write the tag at the start of a line of its own",
            "[NOTE] reply line 6: [/CREATE_FILE] closes no open command, so it was ignored; the "
            "command it should close must start with its own tag at the start of a line",
        ],
        after={"mul.py": None},
        outbox=(NO_COMMANDS,),
    ),
    "chat_page_residue_above_code": Case(
        [
            "[OK] CREATE_FILE: Created 'hello.py' (removed the chat page's 'python', 'Copy code' "
            "around the code, not part of it)",
            "[OK] RUN_COMMAND: Ran 'python3 hello.py' (exit code 0); removed the chat page's "
            "'bash', 'Copy code' around the code, not part of it",
        ],
        after={"hello.py": 'print("hello")\n'},
        outbox=("  Output: hello\n",),
    ),
    "replace_tabs_against_spaces": Case(
        [
            "[FAILED] REPLACE: The block at reply line 4: the SEARCH text is not in 'calc.py': "
            "lines 8-9 (shown below) differ from it only in tabs against spaces (SEARCH has tabs "
            "where the file has spaces); SEARCH must repeat the file's lines exactly, tabs and "
            "spaces included; nothing was changed"
        ],
        after={"calc.py": CALC},
    ),
    "path_with_workspace_prefix": Case(
        [
            "[FAILED] READ_FILE: REJECTED: Path is outside workspace ('/workspace/calc.py' is "
            "absolute); paths are relative to the workspace folder: write 'calc.py'"
        ]
    ),
    "edit_file_shows_what_it_replaced": Case(
        ["[OK] EDIT_FILE: Replaced line 8 of 'calc.py' (1 line replaced by 1)"],
        after={"calc.py": CALC.replace("def subtract(a, b):\n", "    return a - b  # minus\n")},
        outbox=("  Output:\n    The lines replaced were:\n       8 | def subtract(a, b):\n",),
    ),
    "prose_only_no_command": Case([], outbox=(f"## Previous Command Results\n{NO_COMMANDS}",)),
}


@pytest.mark.parametrize("name", sorted(SLIP_CASES))
def test_slip(tmp_path: Path, name: str) -> None:
    check_case(tmp_path, name, SLIP_CASES[name])


def test_a_flood_of_slips_is_noted_in_a_bounded_number_of_notes():
    commands, found = commands_and_slips("All done. [DONE]\n" * 1000)
    assert commands == []
    assert len(found) == MAX_SLIPS + 1
    assert found[-1].note == "and 990 more lines like these were not run either"


def test_a_tag_mentioned_mid_sentence_is_prose_not_a_slip():
    reply = "A REPLACE is safer than [EDIT_FILE] with made-up numbers; [DONE] comes last.\n"
    assert commands_and_slips(reply) == ([], [])


def test_a_body_holding_tags_is_content_not_slips():
    reply = '[CREATE_FILE path="doc.md"]\nEnd with [DONE]\n[WRITE_FILE path="x"]\n[/CREATE_FILE]\n'
    commands, found = commands_and_slips(reply)
    assert found == [] and isinstance(commands[0], CreateFile)
    assert commands[0].content == 'End with [DONE]\n[WRITE_FILE path="x"]\n'


# --- the property: nothing that looks like a command vanishes ------------------------------

NAMES = sorted(TAGS)
# A tag given as a command, by the test's own reading: with attributes, or ending its line.
_NAME = "(?:" + "|".join(NAMES) + ")"
GIVEN = re.compile(rf"\[{_NAME}\](?=\s*$)|\[{_NAME}\s[^\]]*=[^\]]*\]")
ATTRIBUTES = {
    "READ_FILE": ' path="a.py"',
    "DELETE_FILE": ' path="a.py"',
    "SEARCH": ' query="x"',
    "CREATE_FILE": ' path="a.py"',
    "EDIT_FILE": ' path="a.py" start_line="1" end_line="1"',
    "REPLACE": ' path="a.py"',
}
tags = st.sampled_from(NAMES).map(lambda name: f"[{name}{ATTRIBUTES.get(name, '')}]")
closings = st.sampled_from(NAMES).map(lambda name: f"[/{name}]")
prose = st.sampled_from(["Let me see.", "print(1)", "- a list item", "", "```python", "```"])
pieces = st.one_of(
    tags,
    closings,
    prose,
    st.tuples(prose, tags).map(lambda p: f"{p[0]} {p[1]}"),  # a tag at the end of prose
    st.tuples(tags, tags).map(lambda p: f"{p[0]} {p[1]}"),  # two tags on one line
    st.tuples(st.sampled_from(["*", "**", "`"]), tags).map(lambda p: f"{p[0]}{p[1]}{p[0]}"),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(pieces, max_size=25))
def test_every_line_that_gives_a_tag_is_run_noted_or_refused(lines: list[str]) -> None:
    text = "\n".join(lines)
    reply_lines = split_lines(text)
    spans = parse_spans(reply_lines)
    noted = {slip.line for slip in slips(reply_lines, spans)}
    inside = {i + 1 for span in spans for i in range(span.start, span.end)}
    openings = {span.start + 1: span for span in spans}
    for number, line in enumerate(reply_lines, 1):
        given_tags = GIVEN.findall(line)
        if not given_tags and not re.fullmatch(r"\s*\[/[A-Z_]+\]\s*", line):
            continue  # no tag given as a command on this line
        if number in noted:
            continue
        assert number in inside, f"line {number} {line!r} was dropped in silence"
        span = openings.get(number)
        bodiless = span is not None and not isinstance(span.command, ParseError)
        if span is not None and bodiless and TAGS[span.command.kind].body is None:
            assert len(given_tags) <= 1, f"a second tag on line {number} {line!r} vanished"


def test_an_unclosed_done_is_read_as_the_protocol_says():
    from codingagent.protocol.commands import Done
    from codingagent.protocol.manual import protocol_text

    text = " ".join(protocol_text(30, 4000).split())
    assert (
        "Only [/DONE] may be left out: a [DONE] line then takes the rest of the reply as its "
        "summary." in text
    )
    assert commands_and_slips("Finished.\n[DONE]\nAll tests pass.\n") == (
        [Done(line=2, summary="All tests pass.")],
        [],
    )
