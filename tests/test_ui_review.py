"""The review on the page (docs/review.md), in Debian's headless Chromium: a reply pasted with
``review`` on shows a diff per file with a checkbox per hunk; Accept writes the checked hunks
only, with the note, and the reply's command runs on them. Then the same review reached from the
relay (``codingagent ui --relay``): the relay says a review waits, and where; the page decides
it for the relay's loop (the pill's button: tests/test_extension_review.py)."""

# ruff: noqa: F811  (the fixtures imported from test_ui are parameters of the tests)
from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from invoking import run
from relaying import RelayClient, relay_agent
from test_review import B_BEFORE
from test_ui import Page, browser, open_page, serve, start_on, tab  # noqa: F401  (fixtures)

REPLY = (
    '[EDIT_FILE path="hello.py" start_line="1" end_line="1"]\nprint("hello")\n[/EDIT_FILE]\n'
    '[EDIT_FILE path="b.py" start_line="2" end_line="2"]\nLINE2\n[/EDIT_FILE]\n'
    '[EDIT_FILE path="b.py" start_line="18" end_line="18"]\nLINE18\n[/EDIT_FILE]\n'
    "[RUN_COMMAND]\ncat b.py > seen.txt\n[/RUN_COMMAND]\n"
)


def reply_held(serve, tab, tmp_path: Path) -> tuple[Page, str, Path]:
    """A page session with review on, REPLY pasted and applied (so held): the page, the
    session and the project folder."""
    page: Page = serve(review=True, commands="allow")
    session = start_on(page, tmp_path / "run")
    folder = tmp_path / "run" / "project"
    (folder / "b.py").write_text(B_BEFORE)
    open_page(tab, page)
    tab.fill("#reply", REPLY)
    tab.click("#apply")
    return page, session, folder


def test_the_page_reviews_per_file_and_hunk_with_a_note(serve, tab, tmp_path: Path) -> None:
    page, session, folder = reply_held(serve, tab, tmp_path)
    review = tab.locator("#review")
    review.wait_for(state="visible")
    assert tab.locator("#steps").is_hidden()  # no pasting while a review waits
    assert "changes 2 files, 3 hunks" in tab.inner_text("#review-summary")
    files = tab.locator("#review-files details.review-file")
    assert files.count() == 2
    hunks = tab.locator("#review-files .hunk-check")
    assert [hunks.nth(n).get_attribute("value") for n in range(3)] == ["1.1", "2.1", "2.2"]
    assert "+LINE18" in tab.locator(".hunk-row[data-hunk='2.2'] pre").inner_text()
    # Nothing is written, and nothing runs, before the decision.
    assert (folder / "hello.py").read_text() == "print('hi')\n"
    assert not (folder / "seen.txt").exists()

    # The file's box takes all its hunks; a hunk's box alone leaves the file in part.
    first_file = files.nth(0).locator("input.file-check")
    first_file.uncheck()
    assert not hunks.nth(0).is_checked()
    first_file.check()
    assert hunks.nth(0).is_checked()
    hunks.nth(2).uncheck()
    assert files.nth(1).locator("input.file-check").evaluate("box => box.indeterminate")
    tab.fill("#review-note", "line 18 stays")
    tab.click("#review-accept")
    review.wait_for(state="hidden")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")

    b_after = B_BEFORE.replace("line2\n", "LINE2\n")
    assert (folder / "hello.py").read_text() == 'print("hello")\n'
    assert (folder / "b.py").read_text() == b_after
    assert (folder / "seen.txt").read_text() == b_after
    text = page.store.outbox_path(session, 2).read_text()
    assert "[REJECTED BY USER] b.py: hunk 2 of 2" in text
    assert "Note from the user: line 18 stays" in text
    turn = tab.locator("article.turn[data-sequence='1']")
    assert "the user rejected part of the change to 'b.py'" in turn.inner_text()


def test_reject_writes_nothing_and_runs_the_command_on_the_files_as_they_were(
    serve, tab, tmp_path: Path
) -> None:
    page, session, folder = reply_held(serve, tab, tmp_path)
    tab.locator("#review").wait_for(state="visible")
    tab.fill("#review-note", "not now")
    tab.click("#review-reject")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    assert (folder / "hello.py").read_text() == "print('hi')\n"
    assert (folder / "seen.txt").read_text() == B_BEFORE
    assert "Note from the user: not now" in page.store.outbox_path(session, 2).read_text()


@pytest.mark.slow  # a whole agent process
def test_ui_relay_holds_the_relays_answer_and_the_page_decides_it(tmp_path: Path) -> None:
    """Over HTTP, as the extension speaks: ``ui --relay`` with review on holds the answer the
    relay posts; the relay says so (with the page's address) in the reply's outcome, the long
    poll and the state; the page's decision lets the relay's loop go on."""
    args = ("--commands", "allow", "--sandbox", "none")
    started = run(tmp_path, "start", "t", "--no-watch", "--review", *args)
    assert started.exit_code == 0, started.output
    command = [sys.executable, "-m", "codingagent", "ui", "--relay", "--no-open", "--port", "0"]
    with relay_agent(tmp_path, *args, "--relay-port", "0", command=command) as agent:
        agent.wait_for("The page for your chat tab is at the address above")
        address = agent.out[0].strip()
        client = RelayClient(agent.port, chromium=True)
        try:
            session = client.pair(agent.code)["session"]
            first = client.prompt()
            answer = client.reply(
                first["prompt_id"], '[CREATE_FILE path="c.py"]\nc\n[/CREATE_FILE]\n'
            )
            review = answer["review"]
            assert answer["applied"] is False and answer["refused"] is None
            assert review["summary"] == "1 file, 1 hunk"
            assert review["url"] == f"{address}#{session}"
            assert client.get("/state").json()["status"] == "reviewing"
            polled = client.prompt(after=first["prompt_id"])
            assert polled == {"review": review}
            seen = client.get("/prompt", after=first["prompt_id"], review=review["id"], wait=0.3)
            assert seen.status_code == 204  # seen once: the long poll waits again
            assert not (tmp_path / "workspace" / "c.py").exists()

            shown = httpx.get(f"{address}api/sessions/{session}").json()
            assert shown["review"]["files"][0]["path"] == "c.py"
            decided = httpx.post(
                f"{address}api/sessions/{session}/review", json={"accept": ["1"], "note": ""}
            )
            assert decided.json() == {"handed": True}
            second = client.get("/prompt", after=first["prompt_id"], review=review["id"], wait=20)
            assert second.json()["prompt_id"] == f"{session}:2"
            assert (tmp_path / "workspace" / "c.py").read_text() == "c\n"
            assert client.get("/state").json()["review"] is None
        finally:
            client.close()
