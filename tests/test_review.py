"""Review (docs/review.md): with ``review`` on, a reply's file changes are held, nothing written
and nothing run, until the user accepts or rejects them per file and per hunk, with a note; the
model is told what was rejected and why. Through the CLI (``step``, ``codingagent review``,
``undo``), the loop with a user at its front end, the terminal's question, and the hunk
engine's laws (hypothesis)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st
from invoking import run
from test_loop import Recording, ScriptedSource

from codingagent.execute.lines import split_lines
from codingagent.records.hunks import apply, hunks
from codingagent.records.store import SessionStore
from codingagent.review.decision import Choice
from codingagent.review.record import HeldReview
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import StopReason
from codingagent.settings import Settings, load_settings

B_BEFORE = "".join(f"line{n}\n" for n in range(1, 21))
REPLY = (
    '[EDIT_FILE path="a.py" start_line="1" end_line="1"]\nx = 2\n[/EDIT_FILE]\n'
    '[EDIT_FILE path="b.py" start_line="2" end_line="2"]\nLINE2\n[/EDIT_FILE]\n'
    '[EDIT_FILE path="b.py" start_line="18" end_line="18"]\nLINE18\n[/EDIT_FILE]\n'
    "[RUN_COMMAND]\ncat b.py > seen.txt\n[/RUN_COMMAND]\n"
)


def started(root: Path, *flags: str) -> tuple[SessionStore, str, Path]:
    """A session with review on, over a workspace holding a.py and b.py."""
    ws = root / "workspace"
    ws.mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n")
    (ws / "b.py").write_text(B_BEFORE)
    done = run(root, "start", "t", "--no-watch", "--sandbox", "none", "--commands", "allow", *flags)
    assert done.exit_code == 0, done.output
    store = SessionStore(root)
    (session,) = store.ids()
    return store, session, ws


def stepped(root: Path, reply: str, *flags: str) -> Result:
    path = root / f"reply{len(list(root.glob('reply*.txt')))}.txt"
    path.write_text(reply)
    return run(root, "step", str(path), *flags)


def prompt(root: Path, session: str, sequence: int) -> Path:
    return root / "outbox" / f"{session}_seq{sequence:04d}.txt"


# --- the scenario, through the CLI ------------------------------------------------------


def test_step_holds_the_changes_and_review_decides_them_per_file_and_hunk(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    held = stepped(tmp_path, REPLY)
    assert held.exit_code == 0, held.output
    assert "wait for your review" in held.stderr
    # Nothing written, nothing run, no next prompt.
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert (ws / "b.py").read_text() == B_BEFORE
    assert not (ws / "seen.txt").exists()
    assert not prompt(tmp_path, session, 2).exists()
    assert store.load(session).sequence_number == 1

    listed = run(tmp_path, "review")
    assert listed.exit_code == 0, listed.output
    numbers = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line[:3].strip()]
    assert [n for n in numbers if n[0].isdigit()] == ["1", "1.1", "2", "2.1", "2.2"]
    assert "a.py" in listed.stdout and "+LINE18" in listed.stdout
    as_json = json.loads(run(tmp_path, "review", "--json").stdout)
    assert [f["number"] for f in as_json["files"]] == ["1", "2"]
    assert [[h["number"] for h in f["hunks"]] for f in as_json["files"]] == [
        ["1.1"],
        ["2.1", "2.2"],
    ]

    note = "line 18 stays as it is"
    decided = run(tmp_path, "review", "--accept", "1", "--accept", "2.1", "--note", note)
    assert decided.exit_code == 0, decided.output
    b_after = B_BEFORE.replace("line2\n", "LINE2\n")
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert (ws / "b.py").read_text() == b_after  # its first hunk only
    assert (ws / "seen.txt").read_text() == b_after  # the command ran on what was accepted
    text = prompt(tmp_path, session, 2).read_text()
    assert "[OK] EDIT_FILE: Replaced line 1 of 'a.py'" in text
    assert (
        "[REJECTED BY USER] b.py: hunk 2 of 2 (line 18 of your version, in place of line 18)"
        in (text)
    )
    assert "    -line18\n    +LINE18\n" in text
    assert f"Note from the user: {note}" in text
    assert "--- b.py ---\n   1 | line1\n   2 | LINE2\n" in text  # the file as it now is
    assert "[OK] RUN_COMMAND: Ran 'cat b.py > seen.txt' (exit code 0)" in text
    assert run(tmp_path, "review").stderr.strip().endswith("holds no review")

    diff = run(tmp_path, "diff")
    assert "+x = 2" in diff.stdout and "+LINE2" in diff.stdout and "LINE18" not in diff.stdout
    undone = run(tmp_path, "undo")
    assert undone.exit_code == 0, undone.output
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert (ws / "b.py").read_text() == B_BEFORE
    assert not (ws / "seen.txt").exists()


def test_a_reply_with_no_file_change_is_never_held(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    unchanged = (
        '[CREATE_FILE path="a.py"]\nx = 1\n[/CREATE_FILE]\n'  # the content it has
        '[REPLACE path="b.py"]\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n'
        "[/REPLACE]\n[RUN_COMMAND]\necho ran > ran.txt\n[/RUN_COMMAND]\n"
    )
    done = stepped(tmp_path, unchanged)
    assert done.exit_code == 0, done.output
    assert (ws / "ran.txt").read_text() == "ran\n"
    assert store.load(session).sequence_number == 2
    assert "[FAILED] REPLACE" in prompt(tmp_path, session, 2).read_text()
    assert stepped(tmp_path, "[MESSAGE]\nhello\n[/MESSAGE]\n").exit_code == 0
    assert store.load(session).sequence_number == 3


def test_review_is_off_by_default_and_a_workspace_file_cannot_turn_it_off(tmp_path: Path) -> None:
    assert Settings().review is False
    _store, _session, ws = started(tmp_path)
    assert stepped(tmp_path, REPLY).exit_code == 0
    assert (ws / "a.py").read_text() == "x = 2\n" and (ws / "seen.txt").exists()
    (ws / "codingagent.toml").write_text("review = false\n")
    settings = load_settings(tmp_path, {"review": True}, workspaces=[ws])
    assert settings.review is True  # the flag wins anyway; and a file under it may not loosen:
    (tmp_path / "codingagent.toml").write_text("review = true\n")
    (ws / "pyproject.toml").write_text("[tool.codingagent]\nreview = false\n")
    assert load_settings(tmp_path, workspaces=[ws]).review is True


def test_while_a_review_waits_no_reply_is_applied_not_even_forced(tmp_path: Path) -> None:
    _store, _session, ws = started(tmp_path, "--review")
    assert stepped(tmp_path, REPLY).exit_code == 0
    for flags in ((), ("--force",)):
        other = stepped(tmp_path, '[CREATE_FILE path="c.py"]\nc\n[/CREATE_FILE]\n', *flags)
        assert other.exit_code == 0
        assert "wait for your review" in other.stderr and "was not applied" in other.stderr
    assert not (ws / "c.py").exists()
    refused = run(tmp_path, "undo")
    assert refused.exit_code == 1 and "before undoing a turn" in refused.stderr
    assert run(tmp_path, "review", "--accept", "all").exit_code == 0
    assert (ws / "b.py").read_text().count("LINE") == 2


def test_new_and_deleted_files_are_one_hunk_and_rejecting_them_writes_nothing(
    tmp_path: Path,
) -> None:
    _store, session, ws = started(tmp_path, "--review")
    reply = (
        '[CREATE_FILE path="new/c.py"]\none\ntwo\n[/CREATE_FILE]\n'
        '[DELETE_FILE path="a.py"]\n'
        '[DELETE_FILE path="b.py"]\n'
    )
    assert stepped(tmp_path, reply).exit_code == 0
    review = json.loads(run(tmp_path, "review", "--json").stdout)
    assert [(f["number"], f["path"], f["change"], len(f["hunks"])) for f in review["files"]] == [
        ("1", "new/c.py", "created", 1),
        ("2", "a.py", "deleted", 1),
        ("3", "b.py", "deleted", 1),
    ]
    assert review["files"][0]["hunks"][0]["lines"] == ["+one", "+two"]
    wrong = run(tmp_path, "review", "--accept", "1.2")
    assert wrong.exit_code == 1 and "There is no '1.2' in this review" in wrong.stderr
    assert run(tmp_path, "review", "--accept", "2.1", "--note", "keep b").exit_code == 0
    assert not (ws / "new").exists() and not (ws / "a.py").exists()
    assert (ws / "b.py").read_text() == B_BEFORE
    text = prompt(tmp_path, session, 2).read_text()
    assert "[REJECTED BY USER] new/c.py: the new file (2 lines): not created" in text
    assert "[REJECTED BY USER] b.py: its deletion: the file is still there" in text
    assert "[FAILED] CREATE_FILE: Created 'new/c.py'; the user rejected all of the change" in text


def test_a_rejected_change_makes_done_wait_for_the_next_reply(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    reply = '[CREATE_FILE path="c.py"]\nc = 1\n[/CREATE_FILE]\n[DONE]\nmade c.py\n[/DONE]\n'
    assert stepped(tmp_path, reply).exit_code == 0
    assert run(tmp_path, "review", "--reject-all", "--note", "not c.py").exit_code == 0
    state = store.load(session)
    assert not state.is_complete and not (ws / "c.py").exists()
    assert "[FAILED] DONE: Not accepted: 1 command(s) above failed" in (
        prompt(tmp_path, session, 2).read_text()
    )
    # Accepting everything lets DONE complete the session, as without review.
    assert stepped(tmp_path, reply.replace("c = 1", "c = 2")).exit_code == 0
    assert run(tmp_path, "review", "--accept", "all").exit_code == 0
    assert store.load(session).is_complete and (ws / "c.py").read_text() == "c = 2\n"


def test_a_file_changed_since_the_review_makes_it_anew(tmp_path: Path) -> None:
    _store, _session, ws = started(tmp_path, "--review")
    assert stepped(tmp_path, REPLY).exit_code == 0
    (ws / "b.py").write_text(B_BEFORE.replace("line4\n", "edited by hand\n"))
    stale = run(tmp_path, "review", "--accept", "all")
    assert stale.exit_code == 1
    assert "'b.py' changed since the review was made" in stale.stderr
    assert (ws / "a.py").read_text() == "x = 1\n"  # nothing was applied
    again = json.loads(run(tmp_path, "review", "--json").stdout)
    assert " edited by hand" in again["files"][1]["hunks"][0]["lines"]  # made from b.py now
    assert run(tmp_path, "review", "--accept", "all").exit_code == 0
    assert (ws / "b.py").read_text().splitlines()[3] == "edited by hand"


def test_discard_applies_nothing_and_the_prompt_takes_another_reply(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    assert stepped(tmp_path, REPLY).exit_code == 0
    misuse = run(tmp_path, "review", "--discard", "--accept", "1")
    assert misuse.exit_code == 2
    assert run(tmp_path, "review", "--note", "why").exit_code == 2
    dropped = run(tmp_path, "review", "--discard")
    assert dropped.exit_code == 0, dropped.output
    assert "nothing of its reply was applied" in dropped.stderr
    assert (ws / "a.py").read_text() == "x = 1\n" and not (ws / "seen.txt").exists()
    assert store.load(session).sequence_number == 1
    kept = list((tmp_path / "sessions" / session / "discarded").glob("*/reply.txt"))
    assert [p.read_text() for p in kept] == [REPLY]
    assert stepped(tmp_path, "[MESSAGE]\nanother\n[/MESSAGE]\n").exit_code == 0
    assert store.load(session).sequence_number == 2


# --- the loop with a user at its front end ----------------------------------------------------


class Reviewing(Recording):
    """A listener whose user reviews at the front end: ``choices`` in turn (None: later)."""

    def __init__(self, *choices: Choice | None) -> None:
        super().__init__()
        self.choices = list(choices)
        self.shown: list[HeldReview] = []

    def review(self, held: HeldReview) -> Choice | None:
        self.shown.append(held)
        return self.choices.pop(0) if self.choices else None


def loop_for(root: Path, listener: Recording, interactive: bool = True) -> SessionLoop:
    store = SessionStore(root)
    state, _ = start_session(store, "the task")
    (store.workspace / "b.py").write_text(B_BEFORE)
    return SessionLoop(
        store,
        Settings(clipboard=False, review=True),
        state.session_id,
        listener,
        interactive=interactive,
        shell=Shell(timeout=10, sandbox="none"),
    )


EDIT_B = '[EDIT_FILE path="b.py" start_line="2" end_line="2"]\nLINE2\n[/EDIT_FILE]\n'


def test_the_loop_puts_the_review_to_its_user_and_goes_on(tmp_path: Path) -> None:
    listener = Reviewing(Choice(("1",), "fine"))
    source = ScriptedSource(EDIT_B, "[DONE]\nok\n[/DONE]\n")
    with loop_for(tmp_path, listener) as loop:
        stop = loop.run(source)
    assert stop.reason is StopReason.COMPLETE
    assert [held.summary() for held in listener.shown] == ["1 file, 1 hunk"]
    assert source.prompts == [1, 2]
    assert "LINE2" in (tmp_path / "workspace" / "b.py").read_text()
    (second,) = (tmp_path / "outbox").glob("*_seq0002.txt")
    assert "accepted all of them.\nNote from the user: fine" in second.read_text()


def test_without_a_decision_the_loop_stops_and_resume_offers_the_same_review(
    tmp_path: Path,
) -> None:
    listener = Reviewing(None)
    source = ScriptedSource(EDIT_B, "never read")
    with loop_for(tmp_path, listener) as loop:
        stop = loop.run(source)
        assert stop.reason is StopReason.REVIEW
        assert f"codingagent review {loop.session_id}" in stop.message
        first = listener.shown[0]
        listener.choices = [Choice(("all",))]
        prompt_after = loop.prepare()  # `resume` on a terminal asks again
    assert [held.id for held in listener.shown] == [first.id, first.id]
    assert prompt_after is not None and prompt_after.sequence == 2
    assert "LINE2" in (tmp_path / "workspace" / "b.py").read_text()


def test_a_loop_that_cannot_ask_stops_and_prepare_says_how_to_decide(tmp_path: Path) -> None:
    listener = Reviewing(Choice(("all",)))  # never asked: no one at this front end
    with loop_for(tmp_path, listener, interactive=False) as loop:
        assert loop.run(ScriptedSource(EDIT_B)).reason is StopReason.REVIEW
        try:
            loop.prepare()
        except Exception as e:  # a SessionError for the console
            assert "wait for your review" in str(e)
        else:
            raise AssertionError("prepare went on past a held review")
    assert listener.shown == []


def test_the_terminal_asks_accept_reject_choose_or_later() -> None:
    from codingagent.frontends.approval import review_on_terminal
    from codingagent.review.proposal import Proposal, ProposedFile
    from codingagent.review.record import held_review
    from codingagent.state import SessionState

    before, after = B_BEFORE.encode(), B_BEFORE.replace("line2\n", "L2\n").replace("line18", "L18")
    proposed = ProposedFile(
        "b.py", "b.py", "changed", before, after.encode(), tuple(hunks(B_BEFORE, after)), 0
    )
    state = SessionState(session_id="ab12cd34", task="t", workspace="/w")
    held = held_review(state, "r.txt", ["EDIT_FILE@1"], Proposal((proposed,), {}, {}))
    for typed, expected in (
        ("a\n", Choice(("all",))),
        ("r\nno thanks\n", Choice((), "no thanks")),
        ("c\nh\ny\nn\nkeep 18\n", Choice(("1.1",), "keep 18")),
        ("c\ny\n\n", Choice(("1",), "")),
        ("l\n", None),
        ("", None),  # the end of input: decide later
    ):
        with CliRunner().isolation(input=typed):
            assert review_on_terminal(held) == expected, typed


# --- the hunk engine ---------------------------------------------------------------------------

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  x", "d\r"]), max_size=30)


def _text(lines: list[str], final_newline: bool) -> str:
    return "\n".join(lines) + ("\n" if final_newline and lines else "")


@given(LINES, st.booleans(), LINES, st.booleans(), st.data())
def test_accepted_hunks_applied_to_the_old_text_give_what_they_say(
    old: list[str], old_nl: bool, new: list[str], new_nl: bool, data: st.DataObject
) -> None:
    before, after = _text(old, old_nl), _text(new, new_nl)
    found = hunks(before, after)
    assert (found == []) == (before == after)
    assert apply(before, found, range(len(found))) == after
    assert apply(before, found, ()) == before
    # Each hunk alone changes its own lines and nothing else.
    lines = split_lines(before)
    for index, hunk in enumerate(found):
        head = "".join(lines[: hunk.old_start])
        tail = "".join(lines[hunk.old_start + len(hunk.old) :])
        assert apply(before, found, {index}) == head + "".join(hunk.new) + tail
    chosen = data.draw(st.sets(st.integers(0, max(len(found) - 1, 0))))
    partly = apply(before, found, chosen)
    # What is left to accept makes the rest: the two decisions together are the new text.
    assert apply(partly, hunks(partly, after), range(len(hunks(partly, after)))) == after


def test_a_patch_over_two_files_is_two_files_and_a_file_not_text_is_one_hunk(
    tmp_path: Path,
) -> None:
    _store, session, ws = started(tmp_path, "--review")
    (ws / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    reply = (
        "[PATCH]\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 3\n"
        "--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n[/PATCH]\n"
        '[CREATE_FILE path="blob.bin"]\ntext now\n[/CREATE_FILE]\n'
    )
    assert stepped(tmp_path, reply).exit_code == 0
    review = json.loads(run(tmp_path, "review", "--json").stdout)
    assert [(f["path"], f["whole"]) for f in review["files"]] == [
        ("a.py", False),
        ("b.py", False),
        ("blob.bin", True),
    ]
    assert review["files"][2]["hunks"] == [
        {"number": "3.1", "header": "", "lines": ["(not text: 4 bytes)", "+text now"]}
    ]
    assert run(tmp_path, "review", "--accept", "2", "--accept", "3").exit_code == 0
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert (ws / "b.py").read_text().startswith("line1\nLINE2\n")
    assert (ws / "blob.bin").read_text() == "text now\n"
    text = prompt(tmp_path, session, 2).read_text()
    assert "[FAILED] PATCH: Changed 'a.py': 1 hunk, line 1; changed 'b.py'" in text
    assert "the user rejected all of the change to 'a.py' (not written)" in text
