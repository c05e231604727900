"""Tests for codingagent.protocol.parser: the reply grammar of protocol 1.0 and its tolerances."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from sampling import examples

from codingagent.protocol.commands import (
    Command,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    Replace,
    ReplaceBlock,
    RunCommand,
    Search,
)
from codingagent.protocol.parser import MAX_ATTRIBUTES, parse
from codingagent.protocol.scan import reply_echo


def unclosed(name: str, line: int) -> ParseError:
    message = f"no closing [/{name}] tag; this command and the rest of the reply were ignored"
    return ParseError(line=line, command=name, message=message)


def error(name: str, line: int, message: str) -> ParseError:
    return ParseError(line=line, command=name, message=message)


# --- each command kind -------------------------------------------------------------------------


def test_create_file_keeps_body_verbatim() -> None:
    reply = '[CREATE_FILE path="src/app.py"]\ndef f():\n    return 1\n\n\n[/CREATE_FILE]\n'
    content = "def f():\n    return 1\n\n\n"
    assert parse(reply) == [CreateFile(line=1, path="src/app.py", content=content)]


def test_create_file_with_empty_body_has_empty_content() -> None:
    assert parse('[CREATE_FILE path="empty.txt"]\n[/CREATE_FILE]') == [
        CreateFile(line=1, path="empty.txt", content="")
    ]


def test_create_file_with_one_blank_body_line_is_one_newline() -> None:
    assert parse('[CREATE_FILE path="a"]\n\n[/CREATE_FILE]') == [
        CreateFile(line=1, path="a", content="\n")
    ]


def test_edit_file() -> None:
    reply = '[EDIT_FILE path="a.py" start_line="3" end_line="4"]\n    x = 2\n[/EDIT_FILE]'
    assert parse(reply) == [
        EditFile(line=1, path="a.py", start_line=3, end_line=4, content="    x = 2\n")
    ]


def test_delete_and_read_file_are_self_closing() -> None:
    reply = '[DELETE_FILE path="old.txt"]\n[READ_FILE path="src/a.py"]\n'
    assert parse(reply) == [DeleteFile(line=1, path="old.txt"), ReadFile(line=2, path="src/a.py")]


def test_run_command_trims_blank_lines_around_it_only() -> None:
    reply = "[RUN_COMMAND]\n\n  \ncd src &&\n\n  make  \n\n[/RUN_COMMAND]"
    assert parse(reply) == [RunCommand(line=1, command="cd src &&\n\n  make  ")]


def test_run_command_with_blank_body_is_empty() -> None:
    assert parse("[RUN_COMMAND]\n   \n[/RUN_COMMAND]") == [RunCommand(line=1, command="")]


def test_message_and_done_are_stripped() -> None:
    reply = "[MESSAGE]\n\n  Hello\n  there  \n\n[/MESSAGE]\n[DONE]\n Built it. \n[/DONE]"
    assert parse(reply) == [
        Message(line=1, text="Hello\n  there"),
        Done(line=7, summary="Built it."),
    ]


# --- prose, fences, line endings -----------------------------------------------------------------

REPLY = """\
Sure! I'll create the file first.

[CREATE_FILE path="hello.py"]
print("hi")
[/CREATE_FILE]

