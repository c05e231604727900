"""A held review is durable (docs/review.md): kill -9 while one is held, and ``resume`` offers
the same review again, nothing written; kill -9 in the middle of the turn that applies a
decision, and recovery applies it again as decided. Real ``codingagent`` processes, killed
with SIGKILL at a named point (``CODINGAGENT_CRASH_AT``), and a real terminal (a pty) for the
``resume`` that asks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from invoking import run
from terminal import ANSI, Terminal
from test_review import B_BEFORE, REPLY, started

from codingagent.records.store import SessionStore
from codingagent.review.record import load
from codingagent.transaction.crashpoints import CRASH_ENV

pytestmark = pytest.mark.slow  # each test runs and kills agent processes


def agent(root: Path, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "codingagent", *args, "--root", str(root)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_killed_while_a_review_is_held_resume_offers_the_same_review(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY)
    killed = agent(tmp_path, "step", str(reply), crash_at="review")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    held = load(store, session)
    assert held is not None and held.sequence == 1
    assert (ws / "a.py").read_text() == "x = 1\n" and (ws / "b.py").read_text() == B_BEFORE
    assert not (ws / "seen.txt").exists()
    assert not (tmp_path / "outbox" / f"{session}_seq0002.txt").exists()
    assert not store.journal_path(session).exists()

    listed = run(tmp_path, "review")
    assert "2 files, 3 hunks" in listed.stdout and "  2.2  @@ -15,6 +15,6 @@" in listed.stdout
    # Without a terminal, resume says how to decide, and writes nothing.
    refused = agent(tmp_path, "resume")
    assert refused.returncode == 1
    assert f"codingagent review {session}" in refused.stderr
    assert (ws / "a.py").read_text() == "x = 1\n"

    # On a terminal, resume offers the same review: file 1, and of file 2 its first hunk.
    text = resume_on_terminal(tmp_path, b"c\ny\nh\ny\nn\nkeep line 18\n")
    assert "holds 2 files, 3 hunks for your review" in text
    assert text.count("1  a.py  (changed, 1 hunk)") == 1
    b_after = B_BEFORE.replace("line2\n", "LINE2\n")
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert (ws / "b.py").read_text() == b_after
    assert (ws / "seen.txt").read_text() == b_after
    second = (tmp_path / "outbox" / f"{session}_seq0002.txt").read_text()
    assert "[REJECTED BY USER] b.py: hunk 2 of 2" in second
    assert "Note from the user: keep line 18" in second
    assert load(store, session) is None  # set aside, with the turn committed


def resume_on_terminal(root: Path, typed: bytes) -> str:
    """Run ``codingagent resume`` on a pty, type ``typed`` once it asks for the review, and
    stop it (Ctrl-C) once it offers the next prompt; all it printed."""
    with Terminal("resume", "--root", str(root)) as terminal:
        terminal.wait_for(b"decide later [l]")
        terminal.send(typed)
        terminal.wait_for(b"Next prompt:")
        terminal.process.send_signal(signal.SIGINT)
        assert terminal.wait(timeout=30) == 130
    return ANSI.sub("", terminal.seen.decode(errors="replace"))


def test_killed_in_the_turn_of_a_decision_recovery_applies_it_as_decided(tmp_path: Path) -> None:
    store, session, ws = started(tmp_path, "--review")
    reply = tmp_path / "reply.txt"
    reply.write_text(REPLY)
    assert agent(tmp_path, "step", str(reply)).returncode == 0
    args = ("review", "--accept", "1", "--accept", "2.1", "--note", "not 18")
    killed = agent(tmp_path, *args, crash_at="result:2")  # a.py written, b.py too, no command
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert store.journal_path(session).exists()
    held = load(store, session)
    assert held is not None and held.decision is not None
    assert held.decision.accepted == ["1.1", "2.1"]

    resumed = run(tmp_path, "resume", "--no-watch")
    assert resumed.exit_code == 0, resumed.output
    assert "Recovered turn 1" in resumed.stderr
    b_after = B_BEFORE.replace("line2\n", "LINE2\n")
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert (ws / "b.py").read_text() == b_after
    assert (ws / "seen.txt").read_text() == b_after
    second = (tmp_path / "outbox" / f"{session}_seq0002.txt").read_text()
    assert "Note from the user: not 18" in second
    assert SessionStore(tmp_path).load(session).sequence_number == 2
    assert load(store, session) is None
