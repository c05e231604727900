"""REPLACE as models really write it: replies parsed and run through the real executor.

The doubled divider never becomes file content, the shapes whose intent is plain are applied
and say what was tolerated, and the "did you mean" hint finds a block a blank line away.
"""

from __future__ import annotations

import pytest
from executing import headlines, put, run_reply


def test_a_doubled_divider_ends_the_block_and_is_never_written(ws) -> None:
    path = put(ws, "f.txt", "keep\ndrop me\nkeep too\n")
    reply = (
        '[REPLACE path="f.txt"]\n<<<<<<< SEARCH\ndrop me\n=======\n=======\n'
        ">>>>>>> REPLACE\n[/REPLACE]\n"
    )
    outcome = run_reply(ws, reply)
    assert path.read_text() == "keep\nkeep too\n"
    assert headlines(outcome) == [
        "[OK] REPLACE: Replaced line 2 of 'f.txt' (1 line replaced by 0, read the second "
        "======= as the end of the block (a divider is never file content))"
    ]


def test_a_block_closed_by_a_divider_is_applied_and_says_so(ws) -> None:
    path = put(ws, "f.txt", "a\nb\nc\n")
    reply = (
        '[REPLACE path="f.txt"]\n<<<<<<< SEARCH\nb\n=======\nB\n=======\n'
        "<<<<<<< SEARCH\nc\n=======\nC\n>>>>>>> REPLACE\n[/REPLACE]\n"
    )
    outcome = run_reply(ws, reply)
    assert path.read_text() == "a\nB\nC\n"
    assert headlines(outcome) == [
        "[OK] REPLACE: Changed 'f.txt' with 2 blocks: line 2 (1 line replaced by 1, read the "
        "======= at reply line 6 as >>>>>>> REPLACE); line 3 (1 line replaced by 1)"
    ]


def test_text_after_a_divider_that_closed_a_block_is_refused_and_nothing_changes(ws) -> None:
    path = put(ws, "f.txt", "a\nb\n")
    reply = (
        '[REPLACE path="f.txt"]\n<<<<<<< SEARCH\nb\n=======\nB\n=======\nC\n'
        ">>>>>>> REPLACE\n[/REPLACE]\n"
    )
    outcome = run_reply(ws, reply)
    assert path.read_text() == "a\nb\n"
    assert headlines(outcome) == [
        "[FAILED] REPLACE: reply line 1: text outside a SEARCH/REPLACE block at reply line 7 "
        "('C'); write <<<<<<< SEARCH, the lines to find, =======, the lines to put instead, "
        ">>>>>>> REPLACE"
    ]


def test_a_longer_run_of_equals_signs_in_replace_is_content(ws) -> None:
    path = put(ws, "doc.rst", "Title\n")
    reply = (
        '[REPLACE path="doc.rst"]\n<<<<<<< SEARCH\nTitle\n=======\nTitle\n========\n'
        ">>>>>>> REPLACE\n[/REPLACE]\n"
    )
    assert headlines(run_reply(ws, reply)) == [
        "[OK] REPLACE: Replaced line 1 of 'doc.rst' (1 line replaced by 2)"
    ]
    assert path.read_text() == "Title\n========\n"


@pytest.mark.parametrize(
    ("search", "replace", "note"),
    [
        ("\nb\n", "\nB\n", "ignored the blank lines at the edges of SEARCH"),
        ("b\n\n", "B\n", "ignored the blank lines at the edges of SEARCH"),
        ("```\nb\n```\n", "```\nB\n```\n", "removed the code fences around SEARCH and REPLACE"),
    ],
)
def test_unambiguous_shapes_apply_and_say_what_was_tolerated(ws, search, replace, note) -> None:
    path = put(ws, "f.txt", "a\nb\nc\n")
    reply = (
        f'[REPLACE path="f.txt"]\n<<<<<<< SEARCH\n{search}=======\n{replace}'
        ">>>>>>> REPLACE\n[/REPLACE]\n"
    )
    outcome = run_reply(ws, reply)
    assert path.read_text() == "a\nB\nc\n"
    assert headlines(outcome) == [
        f"[OK] REPLACE: Replaced line 2 of 'f.txt' (1 line replaced by 1, {note})"
    ]


def test_a_search_marker_with_a_stray_bracket(ws) -> None:
    path = put(ws, "f.txt", "a\nb\n")
    reply = '[REPLACE path="f.txt"]\n<<<<<<< SEARCH>\nb\n=======\nB\n>>>>>>> REPLACE\n[/REPLACE]'
    assert headlines(run_reply(ws, reply)) == [
        "[OK] REPLACE: Replaced line 2 of 'f.txt' (1 line replaced by 1, read "
        "'<<<<<<< SEARCH>' as <<<<<<< SEARCH)"
    ]
    assert path.read_text() == "a\nB\n"


def test_tabs_in_the_file_where_search_has_spaces(ws) -> None:
    path = put(ws, "m.go", "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n")
    reply = (
        '[REPLACE path="m.go"]\n<<<<<<< SEARCH\n    if x {\n        return 1\n    }\n'
        "=======\n    if x {\n        return 2\n    }\n>>>>>>> REPLACE\n[/REPLACE]\n"
    )
    assert headlines(run_reply(ws, reply)) == [
        "[OK] REPLACE: Replaced lines 2-4 of 'm.go' (3 lines replaced by 3, matched the "
        "file's tab indentation, REPLACE indented with tabs)"
    ]
    assert path.read_text() == "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"


def test_the_hint_finds_a_block_that_is_one_blank_line_off(ws) -> None:
    put(ws, "f.py", "def f():\n    x = 1\n    return x\n")
    reply = (
        '[REPLACE path="f.py"]\n<<<<<<< SEARCH\ndef f():\n    x = 1\n\n    return x\n'
        "=======\npass\n>>>>>>> REPLACE\n[/REPLACE]\n"
    )
    (result,) = run_reply(ws, reply).results
    assert result.lines() == [
        "[FAILED] REPLACE: The block at reply line 2: the SEARCH text is not in 'f.py'; did "
        "you mean lines 1-3 (shown below)? SEARCH must repeat the file's lines exactly; "
        "nothing was changed",
        "  Output:",
        "       1 | def f():",
        "       2 |     x = 1",
        "       3 |     return x",
    ]


def test_a_closing_tag_as_a_file_line_is_named_in_the_protocol_with_the_way_around(ws) -> None:
    from codingagent.protocol.manual import protocol_text

    text = " ".join(protocol_text(30, 4000).split())
    assert "A line that is exactly a closing tag, such as [/REPLACE], ends its command" in text
    assert "use another command (EDIT_FILE, CREATE_FILE or PATCH)" in text
    # The way around works: EDIT_FILE writes the line REPLACE cannot.
    path = put(ws, "notes.txt", "x\n")
    reply = '[EDIT_FILE path="notes.txt" start_line="1" end_line="1"]\n[/REPLACE]\n[/EDIT_FILE]\n'
    assert headlines(run_reply(ws, reply))[0].startswith("[OK] EDIT_FILE")
    assert path.read_text() == "[/REPLACE]\n"