Now let's run it:
[RUN_COMMAND]
python hello.py
[/RUN_COMMAND]
That should print hi. [Note] unknown words in brackets are prose.
[NOTE]
[DONE]
Created hello.py.
[/DONE]
Thanks!
"""

REPLY_COMMANDS = [
    CreateFile(line=3, path="hello.py", content='print("hi")\n'),
    RunCommand(line=8, command="python hello.py"),
    Done(line=13, summary="Created hello.py."),
]


def test_prose_between_and_around_commands_is_ignored() -> None:
    assert parse(REPLY) == REPLY_COMMANDS


def test_empty_and_prose_only_replies_have_no_commands() -> None:
    assert parse("") == []
    assert parse("I think we are done, see [DONE] below? No.\n[TODO] later\n") == []


@pytest.mark.parametrize("fence", ["```", "```text", "~~~"])
def test_reply_wrapped_in_code_fence(fence: str) -> None:
    closing = fence[:3]
    reply = f"{fence}\n{REPLY}{closing}\n"
    assert parse(reply) == [c.model_copy(update={"line": c.line + 1}) for c in REPLY_COMMANDS]


def test_each_command_wrapped_in_its_own_fence() -> None:
    reply = '```\n[READ_FILE path="a"]\n```\ntext\n~~~\n[MESSAGE]\nhi\n[/MESSAGE]\n~~~\n'
    assert parse(reply) == [ReadFile(line=2, path="a"), Message(line=6, text="hi")]


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"])
def test_line_endings(newline: str) -> None:
    reply = REPLY.replace("\n", newline)
    assert parse(reply) == REPLY_COMMANDS


def test_mixed_line_endings_count_crlf_as_one_break() -> None:
    reply = 'a\r\nb\rc\n[READ_FILE path="x"]\r\n\r\n[DELETE_FILE path="y"]'
    assert parse(reply) == [ReadFile(line=4, path="x"), DeleteFile(line=6, path="y")]


def test_leading_bom_is_stripped() -> None:
    assert parse('\ufeff[READ_FILE path="a"]\n[MESSAGE]hi[/MESSAGE]') == [
        ReadFile(line=1, path="a"),
        Message(line=2, text="hi"),
    ]


def test_only_one_bom_is_stripped_and_only_at_the_start() -> None:
    assert parse('\ufeff\ufeff[READ_FILE path="a"]\n') == []


def test_trailing_and_leading_spaces_on_tag_lines() -> None:
    reply = '  [CREATE_FILE path="a"]   \t\nbody  \n\t[/CREATE_FILE]  \n  [DONE]  \nok\n [/DONE] '
    assert parse(reply) == [
        CreateFile(line=1, path="a", content="body  \n"),
        Done(line=4, summary="ok"),
    ]


def test_form_feed_and_unicode_line_separators_survive_in_body() -> None:
    body = "a\fb\n\x0bc\x1cd\x85e\u2028f\u2029g"
    reply = f'[CREATE_FILE path="f.txt"]\n{body}\n[/CREATE_FILE]\n[READ_FILE path="g"]'
    assert parse(reply) == [
        CreateFile(line=1, path="f.txt", content=body + "\n"),
        ReadFile(line=5, path="g"),
    ]


# --- tag names and attributes ----------------------------------------------------------------


def test_tag_names_in_any_case() -> None:
    reply = (
        '[create_file path="a"]\nx\n[/Create_File]\n'
        '[Edit_File path="b" start_line="1" end_line="1"]\ny\n[/edit_file]\n'
        '[read_file path="c"]\n[Run_Command]\nls\n[/RUN_command]\n[done]bye[/DONE]'
    )
    assert parse(reply) == [
        CreateFile(line=1, path="a", content="x\n"),
        EditFile(line=4, path="b", start_line=1, end_line=1, content="y\n"),
        ReadFile(line=7, path="c"),
        RunCommand(line=8, command="ls"),
        Done(line=11, summary="bye"),
    ]


def test_closing_tag_with_non_ascii_look_alike_is_body_text() -> None:
    # "ı".upper() == "I" and "ſ".upper() == "S": such lines must not close the command.
    reply = (
        "[MESSAGE]\n[/MEſſAGE]\n[/message]\n[CREATE_FILE path=a]\n[/CREATE_FıLE]\n[/CREATE_FILE]"
    )
    assert parse(reply) == [
        Message(line=1, text="[/MEſſAGE]"),
        CreateFile(line=4, path="a", content="[/CREATE_FıLE]\n"),
    ]


@pytest.mark.parametrize(
    "tag",
    [
        "[EDIT_FILE path='a b.py' start_line='2' end_line='5']",
        '[EDIT_FILE path = "a b.py" start_line ="2" end_line= "5"]',
        '[EDIT_FILE end_line="5" path="a b.py" start_line="2"]',
        '[EDIT_FILE PATH="a b.py" Start_Line="2" END_LINE="5"]',
        "[EDIT_FILE start_line=2 end_line=5 path='a b.py']",
        '[EDIT_FILE path="a b.py" start_line=" 2 " end_line="+5"]',
        '[EDIT_FILE path="a b.py"start_line="2"end_line="5"]',
        '[EDIT_FILE path="a b.py" start_line="2" end_line="5" why="the bug"]',
        '[EDIT_FILE path="a b.py" start_line="2" end_line="5" /]',
        '[EDIT_FILE\tpath="a b.py"\tstart_line=2\tend_line=5/]',
    ],
)
def test_attribute_syntax_variants(tag: str) -> None:
    assert parse(f"{tag}\nnew\n[/EDIT_FILE]") == [
        EditFile(line=1, path="a b.py", start_line=2, end_line=5, content="new\n")
    ]


def test_unquoted_value_ends_at_whitespace_or_bracket() -> None:
    reply = "[READ_FILE path=src/a.py]\n[DELETE_FILE path=b.txt other=1]\n[READ_FILE path=a/b/]"
    assert parse(reply) == [
        ReadFile(line=1, path="src/a.py"),
        DeleteFile(line=2, path="b.txt"),
        ReadFile(line=3, path="a/b"),
    ]


def test_unquoted_slash_alone_is_a_value() -> None:
    assert parse("[READ_FILE path=/]\n[READ_FILE path=/ /]") == [
        ReadFile(line=1, path="/"),
        ReadFile(line=2, path="/"),
    ]


def test_bracket_and_other_quote_inside_quoted_value() -> None:
    reply = '[READ_FILE path="data/[x].txt"]\n[DELETE_FILE path=\'it"s]\']'
    assert parse(reply) == [
        ReadFile(line=1, path="data/[x].txt"),
        DeleteFile(line=2, path='it"s]'),
    ]


def test_empty_quoted_value_is_an_attribute() -> None:
    assert parse('[READ_FILE path=""]') == [ReadFile(line=1, path="")]


def test_negative_and_zero_line_numbers_are_left_to_the_executor() -> None:
    reply = '[EDIT_FILE path="a" start_line="-3" end_line="0"]\n[/EDIT_FILE]'
    assert parse(reply) == [EditFile(line=1, path="a", start_line=-3, end_line=0, content="")]


def test_tag_name_must_end_at_space_slash_or_bracket() -> None:
    reply = '[CREATE_FILES path="a"]\n[DONEZO]\n[READ_FILE: path="x"]\n[READ_FILE/]\nx'
    assert parse(reply) == [error("READ_FILE", 4, "missing required attribute 'path'")]


def test_text_after_self_closing_tag_is_ignored_and_stray_closers_too() -> None:
    reply = (
        '[READ_FILE path="a"] and some words\n[/READ_FILE]\n'
        '[DELETE_FILE path="b"]\n[/DELETE_FILE]\n[/CREATE_FILE]\n[/DONE]\n[MESSAGE]m[/MESSAGE]'
    )
    assert parse(reply) == [
        ReadFile(line=1, path="a"),
        DeleteFile(line=3, path="b"),
        Message(line=7, text="m"),
    ]


# --- bodies --------------------------------------------------------------------------------


def test_closing_tag_of_another_command_is_body_text() -> None:
    reply = (
        '[CREATE_FILE path="doc.md"]\n  [/EDIT_FILE]\n[/DONE]\n[/CREATE_FILE]\n[DONE]\nok\n[/DONE]'
    )
    assert parse(reply) == [
        CreateFile(line=1, path="doc.md", content="  [/EDIT_FILE]\n[/DONE]\n"),
        Done(line=5, summary="ok"),
    ]


def test_opening_tags_inside_a_body_are_body_text() -> None:
    body = '[CREATE_FILE path="inner"]\n[DELETE_FILE path="x"]\n[RUN_COMMAND]\n[DONE]\n'
    reply = f'[CREATE_FILE path="outer.md"]\n{body}[/CREATE_FILE]'
    assert parse(reply) == [CreateFile(line=1, path="outer.md", content=body)]


def test_body_ends_at_first_closing_tag() -> None:
    reply = '[CREATE_FILE path="a"]\nx\n[/CREATE_FILE]\ny\n[/CREATE_FILE]'
    assert parse(reply) == [CreateFile(line=1, path="a", content="x\n")]


def test_single_line_forms() -> None:
    reply = (
        "[MESSAGE]hi there[/MESSAGE]\n"
        "[DONE] All set. [/done]  \n"
        "[RUN_COMMAND]  ls -la  [/RUN_COMMAND]\n"
        '[CREATE_FILE path="a"]x = 1[/CREATE_FILE]\n'
        '[CREATE_FILE path="b"][/CREATE_FILE]\n'
        "[MESSAGE][/MESSAGE]"
    )
    assert parse(reply) == [
        Message(line=1, text="hi there"),
        Done(line=2, summary="All set."),
        RunCommand(line=3, command="ls -la"),
        CreateFile(line=4, path="a", content="x = 1\n"),
        CreateFile(line=5, path="b", content=""),
        Message(line=6, text=""),
    ]


def test_text_after_opening_tag_is_first_body_line() -> None:
    reply = "[MESSAGE] Hello\nworld\n[/MESSAGE]\n[RUN_COMMAND] echo 1\necho 2\n[/RUN_COMMAND]"
    assert parse(reply) == [
        Message(line=1, text="Hello\nworld"),
        RunCommand(line=4, command="echo 1\necho 2"),
    ]


# --- unclosed commands -----------------------------------------------------------------------


def test_unclosed_command_after_good_one_swallows_the_rest() -> None:
    reply = (
        '[CREATE_FILE path="ok.py"]\npass\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="broken.py"]\nimport os\n'
        '[DELETE_FILE path="important"]\n[RUN_COMMAND]\nrm -rf .\n[/RUN_COMMAND]\n'
    )
    assert parse(reply) == [
        CreateFile(line=1, path="ok.py", content="pass\n"),
        unclosed("CREATE_FILE", 4),
    ]


@pytest.mark.parametrize("name", ["create_file", "EDIT_FILE", "RUN_COMMAND", "Message"])
def test_unclosed_message_names_the_canonical_tag(name: str) -> None:
    reply = f'prose\n[{name} path="a" start_line=1 end_line=1]\nbody\n[/DONE]\n'
    assert parse(reply) == [unclosed(name.upper(), 2)]


def test_bare_done_at_end_is_accepted() -> None:
    assert parse('[READ_FILE path="a"]\n[DONE]\n') == [
        ReadFile(line=1, path="a"),
        Done(line=2, summary=""),
    ]


def test_unclosed_done_ends_where_the_next_command_begins() -> None:
    reply = '[DONE] Finished.\n\nAll tests pass.\n[READ_FILE path="a"]\n\n'
    assert parse(reply) == [
        Done(line=1, summary="Finished.\n\nAll tests pass."),
        ReadFile(line=4, path="a"),
    ]


def test_a_done_checklist_line_in_prose_does_not_swallow_the_commands_after_it() -> None:
    # The executor then refuses this DONE, because commands follow it.
    reply = (
        'Checklist:\n[done] read the task\n\n[CREATE_FILE path="app.py"]\nprint(1)\n'
        "[/CREATE_FILE]\n"
    )
    assert parse(reply) == [
        Done(line=2, summary="read the task"),
        CreateFile(line=4, path="app.py", content="print(1)\n"),
    ]


@pytest.mark.timeout(60)  # the guard against a quadratic scan (see the adversarial inputs)
def test_many_unclosed_dones_stay_linear() -> None:
    assert len(parse("[DONE]\n" * 100_000)) == 100_000


# --- parse errors --------------------------------------------------------------------------


def test_missing_required_attribute() -> None:
    reply = "[CREATE_FILE]\nx\n[/CREATE_FILE]\n[DELETE_FILE file='a']\n[READ_FILE path='b']"
    assert parse(reply) == [
        error("CREATE_FILE", 1, "missing required attribute 'path'"),
        error("DELETE_FILE", 4, "missing required attribute 'path'"),
        ReadFile(line=5, path="b"),
    ]


def test_missing_attributes_are_reported_in_table_order() -> None:
    reply = (
        '[EDIT_FILE start_line="x"]\n[/EDIT_FILE]\n[EDIT_FILE path="a" end_line="1"]\n[/EDIT_FILE]'
    )
    assert parse(reply) == [
        error("EDIT_FILE", 1, "missing required attribute 'path'"),
        error("EDIT_FILE", 3, "missing required attribute 'start_line'"),
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("abc", "abc"),
        ("", ""),
        ("1.5", "1.5"),
        ("1e3", "1e3"),
        ("1_000", "1_000"),
        ("٣", "٣"),  # Arabic-Indic digit: int() would accept it, the protocol does not
        ("- 1", "- 1"),
        ("9" * 99 + "x", "9" * 57 + "..."),
    ],
)
def test_integer_attribute_must_be_ascii_whole_number(value: str, shown: str) -> None:
    reply = f'[EDIT_FILE path="a" start_line="{value}" end_line="1"]\nx\n[/EDIT_FILE]'
    message = f"attribute 'start_line' must be a whole number, got '{shown}'"
    assert parse(reply) == [error("EDIT_FILE", 1, message)]


def test_integer_too_long_for_int_is_an_error_not_a_crash() -> None:
    reply = f'[EDIT_FILE path="a" start_line="1" end_line="{"1" * 5000}"]\n[/EDIT_FILE]'
    message = f"attribute 'end_line' must be a whole number, got '{'1' * 57}...'"
    assert parse(reply) == [error("EDIT_FILE", 1, message)]


def test_duplicate_attribute() -> None:
    reply = "[READ_FILE path='a' Path='b']\n[DELETE_FILE x=1 path=a x=2]"
    assert parse(reply) == [
        error("READ_FILE", 1, "attribute 'path' is given twice"),
        error("DELETE_FILE", 2, "attribute 'x' is given twice"),
    ]


@pytest.mark.parametrize(
    ("tag", "remainder"),
    [
        ('[READ_FILE path="a" junk]', "junk"),
        ('[READ_FILE path="a" junk="b]', 'junk="b'),
        ('[READ_FILE path="unterminated]', 'path="unterminated'),
        ("[READ_FILE path=]", "path="),
        ("[READ_FILE path= ]", "path= "),
        ('[READ_FILE "a"]', '"a"'),
        ('[READ_FILE path="a" / junk]', "/ junk"),
        ('[READ_FILE path="a"', '[READ_FILE path="a"'),
        ("[READ_FILE", "[READ_FILE"),
        ('[READ_FILE path="a" ' + "x" * 100 + "]", "x" * 57 + "..."),
    ],
)
def test_malformed_attributes(tag: str, remainder: str) -> None:
    reply = f'{tag}\n[DELETE_FILE path="b"]'
    assert parse(reply) == [
        error("READ_FILE", 1, f"malformed attributes: {remainder}"),
        DeleteFile(line=2, path="b"),
    ]


def test_malformed_body_command_still_consumes_its_body() -> None:
    reply = (
        '[CREATE_FILE path="a" junk]\n[DELETE_FILE path="x"]\n[/CREATE_FILE]\n'
        "[MESSAGE oops]hi[/MESSAGE]\n"
        '[EDIT_FILE path="b" start_line="one" end_line="2"]\n[RUN_COMMAND]\n[/EDIT_FILE]\n'
        '[READ_FILE path="c"]'
    )
    assert parse(reply) == [
        error("CREATE_FILE", 1, "malformed attributes: junk"),
        error("MESSAGE", 4, "malformed attributes: oops"),
        error("EDIT_FILE", 5, "attribute 'start_line' must be a whole number, got 'one'"),
        ReadFile(line=8, path="c"),
    ]


def test_unclosed_and_malformed_reports_unclosed() -> None:
    reply = '[CREATE_FILE path="a\nx\n[READ_FILE path="b"]'
    assert parse(reply) == [unclosed("CREATE_FILE", 1)]


def test_unclosed_malformed_done_reports_the_attribute_error() -> None:
    assert parse("[DONE junk]\nsummary") == [error("DONE", 1, "malformed attributes: junk")]


# --- linear time on adversarial input ----------------------------------------------------------

ADVERSARIAL = {
    "100k unclosed tags": '[CREATE_FILE path="x"\n' * 100_000,
    "100k unclosed closed-bracket tags": '[CREATE_FILE path="x"]\n' * 100_000,
    "one 2 MB unterminated quote": '[CREATE_FILE path="' + "a" * 2_000_000,
    "one 2 MB unquoted value": "[READ_FILE path=" + "a" * 2_000_000 + "]",
    "one 2 MB tag name": "[" + "A" * 2_000_000,
    "2 MB of brackets": "[" * 2_000_000,
    "nested code fences": "".join("`" * (3 + i % 50) + "python\n" for i in range(200_000)),
    "200k attributes": "[READ_FILE " + "".join(f"a{i}='' " for i in range(200_000)) + "]",
    "100k other closers in a body": "[MESSAGE]\n" + "[/DONE]\n" * 100_000 + "[/MESSAGE]",
    "40k self-closing commands": '[READ_FILE path="x"]\n' * 40_000,
    "2 MB number": f'[EDIT_FILE path="a" start_line="{"7" * 2_000_000}" end_line="1"]',
}


# No wall-clock assertion (a loaded machine makes those lie): a parser that went quadratic on
# these 2 MB inputs would run for hours, so the per-test timeout is the guard, with a margin of
# hundreds over the linear parser's time. benchmarks/run.py ("parser") measures the speed.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ADVERSARIAL)
def test_adversarial_input_parses_in_linear_time(name: str) -> None:
    commands = parse(ADVERSARIAL[name])
    assert all(c.line >= 1 for c in commands)


def test_adversarial_results_are_what_the_grammar_says() -> None:
    assert parse(ADVERSARIAL["100k unclosed tags"]) == [unclosed("CREATE_FILE", 1)]
    assert parse(ADVERSARIAL["one 2 MB unquoted value"]) == [ReadFile(line=1, path="a" * 2_000_000)]
    assert parse(ADVERSARIAL["100k other closers in a body"]) == [
        Message(line=1, text="\n".join(["[/DONE]"] * 100_000))
    ]
    assert len(parse(ADVERSARIAL["40k self-closing commands"])) == 40_000


@pytest.mark.timeout(60)  # the guard against a quadratic scan, as above
def test_ten_megabyte_single_line_in_a_body() -> None:
    line = "x = '" + "[/CREATE_FILE" * 800_000 + "'"
    reply = f'[CREATE_FILE path="big.py"]\n{line}\n[/CREATE_FILE]'
    assert parse(reply) == [CreateFile(line=1, path="big.py", content=line + "\n")]


# --- hypothesis: totality ------------------------------------------------------------------

FRAGMENTS = [
    '[CREATE_FILE path="',
    "[/CREATE_FILE]",
    "[EDIT_FILE path=a start_line=",
    "[/EDIT_FILE]",
    "[RUN_COMMAND]",
    "[/RUN_COMMAND]",
    "[MESSAGE]",
    "[/MESSAGE]",
    "[DONE]",
    "[/DONE]",
    "[READ_FILE ",
    "[delete_file path='",
    " path=",
    "start_line=",
    "1",
    "-",
    "x",
    "\n",
    "\r",
    "\r\n",
    '"',
    "'",
    "]",
    "[",
    "/",
    " ",
    "=",
    "\ufeff",
    "\f",
    "\u2028",
    "```",
]


def assert_well_formed(text: str, commands: list[Command]) -> None:
    lines = [c.line for c in commands]
    assert lines == sorted(set(lines))
    line_count = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    assert all(1 <= n <= line_count for n in lines)


@given(st.text())
def test_parse_never_raises_on_any_text(text: str) -> None:
    assert_well_formed(text, parse(text))


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=60).map("".join))
def test_parse_never_raises_on_tag_soup(text: str) -> None:
    assert_well_formed(text, parse(text))


# --- hypothesis: round trip ----------------------------------------------------------------


@dataclass(frozen=True)
class Style:
    """How the test renderer writes a tag; none of it may change what is parsed."""

    name_case: str
    quote: str
    equals: str
    indent: str
    trailing: str
    extra_attribute: bool
    reverse_attributes: bool


styles = st.builds(
    Style,
    name_case=st.sampled_from(["upper", "lower", "title"]),
    quote=st.sampled_from(['"', "'", ""]),
    equals=st.sampled_from(["=", " = ", "= "]),
    indent=st.sampled_from(["", "  ", "\t"]),
    trailing=st.sampled_from(["", " ", " \t "]),
    extra_attribute=st.booleans(),
    reverse_attributes=st.booleans(),
)

BODY_CHARS = st.characters(
    codec="utf-8", exclude_characters="\r\n", exclude_categories=["Cs"]
) | st.sampled_from(list("[]/\"' \t\f\x0b\x1c\x85\u2028"))
TAG_LIKE_LINES = st.sampled_from(
    [
        "[/CREATE_FILE]",
        "[/EDIT_FILE]",
        "[/RUN_COMMAND]",
        "[/MESSAGE]",
        "[/DONE]",
        "  [/create_file]  ",
        '[CREATE_FILE path="inner"]',
        '[READ_FILE path="x"]',
        "[DONE]",
        "[MESSAGE]hi[/MESSAGE]",
    ]
)
# Protocol 1.1 removes one code fence wrapping a whole body, so bodies here have no fence lines
# (test_body_fence_* cover those).
body_lines = st.lists(
    (st.text(BODY_CHARS, max_size=12) | TAG_LIKE_LINES).filter(
        lambda line: not line.strip().startswith(("```", "~~~"))
    ),
    max_size=6,
)
# An unquoted `path=a/]` means `a` plus a self-closing slash, so generated paths never end in `/`.
paths = st.text(st.sampled_from("abcXYZ019._-/"), min_size=1, max_size=20).filter(
    lambda p: not p.endswith("/")
)
integers = st.integers(min_value=-(10**6), max_value=10**6)
prose_lines = st.lists(
    st.text(BODY_CHARS, max_size=20).filter(lambda s: not s.strip().startswith("[")), max_size=3
)


def without(lines: list[str], name: str) -> list[str]:
    """Body lines that would not close ``name``: a test-side copy of the closing-tag rule."""
    closing = f"[/{name}]"
    return [ln for ln in lines if not (ln.strip().isascii() and ln.strip().upper() == closing)]


def trim_blank_edges(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


@st.composite
def commands(draw: st.DrawFn) -> tuple[str, dict[str, object], list[str]]:
    """A command as (tag name, fields without ``line``, body lines)."""
    kind = draw(st.sampled_from(["CREATE", "EDIT", "DELETE", "READ", "RUN", "MESSAGE", "DONE"]))
    if kind in ("DELETE", "READ"):
        return f"{kind}_FILE", {"path": draw(paths)}, []
    if kind in ("CREATE", "EDIT"):
        name = f"{kind}_FILE"
        lines = without(draw(body_lines), name)
        fields: dict[str, object] = {
            "path": draw(paths),
            "content": "".join(f"{ln}\n" for ln in lines),
        }
        if kind == "EDIT":
            fields |= {"start_line": draw(integers), "end_line": draw(integers)}
        return name, fields, lines
    if kind == "RUN":
        lines = trim_blank_edges(without(draw(body_lines), "RUN_COMMAND"))
        return "RUN_COMMAND", {"command": "\n".join(lines)}, lines
    field = "text" if kind == "MESSAGE" else "summary"
    lines = without(draw(body_lines), kind)
    return kind, {field: "\n".join(lines).strip()}, lines


MODELS = {
    "CREATE_FILE": CreateFile,
    "EDIT_FILE": EditFile,
    "DELETE_FILE": DeleteFile,
    "READ_FILE": ReadFile,
    "RUN_COMMAND": RunCommand,
    "MESSAGE": Message,
    "DONE": Done,
}
ATTRIBUTES = ("path", "start_line", "end_line")


def render_tag(name: str, fields: dict[str, object], style: Style) -> str:
    tag_name = {"upper": name, "lower": name.lower(), "title": name.title()}[style.name_case]
    attributes = [
        f"{key}{style.equals}{style.quote}{fields[key]}{style.quote}"
        for key in ATTRIBUTES
        if key in fields
    ]
    if style.extra_attribute:
        attributes.append('note="ignored ] here"')
    if style.reverse_attributes:
        attributes.reverse()
    return "".join([style.indent, "[", " ".join([tag_name, *attributes]), "]", style.trailing])


@given(
    st.lists(st.tuples(prose_lines, commands(), styles), max_size=6),
    prose_lines,
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
)
@settings(max_examples=examples(300))
def test_round_trip(
    parts: list[tuple[list[str], tuple[str, dict[str, object], list[str]], Style]],
    tail: list[str],
    newline: str,
    bom: bool,
) -> None:
    lines: list[str] = []
    expected = []
    for prose, (name, fields, body), style in parts:
        lines.extend(prose)
        lines.append(render_tag(name, fields, style))
        expected.append(MODELS[name](line=len(lines), **fields))
        if name not in ("DELETE_FILE", "READ_FILE"):
            lines.extend([*body, f"{style.indent}[/{name}]{style.trailing}"])
    lines.extend(tail)
    text = ("\ufeff" if bom else "") + newline.join(lines)
    assert parse(text) == expected


# --- protocol 1.1: what chat UIs do to replies ----------------------------------------------------


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("```python", "```"),
        ("```", "```"),
        ("~~~", "~~~"),
        ("```py title=app.py", "```"),
        ("````markdown", "````"),
        ("  ```python  ", " ``` "),
    ],
)
def test_body_fence_wrapping_a_file_body_is_removed_and_recorded(opening: str, closing: str):
    reply = f'[CREATE_FILE path="app.py"]\n{opening}\nx = 1\n\ny = 2\n{closing}\n[/CREATE_FILE]'
    assert parse(reply) == [
        CreateFile(line=1, path="app.py", content="x = 1\n\ny = 2\n", fence_removed=True)
    ]


def test_an_empty_fenced_body_is_an_empty_file():
    assert parse('[CREATE_FILE path="__init__.py"]\n```python\n```\n[/CREATE_FILE]') == [
        CreateFile(line=1, path="__init__.py", content="", fence_removed=True)
    ]


def test_body_fence_with_blank_lines_around_and_nested_blocks_inside():
    reply = (
        '[CREATE_FILE path="README.md"]\n\n````markdown\n# Tool\n```bash\nmake\n```\n````\n\n'
        "[/CREATE_FILE]\n"
        '[CREATE_FILE path="doc.md"]\n```markdown\nUse:\n```bash\nmake\n```\n```\n[/CREATE_FILE]'
    )
    assert parse(reply) == [
        CreateFile(
            line=1, path="README.md", content="# Tool\n```bash\nmake\n```\n", fence_removed=True
        ),
        CreateFile(
            line=11, path="doc.md", content="Use:\n```bash\nmake\n```\n", fence_removed=True
        ),
    ]


@pytest.mark.parametrize(
    "body",
    [
        "```python\nx = 1\n",  # no closing fence: the file starts with a fence line
        "x = 1\n```\n",  # only a closing one
        "```a\nx\n```\ntext\n```b\ny\n```\n",  # two blocks, not one around everything
        "```\nx\n```\n```\ny\n```\n",
        "```python\nx\n```python\n",  # the last line must be a bare fence
        "```python\nx\n~~~\n",  # of the same kind
        "````\nx\n```\n",  # and at least as long
        "```js```\nx\n```\n",  # inline code is not a fence
        "text\n```python\nx\n```\n",
    ],
)
def test_body_without_one_wrapping_fence_is_kept_verbatim(body: str):
    assert parse(f'[CREATE_FILE path="f.md"]\n{body}[/CREATE_FILE]') == [
        CreateFile(line=1, path="f.md", content=body)
    ]


def test_body_fence_in_edit_file_and_run_command():
    reply = (
        '[EDIT_FILE path="a.py" start_line="2" end_line="3"]\n```python\n    return 2\n```\n'
        "[/EDIT_FILE]\n[RUN_COMMAND]\n\n```bash\npython -m pytest -q\n```\n\n[/RUN_COMMAND]"
    )
    assert parse(reply) == [
        EditFile(
            line=1,
            path="a.py",
            start_line=2,
            end_line=3,
            content="    return 2\n",
            fence_removed=True,
        ),
        RunCommand(line=6, command="python -m pytest -q"),
    ]


@pytest.mark.parametrize(
    "tag",
    [
        "[READ_FILE path=\u201csrc/a b.py\u201d]",  # “ ”
        "[READ_FILE path=\u201dsrc/a b.py\u201d]",  # ” ”
        "[READ_FILE path=\u201esrc/a b.py\u201c]",  # „ “
        "[READ_FILE path=\u2018src/a b.py\u2019]",  # ‘ ’
        '[READ_FILE path = \u201csrc/a b.py"]',  # “ "
        "[read_file  PATH =\u2019src/a b.py\u2019 ]",
    ],
)
def test_curly_quotes_around_attribute_values(tag: str):
    assert parse(tag) == [ReadFile(line=1, path="src/a b.py")]


def test_a_curly_apostrophe_inside_double_quotes_is_part_of_the_value():
    assert parse('[READ_FILE path="it\u2019s.txt"]') == [ReadFile(line=1, path="it\u2019s.txt")]


def test_a_tag_of_more_attributes_than_any_command_takes_is_not_read_on():
    """A model's own attributes are ignored, up to the cap; a tag with more (a hostile reply's
    megabytes of them) is one error, and the commands after it are read."""
    extra = " ".join(f'x{i}="v"' for i in range(MAX_ATTRIBUTES - 1))
    assert parse(f'[READ_FILE path="a.py" {extra}]') == [ReadFile(line=1, path="a.py")]
    flood = " ".join(f"x{i}=\u201cv\u201d" for i in range(100_000))
    found = parse(f'[READ_FILE path="a.py" {flood}]\n[READ_FILE path="b.py"]')
    assert found == [
        ParseError(
            line=1,
            command="READ_FILE",
            message=f"more than {MAX_ATTRIBUTES} attributes; a command takes a few",
        ),
        ReadFile(line=2, path="b.py"),
    ]


def test_markdown_escaped_tags():
    reply = (
        '\\[CREATE\\_FILE path="src/my\\_app.py"\\]\nx = a\\_b\n\\[/CREATE\\_FILE\\]\n'
        '\\[READ\\_FILE path="a.py" start\\_line="2"\\]\n\\[DONE\\]\nok\n\\[/DONE\\]'
    )
    assert parse(reply) == [
        # Only tags are unescaped: the body is the LLM's text as it came.
        CreateFile(line=1, path="src/my_app.py", content="x = a\\_b\n"),
        ReadFile(line=4, path="a.py", start_line=2),
        Done(line=5, summary="ok"),
    ]


def test_tags_in_bold_or_inline_code():
    reply = (
        '**[CREATE_FILE path="a.py"]**\nx = 1\n**[/CREATE_FILE]**\n'
        '`[READ_FILE path="a.py"]`\n__[RUN_COMMAND]__\nls\n__[/RUN_COMMAND]__\n'
        "**[DONE]** All done.\n"
    )
    assert parse(reply) == [
        CreateFile(line=1, path="a.py", content="x = 1\n"),
        ReadFile(line=4, path="a.py"),
        RunCommand(line=5, command="ls"),
        Done(line=8, summary="** All done."),
    ]


def test_emphasis_that_is_not_around_a_tag_is_prose():
    reply = "**Step 1** [READ_FILE path=a]\n*** [DONE]\n`code` [DONE]\n****[DONE]"
    assert parse(reply) == []


def test_read_file_optional_line_range():
    reply = (
        '[READ_FILE path="a.py" start_line="10" end_line="20"]\n'
        "[READ_FILE path=a.py start_line=5]\n"
        "[READ_FILE path=a.py end_line=' 7 ']\n"
        '[READ_FILE path="a.py" start_line="ten"]\n'
        '[READ_FILE start_line="1"]'
    )
    assert parse(reply) == [
        ReadFile(line=1, path="a.py", start_line=10, end_line=20),
        ReadFile(line=2, path="a.py", start_line=5),
        ReadFile(line=3, path="a.py", end_line=7),
        error("READ_FILE", 4, "attribute 'start_line' must be a whole number, got 'ten'"),
        error("READ_FILE", 5, "missing required attribute 'path'"),
    ]


def test_search_attributes():
    reply = (
        '[SEARCH query="def parse"]\n'
        '[SEARCH query="TODO|FIXME" glob="*.{py,js}" regex="true" case_sensitive="Yes"]\n'
        "[search query='x' regex=0 case_sensitive=off /]\n"
        '[SEARCH query="x" regex="maybe"]\n'
        '[SEARCH glob="*.py"]\n'
        "[SEARCH] for the config loader"
    )
    assert parse(reply) == [
        Search(line=1, query="def parse"),
        Search(line=2, query="TODO|FIXME", glob="*.{py,js}", regex=True, case_sensitive=True),
        Search(line=3, query="x"),
        error("SEARCH", 4, "attribute 'regex' must be true or false, got 'maybe'"),
        error("SEARCH", 5, "missing required attribute 'query'"),
        error("SEARCH", 6, "missing required attribute 'query'"),
    ]


def block(line: int, search: str, replace: str, *tolerated: str) -> ReplaceBlock:
    return ReplaceBlock(line=line, search=search, replace=replace, tolerated=tolerated)


def test_replace_blocks():
    reply = (
        '[REPLACE path="calc.py"]\n'
        "<<<<<<< SEARCH\n"
        "def divide(a, b):\n"
        "    return a / b\n"
        "=======\n"
        "def divide(a, b):\n"
        "    if b == 0:\n"
        "        raise ValueError\n"
        "    return a / b\n"
        ">>>>>>> REPLACE\n"
        "\n"
        "```python\n"
        "<<<<<<<SEARCH  \n"
        "=======\n"
        "========\n"
        "new file\n"
        ">>>>>>>> replace\n"
        "```\n"
        "[/REPLACE]"
    )
    assert parse(reply) == [
        Replace(
            line=1,
            path="calc.py",
            blocks=(
                block(
                    2,
                    "def divide(a, b):\n    return a / b\n",
                    "def divide(a, b):\n    if b == 0:\n        raise ValueError\n"
                    "    return a / b\n",
                ),
                block(
                    13, "", "========\nnew file\n", "ignored the code fence lines around the block"
                ),
            ),
        )
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "",
            "no SEARCH/REPLACE block; write <<<<<<< SEARCH, the lines to find, =======, the "
            "lines to put instead, >>>>>>> REPLACE",
        ),
        ("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n", "the block at reply line 2 has no ======= line"),
        (
            "<<<<<<< SEARCH\nx\n=======\ny\n",
            "the block at reply line 2 has no >>>>>>> REPLACE line",
        ),
        (
            "<<<<<<< SEARCH\nx\n=======\ny\n<<<<<<< SEARCH\n",
            "the block at reply line 2 has no >>>>>>> REPLACE line",
        ),
        (
            "Here is the fix:\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
            "text outside a SEARCH/REPLACE block at reply line 2 ('Here is the fix:'); write "
            "<<<<<<< SEARCH, the lines to find, =======, the lines to put instead, "
            ">>>>>>> REPLACE",
        ),
    ],
)
def test_replace_errors_name_the_command_and_the_line(body: str, message: str):
    reply = f'[REPLACE path="a.py"]\n{body}[/REPLACE]\n[READ_FILE path="b"]'
    commands = parse(reply)
    assert commands[0] == error("REPLACE", 1, message)
    assert commands[1] == ReadFile(line=body.count("\n") + 3, path="b")


def test_replace_without_closing_tag_is_unclosed():
    assert parse('[REPLACE path="a"]\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n') == [
        unclosed("REPLACE", 1)
    ]


@pytest.mark.parametrize(
    ("reply", "echo"),
    [
        ("Session: a1b2c3d4 Sequence: 3\n[DONE]", ("a1b2c3d4", 3)),
        ("**Session:** A1B2C3D4\n**Sequence:** 12\n", ("a1b2c3d4", 12)),
        ("Session ID: `a1b2c3d4`, Sequence: `7`", ("a1b2c3d4", 7)),
        ("```\nSession: a1b2c3d4\nSequence: 2\n```\nthinking...", ("a1b2c3d4", 2)),
        ("Sequence: 4", (None, 4)),
        ("I have read the session. Steps in sequence: first", (None, None)),
        ("session: a1b2c3d4 sequence: 3", (None, None)),  # the PROTOCOL's spelling only
        ('[CREATE_FILE path="a"]\nSession: a1b2c3d4 Sequence: 3\n[/CREATE_FILE]', (None, None)),
        ("Session: a1b2c3d4\n[READ_FILE path=a]\nSequence: 9", ("a1b2c3d4", None)),
        ("\ufeffSession: deadbeef Sequence: 1", ("deadbeef", 1)),
    ],
)
def test_reply_echo(reply: str, echo: tuple[str | None, int | None]):
    assert reply_echo(reply) == echo


# --- speed: no garbage-collector passes, no validators built at import -------------------------


def test_a_parse_runs_no_cyclic_garbage_collection() -> None:
    """The collector's passes over the millions of objects of a big reply made parsing
    superlinear (10 MB took 13x as long as 1 MB)."""
    passes: list[int] = []
    parsing = threading.Event()  # passes other threads cause once the parse is back are not its

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and parsing.is_set():
            passes.append(info["generation"])

    gc.callbacks.append(count)
    parsing.set()
    try:
        commands = parse("[DONE]\n" * 20_000 + '[CREATE_FILE path="x"\n' * 20_000)
    finally:
        parsing.clear()
        gc.callbacks.remove(count)
    assert len(commands) == 20_001
    assert len(passes) <= 1  # the one pass the parse's objects trigger once it is back on


def test_a_parse_leaves_the_garbage_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    parse("[DONE]\n" * 10)
    assert gc.isenabled()
    with pytest.raises(AttributeError):
        parse(None)  # type: ignore[arg-type]
    assert gc.isenabled()
    gc.disable()
    try:
        parse("[DONE]\n" * 10)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_importing_the_session_store_builds_no_command_validators() -> None:
    """`codingagent sessions` loads only session state: the command models' validators are
    built when a reply is first parsed (pydantic's defer_build), and then work as before."""
    probe = (
        "import codingagent.records.store, codingagent.state as s\n"
        "import codingagent.protocol.commands as c\n"
        "print(c.CreateFile.__pydantic_complete__, s.CommandResult.__pydantic_complete__)\n"
        "from codingagent.protocol.parser import parse\n"
        "print(parse('[DONE]\\nok\\n[/DONE]') == [c.Done(line=1, summary='ok')])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out == "False True\nTrue\n"


def test_parsed_commands_validate_dump_and_round_trip_through_the_union() -> None:
    reply = (
        '[SEARCH query="a|b" glob="*.py" regex="yes"]\n'
        '[REPLACE path="a.py"]\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n[/REPLACE]\n'
        '[EDIT_FILE path="a.py" start_line="1" end_line="2"]\nz\n[/EDIT_FILE]\n[DONE]\n'
    )
    commands = parse(reply)
    adapter = TypeAdapter(list[Command])
    assert adapter.validate_python(adapter.dump_python(commands)) == commands
    assert commands[1].model_dump() == {
        "line": 2,
        "kind": "REPLACE",
        "path": "a.py",
        "blocks": ({"line": 3, "search": "x\n", "replace": "y\n", "tolerated": ()},),
    }
    with pytest.raises(ValidationError):
        Done(line=0, summary="line numbers start at 1")


def test_a_parse_makes_no_reference_cycles() -> None:
    """With the collector off during a parse, a cycle per broken tag would pile up."""
    reply = (
        '[EDIT_FILE path="a" start_line="x" end_line="1"]\nz\n[/EDIT_FILE]\n'
        f'[EDIT_FILE path="a" start_line="{"7" * 5000}" end_line="1"]\nz\n[/EDIT_FILE]\n'
        '[SEARCH query="a" regex="maybe"]\n[READ_FILE path="a" path="b"]\n[READ_FILE]\n'
        '[REPLACE path="a"]\nhello\n[/REPLACE]\n[CREATE_FILE path="x"\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="x"]\n```\nhi\n```\n[/CREATE_FILE]\n[DONE]\n'
        "[REPLACE path='a']\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n[/REPLACE]\n"
    ) * 50 + '[RUN_COMMAND]\nls\n[MESSAGE]\nhi\n[/MESSAGE]\n[CREATE_FILE path="x"]\n'
    gc.collect()
    gc.disable()
    try:
        assert len(parse(reply)) > 500
        assert gc.collect() == 0
    finally:
        gc.enable()


@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=60).map("".join))
def test_tag_soup_makes_no_reference_cycles(text: str) -> None:
    gc.collect(0)  # the youngest generation then holds only what the parse makes
    gc.disable()
    try:
        parse(text)
        assert gc.collect(0) == 0
    finally:
        gc.enable()
