"""The reply corpus: real-looking replies as users copy them out of chat UIs (tests/replies/).

Each ``tests/replies/NAME.txt`` is one reply, byte for byte (CRLF, BOM and curly quotes
included). ``CASES[NAME]`` says what the workspace held, what the session had seen, and what
must come of the reply: the result lines, the files afterwards, and lines of the next outbox.
Every reply goes through the real turn engine (:func:`codingagent.session.turn.apply_reply`) with a
real shell.

Shapes covered: ChatGPT (markdown headings, the whole reply or each command in a fence),
Claude (prose, XML-ish thinking, top-down EDIT_FILE runs), Gemini (bold tags, escaped brackets,
inline-code tags), and a sloppy local model (lowercase and unquoted tags, curly quotes, spaces
around ``=``, CR/CRLF/BOM, missing closing tags, placeholders, copied line numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from executing import sha
from sampling import sampled

from codingagent.prompt.outbox import write_outbox
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.seams import Reply, TurnReport
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.state import SessionState

REPLIES = Path(__file__).parent / "replies"
SID = "5f3a9c01"

CALC = (
    '"""Small calculator."""\n\n\ndef add(a, b):\n    return a + b\n\n\n'
    "def subtract(a, b):\n    return a - b\n\n\ndef divide(a, b):\n    return a / b\n"
)
TEST_CALC = (
    "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n"
    "def test_divide():\n    assert calc.divide(6, 3) == 2\n"
)
APP = """\
import json
from pathlib import Path


class Store:
    def __init__(self, path):
        self.path = Path(path)

    def load(self):
        if not self.path.exists():
            return {}
        return json.loads(self.path.read_text())

    def save(self, data):
        self.path.write_text(json.dumps(data))
