"""What the page and the console say about a paste (docs/admission.md): the page binds a reply
to the prompt it showed, and a paste with no command in it is said to be one, with the paste
offered back before the next prompt is copied. Real server, headless Chromium, real CLI.
"""

# ruff: noqa: F811  (the fixtures imported from test_ui are parameters of the tests)
from __future__ import annotations

from pathlib import Path

import httpx
from click.testing import CliRunner
from test_ui import (  # noqa: F401  (browser, serve and tab are fixtures)
    browser,
    open_page,
    serve,
    start_on,
    tab,
)

from codingagent.frontends.cli import main
from codingagent.frontends.console_listener import NO_COMMAND

PROSE = "Sure! You could add a multiply function that returns a * b.\n"


def test_the_page_applies_a_reply_with_a_wrong_echo_and_tells_the_model(serve, tmp_path):
    page = serve()
    sid = start_on(page, tmp_path / "run")
    reply = 'Session: 0badc0de Sequence: 9\n[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'
    done = httpx.post(
        f"{page.url}api/sessions/{sid}/apply", json={"reply": reply, "sequence": 1}
    ).json()
    assert done["sequence"] == 2 and not done["skipped"] and not done["noCommand"]
    outbox = page.store.outbox_path(sid, 2).read_text()
    assert (
        f"[NOTE] your reply named Session 0badc0de, but it answered session {sid}, prompt 1; "
        f"start your next reply with `Session: {sid} Sequence: 2`"
    ) in outbox


def test_a_paste_for_a_prompt_the_page_no_longer_shows_is_refused(serve, tmp_path):
    page = serve()
    sid = start_on(page, tmp_path / "run")
    first = '[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'
    assert (
        httpx.post(
            f"{page.url}api/sessions/{sid}/apply", json={"reply": first, "sequence": 1}
        ).json()["sequence"]
        == 2
    )
    stale = '[CREATE_FILE path="b.txt"]\nb\n[/CREATE_FILE]\n'  # a second tab, still at prompt 1
    done = httpx.post(
        f"{page.url}api/sessions/{sid}/apply", json={"reply": stale, "sequence": 1}
    ).json()
    assert done["skipped"] and done["sequence"] == 2
    assert done["notes"][0].startswith(
        "The reply web page was not applied: it was given for prompt 1, but the session is at "
        "prompt 2."
    )
    assert not (tmp_path / "run" / "project" / "b.txt").exists()


def test_a_paste_with_no_command_is_said_and_can_be_taken_back(serve, tab, tmp_path):
    page = serve()
    sid = start_on(page, tmp_path / "run")
    open_page(tab, page)
    tab.fill("#reply", PROSE)
    tab.click("#apply")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    tab.locator("#notice:has-text('No command found in the reply')").wait_for()
    assert "the next prompt asks the LLM to write commands" in tab.inner_text("#notice")
    tab.click("#notice button.take-back")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 1')")
    tab.locator("#notice:has-text('The paste was taken back')").wait_for()
    assert tab.input_value("#reply") == PROSE
    assert page.store.load(sid).sequence_number == 1


def test_the_console_says_a_reply_had_no_command(tmp_path: Path):
    runner = CliRunner()
    root = ("--root", str(tmp_path))
    assert runner.invoke(main, ["start", "t", "--no-watch", "--no-copy", *root]).exit_code == 0
    reply = tmp_path / "prose.txt"
    reply.write_text(PROSE)
    result = runner.invoke(main, ["step", "latest", str(reply), *root])
    assert result.exit_code == 0, result.output
    assert NO_COMMAND in result.stderr.replace("\n", " ")
