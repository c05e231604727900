"""CREATE_FILE: creating and overwriting, and the guard against placeholders for left-out code."""

from __future__ import annotations

import pytest
from executing import headlines, only, put, run

from codingagent.execute import execute
from codingagent.protocol.commands import CreateFile
from codingagent.protocol.parser import parse
from codingagent.sandbox.shell import Shell
from codingagent.workspace import Workspace

PLACEHOLDERS = [
    "# ... rest of the code unchanged",
    "    # ... (same as before)",
    "// existing code",
    "// ... existing code ...",
    "<rest of file>",
    "# Rest of the file remains the same",
    "/* ... other methods unchanged ... */",
    "<!-- ... existing content ... -->",
    "... rest of the implementation",
    "    # (keep the existing handlers here)",
    "# imports unchanged",
    "# ... omitted for brevity ...",
    "[... remaining tests ...]",
    "  // … previous code …",
]


LEGIT = [
    "def stub(self) -> int: ...",
    "    ...",
    "const all = [...items, ...more];",
    "function f(...args) { return g(...args); }",
    "const merged = { ...defaults, ...options };",
    "# TODO: handle the rest of the input",
    "// see the rest of the file for the parser",
    "## Rest of the API",
    "# Other methods",
    "print('...')",
    "The rest of the story is told in chapter 2.",
    "x = y[...]",
    "# existing users keep their settings",
    "# leave the buffer unchanged when empty",
    "raise NotImplementedError  # ...",
]


def test_create_then_overwrite(ws: Workspace) -> None:
    outcome = run(
        ws,
        CreateFile(line=1, path="src/a.py", content="one\n"),
        CreateFile(line=4, path="src/a.py", content="two\n"),
    )
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'src/a.py'",
        "[OK] CREATE_FILE: Overwrote 'src/a.py'",
    ]
    assert (ws.root / "src/a.py").read_text() == "two\n"
    assert outcome.changed == ["src/a.py"]


def test_create_on_a_directory_fails(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    result = only(run(ws, CreateFile(line=1, path="d", content="x")))
    assert result.headline == "[FAILED] CREATE_FILE: 'd' is a directory"


@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_create_file_with_a_placeholder_over_an_existing_file_is_refused(ws, placeholder) -> None:
    path = put(ws, "app.py", "import os\n\n\ndef main():\n    print(os.getcwd())\n")
    content = f"import os\nimport sys\n\n{placeholder}\n"
    result = run(ws, CreateFile(line=1, path="app.py", content=content)).results[0]
    assert result.headline == (
        f"[FAILED] CREATE_FILE: Not written: line 4 of the new content of 'app.py' "
        f"('{placeholder.strip()}') stands for code that was left out, and CREATE_FILE replaces "
        "the whole file; send the complete content, or change only some lines with REPLACE"
    )
    assert path.read_text() == "import os\n\n\ndef main():\n    print(os.getcwd())\n"


def test_a_placeholder_in_a_new_file_is_written(ws) -> None:
    content = "def main():\n    # ... rest of the code unchanged\n    pass\n"
    outcome = run(ws, CreateFile(line=1, path="new.py", content=content))
    assert headlines(outcome) == ["[OK] CREATE_FILE: Created 'new.py'"]


@pytest.mark.parametrize("line", LEGIT)
def test_legit_code_is_never_taken_for_a_placeholder(ws, line) -> None:
    put(ws, "f.txt", "old\n")
    outcome = run(ws, CreateFile(line=1, path="f.txt", content=f"start\n{line}\nend\n"))
    assert headlines(outcome) == ["[OK] CREATE_FILE: Overwrote 'f.txt'"]


def test_fence_removal_is_said_in_the_result(ws) -> None:
    reply = (
        '[CREATE_FILE path="a.py"]\n```python\nx = 1\n```\n[/CREATE_FILE]\n'
        '[EDIT_FILE path="a.py" start_line="1" end_line="1"]\n~~~\nx = 2\n~~~\n[/EDIT_FILE]\n'
    )
    outcome = execute(parse(reply), ws, Shell())
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'a.py' (removed the code fence around the content)",
        "[OK] EDIT_FILE: Replaced line 1 of 'a.py' (1 line replaced by 1) (removed the code "
        "fence around the content)",
    ]
    assert (ws.root / "a.py").read_text() == "x = 2\n"
