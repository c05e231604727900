"""``codingagent diff``: a session's whole change as one patch that reverses cleanly (with the
real ``patch`` binary), file commands' and RUN_COMMAND's changes alike."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invoking import Run
from sampling import examples

from codingagent.records.changeset import FileChange
from codingagent.records.changeset import patch as unified

pytestmark = pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def started(tmp_path: Path) -> Run:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "core.py").write_text("def f():\n    return (1, 2)\n")
    (ws / "app.ts").write_text("export class Dashboard {}\nconst d = new Dashboard()")  # no \n
    (ws / "old.txt").write_text("to be removed\n")
    run = Run(tmp_path / "run", ws)
    run.start("--sandbox", "none")
    return run


TURN_1 = """Session: {session} Sequence: 1
[REPLACE path="core.py"]
<<<<<<< SEARCH
    return (1, 2)
=======
    return [1, 2]
>>>>>>> REPLACE
[/REPLACE]
[CREATE_FILE path="docs/new.md"]
hello
[/CREATE_FILE]
[RUN_COMMAND]
sed -i 's/Dashboard/Board/g' app.ts && rm old.txt
[/RUN_COMMAND]
"""


def test_diff_shows_replace_create_and_sed_and_patch_r_restores(tmp_path: Path) -> None:
    run = started(tmp_path)
    before = tree(run.ws)
    run.step(TURN_1.format(session=run.session), "--sandbox", "none")
    run.step(
        f"Session: {run.session} Sequence: 2\n[RUN_COMMAND]\necho more >> core.py\n[/RUN_COMMAND]",
        "--sandbox",
        "none",
    )
    result = run.cli("diff", run.session)
    assert result.exit_code == 0, result.output
    patch = result.stdout
    assert "\x1b[" not in patch  # piped: plain
    assert "diff --git a/core.py b/core.py\n--- a/core.py\n+++ b/core.py\n" in patch
    assert "-    return (1, 2)\n+    return [1, 2]\n+more\n" in patch
    assert "diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n--- /dev/null\n" in patch
    assert "+export class Board {}\n" in patch and "\\ No newline at end of file\n" in patch
    assert "deleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n" in patch
    (tmp_path / "all.patch").write_text(patch)
    done = subprocess.run(
        ["patch", "-R", "-p1", "-i", str(tmp_path / "all.patch")],
        cwd=run.ws,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(run.ws) == before
    assert not (run.ws / "docs").exists()


def test_diff_of_one_turn(tmp_path: Path) -> None:
    run = started(tmp_path)
    run.step(TURN_1.format(session=run.session), "--sandbox", "none")
    after_first = tree(run.ws)
    run.step(
        f"Session: {run.session} Sequence: 2\n[RUN_COMMAND]\necho more >> core.py\n[/RUN_COMMAND]",
        "--sandbox",
        "none",
    )
    second = run.cli("diff", run.session, "--turn", "2").stdout
    assert second.count("diff --git") == 1 and "+more\n" in second
    assert "return [1, 2]" in second and "-    return [1, 2]" not in second
    first = run.cli("diff", run.session, "--turn", "1").stdout
    assert "+more" not in first and first.count("diff --git") == 4
    (tmp_path / "two.patch").write_text(second)
    subprocess.run(
        ["patch", "-R", "-p1", "-i", str(tmp_path / "two.patch")], cwd=run.ws, check=True
    )
    assert tree(run.ws) == after_first
    missing = run.cli("diff", run.session, "--turn", "7")
    assert missing.exit_code == 1 and "has no turn 7 (its turns: 1, 2)" in missing.output


def test_diff_colors_on_request_and_says_when_nothing_changed(tmp_path: Path) -> None:
    run = started(tmp_path)
    nothing = run.cli("diff", run.session)
    assert nothing.exit_code == 0 and "changed no file" in nothing.output
    run.step(TURN_1.format(session=run.session), "--sandbox", "none")
    colored = run.cli("diff", run.session, "--color").stdout
    assert "\x1b[32m+    return [1, 2]\x1b[0m" in colored
    assert "\x1b[31m-    return (1, 2)\x1b[0m" in colored


def test_diff_of_a_session_whose_workspace_is_gone_says_so(tmp_path: Path) -> None:
    """Not a patch that deletes every file the session changed."""
    run = started(tmp_path)
    run.step(TURN_1.format(session=run.session), "--sandbox", "none")
    shutil.rmtree(run.ws)
    gone = run.cli("diff", run.session)
    assert gone.exit_code == 1, gone.output
    assert f"The workspace of session {run.session} is gone" in gone.output
    assert "diff --git" not in gone.output


lines = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "é"]), max_size=8)


@settings(max_examples=examples(40), deadline=None)
@given(old=lines, new=lines, old_end=st.booleans(), new_end=st.booleans())
def test_any_text_change_reverses_with_patch(
    tmp_path_factory: pytest.TempPathFactory,
    old: list[str],
    new: list[str],
    old_end: bool,
    new_end: bool,
) -> None:
    folder = tmp_path_factory.mktemp("p")
    before = ("\n".join(old) + ("\n" if old_end and old else "")).encode()
    after = ("\n".join(new) + ("\n" if new_end and new else "")).encode()
    if before == after:
        return
    (folder / "f.txt").write_bytes(after)
    text, binary = unified([FileChange("f.txt", before, 0o100644, after, 0o100644)])
    assert not binary
    done = subprocess.run(
        ["patch", "-R", "-p1", "--quiet"], cwd=folder, input=text.encode(), capture_output=True
    )
    assert done.returncode == 0, (text, done.stdout, done.stderr)
    assert (folder / "f.txt").read_bytes() == before
