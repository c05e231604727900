"""A real project's files as they are (issue 51): a file that is not UTF-8 is shown decoded
and said to be so wherever its content is shown (READ_FILE, files named up front, SEARCH, the
project's instructions, the code the task points at), an edit never writes it back re-encoded,
and an edit keeps a file's line endings and its missing final newline (docs/prompts.md, "Files
that are not UTF-8")."""

from __future__ import annotations

from pathlib import Path

import pytest
from executing import edit, headlines, put, replace, run
from turns import step

from codingagent.protocol.commands import Patch
from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session
from codingagent.workspace.text import decoded

LEGACY = b"# Caf\xe9 helpers\n\n\ndef greet(name):\n    return 'Bonjour ' + name + ' \x93!\x94'\n"
NOTE = "not UTF-8 (from line 1): shown decoded as cp1252, one character a byte"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "legacy.py").write_bytes(LEGACY)
    (folder / "modern.py").write_text("def hello():\n    return 'café'\n")
    return folder


def session(tmp_path: Path, project: Path, task: str = "t", files=()) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path / "run")
    store.ensure_dirs()
    state, _ = start_session(store, task, project, files=files)
    return store, state.session_id


def prompt(store: SessionStore, sid: str) -> str:
    return store.outbox_path(sid, store.load(sid).sequence_number).read_text()


def test_read_file_shows_a_latin1_file_decoded_and_says_so(tmp_path, project):
    store, sid = session(tmp_path, project)
    step(store, sid, '[READ_FILE path="legacy.py"]\n[READ_FILE path="modern.py"]\n')
    shown = prompt(store, sid)
    assert "   1 | # Café helpers" in shown
    assert "'Bonjour ' + name + ' “!”'" in shown
    assert f"({NOTE}; EDIT_FILE, REPLACE and PATCH refuse it)" in shown
    assert shown.count("not UTF-8") == 1  # modern.py is UTF-8: nothing said
    assert "\ufffd" not in shown


def test_a_named_file_is_said_not_utf8_in_the_first_prompt(tmp_path, project):
    store, sid = session(tmp_path, project, files=["legacy.py"])
    assert NOTE in prompt(store, sid) and "\ufffd" not in prompt(store, sid)


def test_search_hits_in_a_latin1_file_are_decoded_and_said(tmp_path, project):
    store, sid = session(tmp_path, project)
    step(store, sid, '[SEARCH query="Bonjour"]\n[SEARCH query="caf"]\n')
    shown = prompt(store, sid)
    assert "legacy.py:5:     return 'Bonjour ' + name + ' “!”'" in shown
    assert "(not UTF-8, lines shown decoded as cp1252: legacy.py)" in shown
    assert "modern.py:2:     return 'café'" in shown
    assert "\ufffd" not in shown


def test_instructions_that_are_not_utf8_say_so(tmp_path, project):
    (project / "AGENTS.md").write_bytes(b"Use fran\xe7ais in messages.\n")
    store, sid = session(tmp_path, project)
    shown = prompt(store, sid)
    assert "Use français in messages." in shown
    assert "(not UTF-8 (from line 1): shown decoded as cp1252" in shown


def test_the_code_the_task_points_at_says_its_file_is_not_utf8(tmp_path, project):
    store, sid = session(tmp_path, project, task="greet in legacy.py says hello wrong")
    shown = prompt(store, sid)
    section = shown[shown.index("## Code the Task Points At") :]
    assert "--- legacy.py ---\n(not UTF-8 (from line 1)" in section
    assert "\ufffd" not in section


@pytest.mark.parametrize(
    "command",
    [
        edit("legacy.py", 1, 1, "# Cafe helpers\n"),
        replace("legacy.py", ("def greet(name):\n", "def greet(name: str):\n")),
        Patch(
            line=1,
            body_line=2,
            text="--- a/legacy.py\n+++ b/legacy.py\n@@ -4 +4 @@\n-def greet(name):\n"
            "+def greet(name: str):\n",
        ),
    ],
    ids=["EDIT_FILE", "REPLACE", "PATCH"],
)
def test_an_edit_never_writes_a_latin1_file_back_re_encoded(ws, command):
    path = put(ws, "legacy.py", LEGACY)
    (result,) = headlines(run(ws, command))
    assert result.startswith(f"[FAILED] {command.kind}: ")
    assert "'legacy.py' is not a UTF-8 text file (from line 1; it reads as cp1252)" in result
    assert "never re-encode a file" in result
    assert path.read_bytes() == LEGACY


def test_an_edit_keeps_crlf_line_endings_and_a_missing_final_newline(ws):
    path = put(ws, "win.py", b"a = 1\r\nb = 2\r\nc = 3")
    run(ws, replace("win.py", ("b = 2\n", "b = 20\n")))
    assert path.read_bytes() == b"a = 1\r\nb = 20\r\nc = 3"
    run(ws, edit("win.py", 1, 1, "a = 10\n"))
    assert path.read_bytes() == b"a = 10\r\nb = 20\r\nc = 3"


def test_what_text_is_shown_as():
    assert decoded("café".encode()) == ("café", None, 0)
    assert decoded(b"ok\n\x93quoted\x94\n") == ("ok\n“quoted”\n", "cp1252", 2)
    # 0x81 has no character in cp1252: every byte is one Latin-1 character then
    assert decoded(b"\x81\xe9") == ("\x81é", "latin-1", 1)
    cut = "né".encode()[:-1]  # a read cut inside a character is no byte that is not UTF-8
    assert decoded(cut, whole=False) == ("n", None, 0)
    assert decoded(cut).encoding == "cp1252"
    assert decoded(b"x").note == ""
