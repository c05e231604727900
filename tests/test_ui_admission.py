"""What the page and the console say about a paste (docs/admission.md): the page binds a reply
to the prompt it showed, and a paste with no command in it is said to be one, with the paste
offered back before the next prompt is copied. Real server, headless Chromium, real CLI.
"""

# ruff: noqa: F811  (the fixtures imported from test_ui are parameters of the tests)
from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from test_rendered_answers import CHAT, CONTENT, PATHS, browser_text, files_reply
from test_ui import (  # noqa: F401  (browser, serve and tab are fixtures)
    browser,
    open_page,
    serve,
    start_on,
    tab,
)

from codingagent.frontends.cli import main
from codingagent.frontends.console_listener import NO_COMMAND
from codingagent.protocol.codeblocks import RENDERED_REFUSAL
from codingagent.sources.pagetext import answer_from_html

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


def page_text(html: str) -> str:
    """The text a browser copies of a rendered page: what it shows, no fence lines."""
    return browser_text(html)


PASTE = """([text, html]) => {
  const box = document.querySelector('#reply');
  box.focus();
  const data = new DataTransfer();
  data.setData('text/plain', text);
  data.setData('text/html', html);
  box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true,
    cancelable: true}));
}"""


@pytest.mark.parametrize("style", ["a block each", "unfenced"])
@pytest.mark.parametrize("edited", [False, True])
def test_a_selection_of_a_chat_pasted_on_the_page_is_read_from_its_html(
    serve, tab, tmp_path, style, edited
):
    """A selection copied from a chat page and pasted into the reply box brings the page's
    HTML: the box gets the answer read from it (code blocks exact, between fences), and the
    reply stays marked rendered even when the box is edited after the paste."""
    page = serve()
    root = tmp_path / "run"
    sid = start_on(page, root)
    open_page(tab, page)
    html = CHAT.render(files_reply(style, session=sid))
    tab.evaluate(PASTE, [page_text(html), html])
    tab.wait_for_function("() => document.querySelector('#reply').value.includes('```')")
    assert tab.input_value("#reply") == answer_from_html(html, page_text(html))
    if edited:
        tab.locator("#reply").press("End")
        tab.locator("#reply").type("\nThanks!")
    tab.click("#apply")
    if style != "unfenced":  # the page asks before the answer's command runs
        tab.click("#approvals button.allow")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    workspace = root / "project"
    if style == "unfenced":
        assert not any((workspace / path).exists() for path in PATHS)
        assert RENDERED_REFUSAL in page.store.outbox_path(sid, 2).read_text()
        turn = tab.locator("article.turn[data-sequence='1']")
        turn.wait_for()
        assert turn.inner_text().count("read from the chat's rendered page") == len(PATHS) + 1
    else:
        for path in PATHS:
            assert (workspace / path).read_text() == CONTENT
        assert (workspace / "__ran__.txt").read_text() == "**ran** <&>"


def test_a_rendered_paste_for_a_watcher_is_saved_only_when_exact(serve, tmp_path):
    page = serve()
    sid = start_on(page, tmp_path / "run")
    unfenced = answer_from_html(CHAT.render(files_reply("unfenced", session=sid)))
    with page.store.lock(sid):  # a terminal watcher holds the session
        refused = httpx.post(
            f"{page.url}api/sessions/{sid}/apply",
            json={"reply": unfenced, "sequence": 1, "rendered": True},
        ).json()
        fenced = answer_from_html(CHAT.render(files_reply("one block", session=sid)))
        queued = httpx.post(
            f"{page.url}api/sessions/{sid}/apply",
            json={"reply": fenced, "sequence": 1, "rendered": True},
        ).json()
    assert "selection of a chat's rendered page" in refused.get("error", ""), refused
    saved = Path(queued["queued"]).read_text()
    assert 'path="pkg/__init__.py"' in saved and CONTENT in saved


def test_a_plain_paste_over_the_whole_box_is_raw_again(serve, tab, tmp_path):
    """A rendered paste, then all of it replaced by a paste with no HTML (a file's text):
    the box holds raw text again, and it is applied as such."""
    page = serve()
    root = tmp_path / "run"
    sid = start_on(page, root)
    open_page(tab, page)
    html = CHAT.render(files_reply("unfenced", session=sid))
    tab.evaluate(PASTE, [page_text(html), html])
    tab.wait_for_function("() => document.querySelector('#reply').value.includes('[CREATE')")
    raw = f'Session: {sid} Sequence: 1\n[CREATE_FILE path="raw.txt"]\nraw\n[/CREATE_FILE]\n'
    tab.evaluate(PLAIN_PASTE, raw)
    tab.click("#apply")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    assert (root / "project" / "raw.txt").read_text() == "raw\n"


PLAIN_PASTE = """(text) => {
  const box = document.querySelector('#reply');
  box.focus();
  box.select();
  const data = new DataTransfer();
  data.setData('text/plain', text);
  const event = new ClipboardEvent('paste', {clipboardData: data, bubbles: true,
    cancelable: true});
  if (box.dispatchEvent(event)) box.setRangeText(text, 0, box.value.length, 'end');
}"""