"""
NOTES = "# Notes\n\n## Todo  \n- parser   \n- printer\n"
PROJECT = {"calc.py": CALC, "test_calc.py": TEST_CALC, "app.py": APP, "notes.md": NOTES}
STALE = (
    "warning: 'calc.py' changed since you last saw it, so these line numbers may be stale; "
    "READ_FILE it and check"
)
ONE_EDIT = (
    "Not applied: lines 9-10 of 'calc.py' and lines 8-9, changed by an earlier EDIT_FILE of "
    "this reply, overlap; all EDIT_FILE line numbers of one reply refer to the file as you saw "
    "it, so give each line to one EDIT_FILE only"
)
FENCE = "(removed the code fence around the content)"


@dataclass(frozen=True)
class Case:
    results: list[str]  # the result lines (headlines) of the turn, in order
    files: dict[str, str] = field(default_factory=lambda: dict(PROJECT))  # workspace before
    seen: dict[str, str] = field(default_factory=dict)  # path -> content the LLM was shown
    sequence: int = 1  # the prompt the session is at when the reply arrives
    after: dict[str, str | None] = field(default_factory=dict)  # files after (None: absent)
    outbox: tuple[str, ...] = ()  # text the next outbox must contain
    done: bool = False  # the reply ends the session
    refused: str = ""  # the start of the note of a reply that is not applied


CASES: dict[str, Case] = {
    # --- ChatGPT-style -------------------------------------------------------------------------
    "chatgpt_markdown_fenced_whole_reply": Case(
        [
            "[OK] CREATE_FILE: Created 'greet.py'",
            "[OK] RUN_COMMAND: Ran 'python3 greet.py Ada' (exit code 0)",
        ],
        outbox=("  Output: Hello, Ada!\n",),
    ),
    "chatgpt_each_command_in_its_own_fence": Case(
        [
            "[OK] REPLACE: Replaced lines 8-9 of 'calc.py' (2 lines replaced by 6)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import calc; print(calc.multiply(6, 7))\"' "
            "(exit code 0)",
        ],
        after={
            "calc.py": CALC.replace("a - b\n", "a - b\n\n\ndef multiply(a, b):\n    return a * b\n")
        },
        outbox=("  Output: 42\n",),
    ),
    "chatgpt_create_with_python_fence_in_body": Case(
        [
            f"[OK] CREATE_FILE: Created 'config.py' {FENCE}",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import config; print(config.load('nope.json'))\"' "
            "(exit code 0)",
        ],
        outbox=("  Output: {}\n",),
    ),
    "chatgpt_readme_with_nested_fences": Case(
        [f"[OK] CREATE_FILE: Created 'README.md' {FENCE}", "[OK] MESSAGE: Shown to the user"],
        after={
            "README.md": "# calc\n\nA tiny calculator library.\n\n## Usage\n\n```bash\n"
            'python3 -c "import calc; print(calc.add(2, 3))"\n```\n\n## Tests\n\n```bash\n'
            "python3 -m pytest -q\n```\n"
        },
    ),
    "chatgpt_plan_replace_test_done": Case(
        [
            "[OK] REPLACE: Replaced lines 12-13 of 'calc.py' (2 lines replaced by 4)",
            "[OK] EDIT_FILE: Appended 7 lines to 'test_calc.py'",
            "[OK] RUN_COMMAND: Ran 'python3 -m pytest -q -p no:cacheprovider' (exit code 0)",
            "[OK] DONE: Task marked complete",
        ],
        done=True,
    ),
    "chatgpt_search_then_read_range": Case(
        [
            "[OK] SEARCH: 2 matches for 'json.' in 1 file (shown under Search Results)",
            "[OK] READ_FILE: Lines 9-12 of 'app.py' are shown under Requested File Contents",
        ],
        outbox=(
            "--- app.py ---\n"
            "   9 |     def load(self):\n"
            "  10 |         if not self.path.exists():\n"
            "  11 |             return {}\n"
            "  12 |         return json.loads(self.path.read_text())\n"
            '(3 more lines below; READ_FILE with start_line="13" to see them)\n'
            "--- end app.py ---",
            "## Search Results\n"
            "SEARCH \"json.\" in files matching '*.py':\n"
            "app.py-10-         if not self.path.exists():\n"
            "app.py-11-             return {}\n"
            "app.py:12:         return json.loads(self.path.read_text())\n"
            "app.py-13-\n"
            "app.py-14-     def save(self, data):\n"
            "app.py:15:         self.path.write_text(json.dumps(data))\n",
        ),
    ),
    # --- Claude-style ---------------------------------------------------------------------------
    "claude_thinking_then_commands": Case(
        [
            "[OK] REPLACE: Replaced lines 4-5 of 'test_calc.py' (2 lines replaced by 6)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import test_calc as t; t.test_add(); "
            "t.test_subtract(); t.test_divide(); print('ok')\"' (exit code 0)",
        ],
        outbox=("  Output: ok\n",),
    ),
    "claude_edit_run_top_down": Case(
        [
            "[OK] EDIT_FILE: Replaced line 1 of 'calc.py' (1 line replaced by 1)",
            "[OK] EDIT_FILE: Replaced lines 8-9 of 'calc.py' (2 lines replaced by 3)",
            "[OK] EDIT_FILE: Appended 4 lines to 'calc.py'",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import calc; print(calc.subtract(5, 3), "
            "calc.power(2, 10))\"' (exit code 0)",
        ],
        seen={"calc.py": CALC},
        sequence=2,
        after={
            "calc.py": '"""Small calculator: add, subtract, divide and power."""\n\n\n'
            "def add(a, b):\n    return a + b\n\n\n"
            'def subtract(a, b):\n    """a minus b."""\n    return a - b\n\n\n'
            "def divide(a, b):\n    return a / b\n\n\ndef power(a, b):\n    return a**b\n"
        },
        outbox=("  Output: 2 1024\n",),
    ),
    "claude_replace_two_blocks": Case(
        [
            "[OK] REPLACE: Changed 'app.py' with 2 blocks: lines 9-11 (3 lines replaced by 3); "
            "lines 14-15 (2 lines replaced by 3)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import app; s = app.Store('out/data.json'); "
            "s.save({'a': 1}); print(s.load())\"' (exit code 0); it created 1 file (out/data.json)",
        ],
        outbox=("  Output: {'a': 1}\n",),
    ),
    "claude_session_echo_current_sequence": Case(
        ["[OK] CREATE_FILE: Created 'CHANGELOG.md'", "[OK] DONE: Task marked complete"],
        sequence=3,
        done=True,
    ),
    # --- Gemini-style ---------------------------------------------------------------------------
    "gemini_bold_tags_and_fenced_body": Case(
        [
            f"[OK] CREATE_FILE: Created 'text_utils.py' {FENCE}",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"from text_utils import slugify; "
            "print(slugify('Hello, World!'))\"' (exit code 0)",
        ],
        outbox=("  Output: hello-world\n",),
    ),
    "gemini_escaped_brackets": Case(
        [
            "[OK] CREATE_FILE: Created 'version.py'",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import version; print(version.VERSION)\"' "
            "(exit code 0)",
        ],
        after={"version.py": 'VERSION = "0.2.0"\n'},
    ),
    "gemini_inline_code_tags": Case(
        [
            "[OK] READ_FILE: 'calc.py' is shown under Requested File Contents",
            "[OK] READ_FILE: 'test_calc.py' is shown under Requested File Contents",
        ],
        outbox=(
            "--- calc.py ---\n"
            '   1 | """Small calculator."""\n'
            "   2 |\n   3 |\n"
            "   4 | def add(a, b):\n"
            "   5 |     return a + b\n",
            "  12 | def divide(a, b):\n  13 |     return a / b\n--- end calc.py ---\n",
            "--- test_calc.py ---\n   1 | import calc\n",
        ),
    ),
    "gemini_bold_done": Case(["[OK] DONE: Task marked complete"], sequence=4, done=True),
    # --- a local model's sloppy output --------------------------------------------------------
    "local_lowercase_unquoted": Case(
        [
            "[OK] CREATE_FILE: Created 'hello.py'",
            "[OK] RUN_COMMAND: Ran 'python3 hello.py' (exit code 0)",
        ],
        outbox=("  Output: hello from a local model\n",),
    ),
    "local_curly_quotes": Case(
        [
            "[OK] CREATE_FILE: Created 'notes/todo.txt'",
            "[OK] READ_FILE: Lines 4-5 of 'calc.py' are shown under Requested File Contents",
        ],
        after={"notes/todo.txt": "- write tests\n- add CLI\n"},
        outbox=(
            "--- calc.py ---\n   4 | def add(a, b):\n   5 |     return a + b\n"
            '(8 more lines below; READ_FILE with start_line="6" to see them)\n--- end calc.py ---',
        ),
    ),
    "local_spaces_around_equals": Case(
        [
            "[OK] EDIT_FILE: Replaced line 5 of 'calc.py' (1 line replaced by 1)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import calc; print(calc.add(1, 2))\"' "
            "(exit code 0)",
        ],
        after={"calc.py": CALC.replace("a + b\n", "a + b  # sum\n")},
    ),
    "local_missing_closing_tag": Case(
        [
            "[OK] CREATE_FILE: Created 'one.txt'",
            "[FAILED] CREATE_FILE: reply line 7: no closing [/CREATE_FILE] tag; this command and "
            "the rest of the reply were ignored",
        ],
        after={"one.txt": "first file\n", "two.txt": None},
    ),
    "local_placeholder_overwrite": Case(
        [
            "[FAILED] CREATE_FILE: Not written: line 8 of the new content of 'calc.py' "
            "('# ... rest of the code unchanged ...') stands for code that was left out, and "
            "CREATE_FILE replaces the whole file; send the complete content, or change only "
            "some lines with REPLACE"
        ],
        after={"calc.py": CALC},
    ),
    "local_line_numbers_copied_in_replace": Case(
        [
            "[OK] REPLACE: Replaced lines 12-13 of 'calc.py' (2 lines replaced by 2, removed the "
            "line numbers copied from the file view)"
        ],
        after={"calc.py": CALC.replace("a / b\n", 'a / b if b else float("inf")\n')},
    ),
    "local_bare_done_at_end": Case(["[OK] DONE: Task marked complete"], done=True),
    "local_malformed_attributes": Case(
        [
            "[FAILED] EDIT_FILE: reply line 1: attribute 'start_line' must be a whole number, "
            "got 'twelve'",
            "[FAILED] READ_FILE: reply line 5: attribute 'path' is given twice",
            "[FAILED] DELETE_FILE: File 'missing.txt' not found",
        ],
        after={"calc.py": CALC},
    ),
    "local_cr_only_line_endings": Case(
        [
            "[OK] CREATE_FILE: Created 'cr.txt'",
            "[OK] RUN_COMMAND: Ran 'cat cr.txt' (exit code 0)",
        ],
        after={"cr.txt": "alpha\nbeta\n"},
    ),
    "local_crlf_and_bom": Case(
        [
            "[OK] CREATE_FILE: Created 'run.sh'",
            "[OK] RUN_COMMAND: Ran 'sh run.sh' (exit code 0)",
        ],
        after={"run.sh": '#!/bin/sh\necho "running"\n'},
        outbox=("  Output: running\n",),
    ),
    # --- EDIT_FILE line numbers (docs/protocol.md §5.1) -----------------------------------------
    "edit_insert_and_append": Case(
        [
            "[OK] EDIT_FILE: Inserted 1 line before line 1 of 'calc.py'",
            "[OK] EDIT_FILE: Appended 3 lines to 'calc.py'",
        ],
        seen={"calc.py": CALC},
        sequence=2,
        after={
            "calc.py": f"# -*- coding: utf-8 -*-\n{CALC}\n\n"
            '__all__ = ["add", "subtract", "divide"]\n'
        },
    ),
    "edit_overlapping_ranges": Case(
        [
            "[OK] EDIT_FILE: Replaced lines 8-9 of 'calc.py' (2 lines replaced by 2)",
            f"[FAILED] EDIT_FILE: {ONE_EDIT}",
        ],
        seen={"calc.py": CALC},
        sequence=2,
        after={"calc.py": CALC.replace("a - b\n", "a - b  # difference\n")},
    ),
    "edit_after_the_file_changed": Case(
        [
            f"[OK] EDIT_FILE: Replaced line 5 of 'calc.py' (1 line replaced by 1); {STALE}; "
            "warning: Python cannot compile it: IndentationError at line 5: unexpected indent"
        ],
        files=dict(PROJECT, **{"calc.py": "#!/usr/bin/env python3\n" + CALC}),
        seen={"calc.py": CALC},
        sequence=2,
    ),
    "edit_with_a_fresh_view": Case(
        ["[OK] EDIT_FILE: Replaced line 5 of 'calc.py' (1 line replaced by 1)"],
        seen={"calc.py": CALC},
        sequence=2,
        after={"calc.py": CALC.replace("a + b\n", "a + b  # checked\n")},
    ),
    "create_then_edit_same_reply": Case(
        [
            "[OK] CREATE_FILE: Created 'lib.py'",
            "[OK] EDIT_FILE: Replaced line 2 of 'lib.py' (1 line replaced by 1)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import lib; print(lib.double(21))\"' "
            "(exit code 0)",
        ],
        outbox=("  Output: 42\n",),
    ),
    # --- REPLACE (docs/protocol.md §5.2) ----------------------------------------------------------
    "replace_trailing_whitespace": Case(
        [
            "[OK] REPLACE: Replaced lines 3-4 of 'notes.md' (2 lines replaced by 2, matched "
            "ignoring trailing whitespace)"
        ],
        after={"notes.md": "# Notes\n\n## Todo\n- parser (done)\n- printer\n"},
    ),
    "replace_reindented": Case(
        [
            "[OK] REPLACE: Replaced lines 9-12 of 'app.py' (4 lines replaced by 5, matched with "
            "other indentation, REPLACE re-indented)"
        ],
        after={
            "app.py": APP.replace(
                "        return json.loads(self.path.read_text())\n",
                "        with self.path.open() as f:\n            return json.load(f)\n",
            )
        },
    ),
    "replace_not_found_did_you_mean": Case(
        [
            "[FAILED] REPLACE: The block at reply line 4: the SEARCH text is not in 'calc.py'; "
            "did you mean lines 12-13 (shown below)? SEARCH must repeat the file's lines exactly; "
            "nothing was changed"
        ],
        after={"calc.py": CALC},
        outbox=("  Output:\n      12 | def divide(a, b):\n      13 |     return a / b\n",),
    ),
    "replace_several_matches": Case(
        [
            "[FAILED] REPLACE: The block at reply line 6: the SEARCH text matches 2 places in "
            "'dup.py' (starting at lines 2, 6); add lines around it so that it matches one place "
            "only; nothing was changed"
        ],
        files={"dup.py": "def a():\n    return None\n\n\ndef b():\n    return None\n"},
    ),
    "replace_second_block_fails": Case(
        [
            "[FAILED] REPLACE: Block 2 of 2 (reply line 11): the SEARCH text is not in 'calc.py'; "
            "did you mean lines 8-9 (shown below)? SEARCH must repeat the file's lines exactly; "
            "nothing was changed"
        ],
        after={"calc.py": CALC},
    ),
    "replace_empty_search_creates_file": Case(
        [
            "[OK] REPLACE: Created 'pkg/constants.py' (2 lines)",
            "[FAILED] REPLACE: The block at reply line 14: the SEARCH part is empty, but "
            "'calc.py' is not; an empty SEARCH only fills a new or empty file. To add lines, "
            "SEARCH for the lines next to them and repeat them in REPLACE; nothing was changed",
        ],
        after={"pkg/constants.py": "PI = 3.14159\nE = 2.71828\n", "calc.py": CALC},
    ),
    "replace_wrapped_in_fence_inside_tags": Case(
        [
            "[OK] REPLACE: Replaced lines 8-9 of 'calc.py' (2 lines replaced by 2, ignored the "
            "code fence lines around the block)"
        ],
        after={"calc.py": CALC.replace("a - b\n", "a - b  # a minus b\n")},
    ),
    # --- SEARCH and READ_FILE (docs/protocol.md §5.4, §5.5) --------------------------------------
    "search_regex_glob": Case(
        [
            "[OK] SEARCH: 5 matches for '^def \\w+' in 2 files (shown under Search Results)",
            "[OK] SEARCH: 1 match for 'TODO' in 1 file (shown under Search Results)",
        ],
        outbox=(
            "## Search Results\n"
            "SEARCH \"^def \\w+\" in files matching '*.py':\n"
            "calc.py-2-\n"
            "calc.py-3-\n"
            "calc.py:4: def add(a, b):\n"
            "calc.py-5-     return a + b\n"
            "calc.py-6-\n"
            "calc.py-7-\n"
            "calc.py:8: def subtract(a, b):\n",
            "calc.py:12: def divide(a, b):\ncalc.py-13-     return a / b\n--\ntest_calc.py-2-\n",
            "test_calc.py:8: def test_divide():\n"
            "test_calc.py-9-     assert calc.divide(6, 3) == 2\n\n"
            'SEARCH "TODO":\n'
            "notes.md-1- # Notes\n"
            "notes.md-2-\n"
            "notes.md:3: ## Todo\n",
        ),
    ),
    "search_invalid_regex": Case(
        [
            "[FAILED] SEARCH: Invalid regular expression 'def (divide': missing ), unterminated "
            "subpattern at position 4",
            "[OK] SEARCH: No matches for 'def (divide' (4 files searched)",
        ]
    ),
    "read_file_ranges": Case(
        [
            "[OK] READ_FILE: Lines 12-13 of 'calc.py' are shown under Requested File Contents",
            "[OK] READ_FILE: Line 1 of 'test_calc.py' is shown under Requested File Contents",
        ],
        outbox=(
            "## Requested File Contents\n"
            "--- calc.py ---\n  12 | def divide(a, b):\n  13 |     return a / b\n"
            "--- end calc.py ---\n"
            "--- test_calc.py ---\n   1 | import calc\n"
            '(8 more lines below; READ_FILE with start_line="2" to see them)\n'
            "--- end test_calc.py ---",
        ),
    ),
    "read_large_file_window": Case(
        [
            "[OK] READ_FILE: 'big.log' is shown under Requested File Contents",
            "[OK] READ_FILE: 'big.log' from line 899 on is shown under Requested File Contents",
        ],
        files={"big.log": "".join(f"entry {i}\n" for i in range(1, 901))},
        outbox=(
            "--- big.log ---\n   1 | entry 1\n",
            ' 400 | entry 400\n(500 more lines below; READ_FILE with start_line="401" to see '
            "them)\n--- end big.log ---\n",
            "--- big.log ---\n 899 | entry 899\n 900 | entry 900\n--- end big.log ---",
        ),
    ),
    "read_binary_and_quiet_and_loud_commands": Case(
        [
            "[OK] READ_FILE: 'logo.png' is shown under Requested File Contents",
            "[OK] RUN_COMMAND: Ran 'mkdir -p build' (exit code 0)",
            "[OK] RUN_COMMAND: Ran 'python3 -c \"print('report line ' * 1000)\"' (exit code 0)",
        ],
        files={"logo.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
        outbox=(
            "--- logo.png ---\n(binary file, 17 bytes, not shown)\n--- end logo.png ---",
            "[OK] RUN_COMMAND: Ran 'mkdir -p build' (exit code 0)\n  Output: (no output)\n",
            " characters cut ...]\n",
        ),
    ),
    # --- guards ---------------------------------------------------------------------------------
    "syntax_error_warning": Case(
        [
            "[OK] CREATE_FILE: Created 'broken.py'; warning: Python cannot compile it: "
            "SyntaxError at line 1: expected ':'",
            "[OK] REPLACE: Replaced lines 4-5 of 'calc.py' (2 lines replaced by 2); warning: "
            "Python cannot compile it: SyntaxError at line 5: '(' was never closed",
        ]
    ),
    "legit_ellipsis_is_not_a_placeholder": Case(
        ["[OK] CREATE_FILE: Overwrote 'shapes.py'"],
        files={"shapes.py": "class Shape:\n    pass\n"},
    ),
    "done_refused_after_failure": Case(
        [
            "[FAILED] RUN_COMMAND: Ran 'python3 -c \"import calc; assert calc.divide(1, 0) == 0\"' "
            "(exit code 1)",
            "[FAILED] DONE: Not accepted: 1 command(s) above failed; fix them, then send [DONE] "
            "again",
        ],
        outbox=("ZeroDivisionError: division by zero",),
    ),
    "rejected_paths": Case(
        [
            "[FAILED] CREATE_FILE: REJECTED: Path is outside workspace",
            "[FAILED] CREATE_FILE: REJECTED: Path is protected ('.git/')",
            "[FAILED] READ_FILE: REJECTED: Path is outside workspace",
        ]
    ),
    # --- the reply's own shape -----------------------------------------------------------------
    "fenced_run_command": Case(
        [
            "[OK] RUN_COMMAND: Ran 'python3 -c \"import calc; print(calc.add(40, 2))\"' "
            "(exit code 0)"
        ],
        outbox=("  Output: 42\n",),
    ),
    "prose_with_brackets_between_commands": Case(
        [
            "[OK] CREATE_FILE: Created 'todo.txt'",
            "[OK] RUN_COMMAND: Ran 'cat todo.txt' (exit code 0)",
        ],
        after={"todo.txt": "[ ] write tests\n[x] write code\n"},
    ),
    "closing_tag_of_another_command_in_body": Case(
        ["[OK] CREATE_FILE: Created 'docs/protocol.md'"],
        after={
            "docs/protocol.md": "# Editing files\n\nUse an edit block:\n\n"
            '    [EDIT_FILE path="a.py" start_line="1" end_line="2"]\n    new lines\n'
            "    [/EDIT_FILE]\n\nand finish with\n[/DONE]\n"
        },
    ),
    "delete_and_recreate": Case(
        ["[OK] DELETE_FILE: Deleted 'notes.md'", "[OK] CREATE_FILE: Created 'notes.md'"],
        after={"notes.md": "# Notes\n\nNothing yet.\n"},
    ),
    # --- the session/sequence echo (docs/protocol.md §4.1, §7) -----------------------------------
    "wrong_session_refused": Case(
        [],
        refused="The reply wrong_session_refused.txt was not applied: it names session "
        f"0badc0de, but it was given to session {SID}.",
        after={"other.txt": None},
    ),
    "older_sequence_refused": Case(
        [],
        sequence=4,
        refused="The reply older_sequence_refused.txt was not applied: it answers prompt 2, "
        "but the session is at prompt 4.",
        after={"calc.py": CALC},
    ),
}


def run_case(tmp: Path, name: str, case: Case) -> tuple[TurnReport, SessionStore]:
    """A session at ``case.sequence`` on ``case.files``, then the reply applied to it."""
    store = SessionStore(tmp)
    store.ensure_dirs()
    for path, content in case.files.items():
        (store.workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (store.workspace / path).write_text(content)
    state = SessionState(
        session_id=SID,
        task="Work on the calculator",
        workspace=str(store.workspace),
        sequence_number=case.sequence,
        shown_files={path: sha(content) for path, content in case.seen.items()},
    )
    store.save(state)
    write_outbox(store, state)
    data = (REPLIES / f"{name}.txt").read_bytes()
    report = apply_reply(
        store, SID, Reply(data, f"{name}.txt"), TurnOptions(shell=Shell(timeout=20))
    )
    return report, store


def test_every_reply_has_a_case_and_there_are_enough():
    from test_reply_slips import SLIP_CASES

    names = {path.stem for path in REPLIES.glob("*.txt")}
    assert names == set(CASES) | set(SLIP_CASES)
    assert len(names) >= 40


@pytest.mark.parametrize("name", sampled(sorted(CASES), every=2))
def test_reply(tmp_path: Path, name: str) -> None:
    check_case(tmp_path, name, CASES[name])


def check_case(tmp_path: Path, name: str, case: Case) -> None:
    """Apply the reply ``name`` as ``case`` says, and check all it says must come of it."""
    report, store = run_case(tmp_path, name, case)
    assert [r.headline for r in report.outcome.results] == case.results
    for path, content in case.after.items():
        file = store.workspace / path
        assert (file.read_text() if file.exists() else None) == content, path
    state = store.load(SID)
    if case.refused:
        assert report.skipped and report.notes[0].startswith(case.refused)
        assert (report.history / "reply.txt").read_bytes() == (REPLIES / f"{name}.txt").read_bytes()
        assert state.sequence_number == case.sequence
        return
    assert not report.skipped and report.notes == []
    assert state.is_complete == case.done
    assert state.sequence_number == case.sequence + 1
    if case.done:
        assert report.outbox is None
        return
    assert report.outbox is not None
    text = report.outbox.read_text()
    assert text.startswith(
        f"=== HEADER ===\nSession: {SID}\nSequence: {case.sequence + 1}\nTask: Work on the "
        "calculator\nProtocol: 1.2\n"
    )
    for needle in case.outbox:
        assert needle in text
