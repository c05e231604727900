"""The page at a phone's width and a desktop's, its refusal of a too-broad workspace, and its
cap on request bodies: in Debian's headless Chromium against the real server (the fixtures of
test_ui.py). Set ``CODINGAGENT_UI_SCREENSHOT_DIR=docs`` to keep the pictures."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import httpx
import pytest
from test_ui import browser, open_page, serve, start_on  # noqa: F401  (fixtures)

from codingagent.frontends.page.intake import body_cap

LONG_LINE = "x = '" + "long " * 80 + "'"


def viewport_tab(browser, width: int):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 844})
    context.set_default_timeout(20_000)
    return context, context.new_page()


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    return struct.unpack(">II", path.read_bytes()[16:24])


def box(tab, selector: str) -> dict[str, float]:
    return tab.locator(selector).first.bounding_box()


def screenshot(tab, tmp_path: Path, name: str) -> tuple[int, int]:
    """A full-page picture: its width is the page's, so a page wider than the window (a row
    cut off at the right) shows as a wider picture."""
    folder = Path(os.environ.get("CODINGAGENT_UI_SCREENSHOT_DIR", tmp_path))
    path = folder / name
    tab.screenshot(path=path, full_page=True)
    return png_size(path)


def with_a_long_diff(page, root: Path) -> str:
    session_id = start_on(page, root)
    reply = f'[CREATE_FILE path="wide.py"]\n{LONG_LINE}\n[/CREATE_FILE]\n'
    answer = httpx.post(f"{page.url}api/sessions/{session_id}/apply", json={"reply": reply})
    assert answer.status_code == 200, answer.text
    return session_id


def test_at_a_phones_width_everything_fits_and_the_sessions_fold_away(
    serve,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    page = serve()
    with_a_long_diff(page, tmp_path / "run")
    context, tab = viewport_tab(browser, 390)
    try:
        tab.goto(page.url)
        tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
        tab.wait_for_selector("details.diff pre")
        assert tab.locator("#sidebar").is_hidden()
        assert tab.locator("#menu").is_visible()
        for part in ("#reply", "#apply", "#copy", "#prompt-size", "article.turn"):
            shown = box(tab, part)
            assert shown["x"] >= 0 and shown["x"] + shown["width"] <= 390, (part, shown)
        # The long diff line scrolls sideways inside its box, not the page.
        diff = tab.locator("details.diff pre").first
        assert diff.evaluate("pre => pre.scrollWidth > pre.clientWidth")
        assert box(tab, "details.diff pre")["width"] <= 390
        assert tab.evaluate("document.documentElement.scrollWidth") == 390
        assert screenshot(tab, tmp_path, "ui-390.png")[0] == 390 * tab.evaluate("devicePixelRatio")
        # The button unfolds the sessions and the New session form, full width.
        tab.click("#menu")
        assert tab.locator("#sidebar").is_visible()
        assert tab.get_attribute("#menu", "aria-expanded") == "true"
        assert box(tab, "#task")["x"] + box(tab, "#task")["width"] <= 390
        tab.click("#sessions a")
        tab.locator("#sidebar").wait_for(state="hidden")  # folded again once one is chosen
    finally:
        context.close()


def test_at_a_desktops_width_the_sessions_stay_beside_the_turn(
    serve,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    page = serve()
    with_a_long_diff(page, tmp_path / "run")
    context, tab = viewport_tab(browser, 1440)
    try:
        tab.goto(page.url)
        tab.wait_for_selector("details.diff pre")
        assert tab.locator("#menu").is_hidden()
        sidebar, main = box(tab, "#sidebar"), box(tab, "main")
        assert sidebar["x"] == 0 and sidebar["x"] + sidebar["width"] <= main["x"]
        assert box(tab, "#reply")["x"] > sidebar["width"]
        assert screenshot(tab, tmp_path, "ui-1440.png")[0] == 1440 * tab.evaluate(
            "devicePixelRatio"
        )
    finally:
        context.close()


def test_on_a_phone_without_sessions_the_new_session_form_shows(
    serve,  # noqa: F811
    browser,  # noqa: F811
):
    page = serve()
    context, tab = viewport_tab(browser, 390)
    try:
        tab.goto(page.url)
        tab.wait_for_selector("#empty:not([hidden])")
        assert tab.locator("#task").is_visible()
    finally:
        context.close()


def test_the_page_shows_the_folder_resolved_and_never_starts_on_the_root(
    serve,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    page = serve()
    up = "../" * 30
    context, tab = viewport_tab(browser, 1280)
    try:
        tab.goto(page.url)
        tab.wait_for_selector("#workspace-resolved:has-text('Works on')")
        assert tab.inner_text("#workspace-resolved") == f"Works on {page.store.workspace}"
        tab.fill("#task", "Tidy up")
        tab.fill("#workspace", up)
        tab.wait_for_selector("#workspace-resolved:has-text('Refused')")
        assert tab.inner_text("#workspace-resolved") == (
            "Refused: /: it is the root of the file system"
        )
        tab.click("#start")
        tab.locator("#error:not([hidden])").wait_for()
        assert tab.inner_text("#error-text").startswith("Refused workspace /: it is the root")
        assert tab.inner_text("#error-text").endswith("the page never starts a session there")
    finally:
        context.close()
    assert page.store.ids() == []
    for given in ("/", "/etc", up):
        answer = httpx.post(f"{page.url}api/sessions", json={"task": "t", "workspace": given})
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("Refused workspace /")
    assert page.store.ids() == []


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_cap_is_refused_with_413_before_it_is_read(
    serve,  # noqa: F811
    tmp_path,
    chunked,
):
    page = serve(max_reply_bytes=1000)
    session_id = start_on(page, tmp_path / "run")
    cap = body_cap(1000)
    big = b'{"reply": "' + b"a" * cap + b'"}'
    content = iter([big[i : i + 8192] for i in range(0, len(big), 8192)]) if chunked else big
    answer = httpx.post(f"{page.url}api/sessions/{session_id}/apply", content=content)
    assert answer.status_code == 413
    assert answer.json()["error"].startswith("The request is larger than the page accepts")
    assert page.store.load(session_id).sequence_number == 1
    assert not any(page.store.inbox.glob("*.txt"))
    # Under the cap, the same request is read and applied.
    fits = httpx.post(
        f"{page.url}api/sessions/{session_id}/apply",
        json={"reply": '[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'},
    )
    assert fits.status_code == 200, fits.text
    assert page.store.load(session_id).sequence_number == 2


def test_the_page_names_why_a_prompt_is_not_on_the_system_clipboard(
    serve,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SSH_TTY"):
        monkeypatch.delenv(name, raising=False)
    page = serve(clipboard_watch=True)  # prompts go onto the system clipboard
    start_on(page, tmp_path / "run")
    context, tab = viewport_tab(browser, 1280)
    try:
        open_page(tab, page)
        tab.fill("#reply", '[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n')
        tab.click("#apply")
        tab.wait_for_selector("#copy-status:has-text('Not put on the system clipboard')")
        assert tab.inner_text("#copy-status").startswith(
            "Not put on the system clipboard (no display: neither DISPLAY nor WAYLAND_DISPLAY"
        )
    finally:
        context.close()
