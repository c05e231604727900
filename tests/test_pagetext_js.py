"""The extension's page reader (``extension/pagetext.js``) in real Chromium, on the markup the
reviews found hard: code blocks read exactly, or read as prose (so what they hold is refused),
never read damaged. tests/test_rendered_answers.py holds the Python reader's twins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chat_render import chat_html
from test_extension_chats import CHROMIUM, EXTENSION
from test_ui import QUIET_CHROMIUM

from codingagent.protocol.codeblocks import RENDERED_REFUSAL
from codingagent.protocol.commands import CreateFile, ParseError, RunCommand
from codingagent.protocol.scan import commands_and_slips

pytestmark = [
    pytest.mark.slow,  # a real browser
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium"),
]


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=QUIET_CHROMIUM
        )
        yield browser.new_page()
        browser.close()


def read(page: Any, html: str) -> list:
    """The commands of ``html`` as the extension reads the page, rendered."""
    page.set_content(f"<html><body><div id='answer'>{html}</div></body></html>")
    page.add_script_tag(content=(EXTENSION / "pagetext.js").read_text())
    text = page.evaluate("codingagentPageText.fromElement(document.getElementById('answer'))")
    return commands_and_slips(text, rendered=True)[0]


def refused(commands: list) -> bool:
    return bool(commands) and all(
        isinstance(c, ParseError) and c.message == RENDERED_REFUSAL for c in commands
    )


def test_a_chats_code_block_with_label_button_and_gutter_is_read_exactly(page: Any) -> None:
    html = chat_html(
        '```python\n[CREATE_FILE path="a.py"]\ndef f(**kw):\n\treturn 1  \n[/CREATE_FILE]\n```\n'
    )
    (command,) = read(page, html)
    assert isinstance(command, CreateFile) and command.content == "def f(**kw):\n\treturn 1  \n"


def test_a_gutter_in_table_cells_makes_the_block_prose(page: Any) -> None:
    html = (
        "<pre><code><table><tr><td>1</td><td>[RUN_COMMAND]</td></tr>"
        "<tr><td>2</td><td>rm -rf build</td></tr><tr><td>3</td><td>[/RUN_COMMAND]</td></tr>"
        "</table></code></pre>"
    )
    assert refused(read(page, html))


def test_lines_drawn_as_blocks_without_breaks_are_lines(page: Any) -> None:
    lines = ["[RUN_COMMAND]", "echo a", "echo b", "[/RUN_COMMAND]"]
    html = "<pre><code>" + "".join(f"<span style='display:block'>{x}</span>" for x in lines)
    (command,) = read(page, html + "</code></pre>")
    assert isinstance(command, RunCommand) and command.command == "echo a\necho b"


def test_a_prose_line_that_looks_like_a_fence_opens_no_block(page: Any) -> None:
    html = '<p><code>```python</code> opens a block</p><p>[DELETE_FILE path="a.py"]</p>'
    assert refused(read(page, html))
