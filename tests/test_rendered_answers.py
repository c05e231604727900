"""Answers read from a chat's rendered page (docs/protocol.md, "Answers read from a rendered
page"): code blocks read verbatim, what stood outside them and would change files or run
refused, never applied damaged.

The pages here are rendered by markdown-it-py, a CommonMark renderer as the big chats use
(raw HTML escaped, as they escape it); the browser half is tests/test_exact_answers_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from chat_render import chat_html
from hypothesis import given, settings
from hypothesis import strategies as st
from invoking import run
from markdown_it import MarkdownIt
from sampling import examples
from turns import step

from codingagent.protocol.codeblocks import RENDERED_REFUSAL, code_blocks
from codingagent.protocol.commands import CreateFile, ParseError, RunCommand
from codingagent.protocol.replies import decode
from codingagent.protocol.scan import commands_and_slips
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.recovery import recover
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.sources import pagetext
from codingagent.sources.clipboard import what_it_would_do
from codingagent.sources.pagetext import answer_from_html, exact_text, fenced, read_copy
from codingagent.state import SessionError
from codingagent.transaction.crashpoints import CRASH_ENV

CHAT = MarkdownIt("commonmark")

# File contents full of what markdown changes outside a code block.
MARKDOWN_LINES = [
    "# comment, not a heading",
    "from pkg.__init__ import __version__",
    "def f(*args, **kwargs):",
    "\treturn '<tag> &amp; &lt;'  ",
    "1. not a list",
    "- not a bullet",
    "> not a quote",
    "__dunder__ and _under_ and *star*",
    "",
    "",
    "   indented   ",
    "```python",
    "x = `y`",
    "```",
    "| a | b |",
    "\\[escaped\\]",
]
CONTENT = "\n".join(MARKDOWN_LINES) + "\n"
PATHS = ["pkg/__init__.py", "docs/__notes__.md", "my_module_name.py"]
RUN = "python3 -c \"open('__ran__.txt', 'w').write('**ran** <&>')\" __a__ *b*"


def files_reply(
    style: str,
    content: str = CONTENT,
    session: str = "1a2b3c4d",
    sequence: int = 1,
    folder: str = "",
) -> str:
    """An answer writing ``content`` to each of PATHS (under ``folder``) and running RUN, in
    one of the four styles the issue names."""
    paths = [folder + path for path in PATHS]
    commands = [f'[CREATE_FILE path="{path}"]\n{content}[/CREATE_FILE]' for path in paths]
    commands.append(f"[RUN_COMMAND]\n{RUN}\n[/RUN_COMMAND]")
    head = f"Session: {session} Sequence: {sequence}\nI'll write the files for **you**.\n\n"
    if style == "one block":
        return head + fenced("\n".join(commands)) + "\n\nThat is __all__.\n"
    if style == "a block each":
        return head + "\n\nThen:\n\n".join(fenced(c) for c in commands) + "\n"
    if style == "unfenced":
        return head + "\n".join(commands) + "\n"
    # Tag lines as prose, each file's content fenced: a common habit.
    parts = [
        f'[CREATE_FILE path="{path}"]\n{fenced(content.removesuffix(chr(10)))}\n[/CREATE_FILE]'
        for path in paths
    ]
    return head + "\n\n".join(parts) + f"\n\n[RUN_COMMAND]\n{RUN}\n[/RUN_COMMAND]\n"


FENCED = ["one block", "a block each"]
UNFENCED = ["unfenced", "prose tags"]


def rendered_commands(reply: str) -> list:
    return commands_and_slips(answer_from_html(CHAT.render(reply)), rendered=True)[0]


def raw_commands(reply: str) -> list:
    return commands_and_slips(reply)[0]


def fields(commands: list) -> list[dict]:
    """What the commands do (their reply line numbers aside: prose lines may merge)."""
    return [c.model_dump(exclude={"line"}) for c in commands]


@pytest.mark.parametrize("style", FENCED)
def test_a_fenced_answer_read_from_the_rendered_page_is_exactly_what_the_model_wrote(style):
    commands = rendered_commands(files_reply(style))
    assert fields(commands) == fields(raw_commands(files_reply(style)))
    assert [c.path for c in commands if isinstance(c, CreateFile)] == PATHS
    assert all(c.content == CONTENT for c in commands if isinstance(c, CreateFile))
    assert [c.command for c in commands if isinstance(c, RunCommand)] == [RUN]


@pytest.mark.parametrize("style", UNFENCED)
def test_what_stood_outside_a_code_block_is_refused_with_the_reason(style):
    commands = rendered_commands(files_reply(style))
    assert len(commands) == len(PATHS) + 1
    assert all(isinstance(c, ParseError) and c.message == RENDERED_REFUSAL for c in commands)
    assert [c.command for c in commands if isinstance(c, ParseError)] == [
        *["CREATE_FILE"] * len(PATHS),
        "RUN_COMMAND",
    ]


def test_the_page_did_damage_the_unfenced_answer():
    """The refusal guards a real loss: read as raw text, the rendered unfenced answer would
    write other paths and other contents."""
    text = answer_from_html(CHAT.render(files_reply("unfenced")))
    damaged = [c for c in raw_commands(text) if isinstance(c, CreateFile)]
    assert [c.path for c in damaged] != PATHS
    assert "pkg/init.py" in [c.path for c in damaged]


def test_reading_and_talking_commands_outside_a_block_still_run():
    reply = (
        '[READ_FILE path="a.py"]\n[SEARCH query="x"]\n[MESSAGE]\nhi\n[/MESSAGE]\n\n'
        "[DONE]\nok\n[/DONE]\n"
    )
    commands = rendered_commands(reply)
    assert [c.kind for c in commands] == ["READ_FILE", "SEARCH", "MESSAGE", "DONE"]


def test_a_command_whose_block_the_file_content_closed_early_is_refused():
    """A 3-backtick block around a file that holds a ``` line: the renderer ends the block
    there, and the rest of the file was rendered as prose."""
    reply = (
        '```\n[CREATE_FILE path="README.md"]\n# T\n```python\nx\n```\nafter\n[/CREATE_FILE]\n```\n'
    )
    (command,) = rendered_commands(reply)
    assert isinstance(command, ParseError) and command.message == RENDERED_REFUSAL


def test_a_raw_reply_is_read_as_before_whatever_its_fences():
    for style in [*FENCED, *UNFENCED]:
        commands = raw_commands(files_reply(style))
        assert not any(isinstance(c, ParseError) for c in commands), style


safe_line = st.text(alphabet=st.sampled_from(list("ab _*#>-1.`~<>&;[]\\|\t ")), max_size=30).filter(
    lambda line: not line.strip().startswith("[/")
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(safe_line, max_size=12))
def test_any_file_content_survives_a_fenced_answer_read_from_the_page(lines):
    content = "".join(f"{line}\n" for line in lines)
    reply = fenced(f'[CREATE_FILE path="a.py"]\n{content}[/CREATE_FILE]')
    assert fields(rendered_commands(reply)) == fields(raw_commands(reply))


@given(st.text(alphabet=st.sampled_from(list("`~ ab\n")), max_size=60))
def test_a_fence_made_for_a_code_block_holds_all_of_it(code):
    lines = fenced(code).split("\n")
    blocks = code_blocks(lines)
    assert blocks[0] == 0 and blocks[-1] == 0
    assert set(blocks[1:-1]) <= {1} and len(blocks) == code.count("\n") + 3


def test_code_blocks_follow_commonmark():
    lines = ["a", "````md", "```", "x", "```", "````", "b", "~~~", "```", "~~~~", "c"]
    assert code_blocks(lines) == [0, 0, 1, 1, 1, 0, 0, 0, 2, 0, 0]
    assert code_blocks(["```a`b", "x"]) == [0, 0]  # backticks in the info string: no fence
    assert code_blocks(["    ```", "x"]) == [0, 0]  # indented four: a code line, no fence
    assert code_blocks(["```", "x"]) == [0, 1]  # never closed: to the end


# --- the page as the chats draw it ----------------------------------------------------------

CHAT_PAGE = """<div class="answer"><p>Session: 1a2b3c4d Sequence: 1</p>
<pre><div class="code-header"><span>python</span><button>Copy code</button></div><code
class="language-python"><span class="hljs-keyword">def</span> f(**kwargs):
    <span class="hljs-keyword">return</span> &lt;b&gt; &amp;amp;
</code></pre>
<pre><code><span class="line-number" aria-hidden="true">1</span>[RUN_COMMAND]
<span class="line-number" aria-hidden="true">2</span>ls
<span class="line-number" aria-hidden="true">3</span>[/RUN_COMMAND]</code></pre>
<div class="codeblock"><div class="lines"><div>a  b</div><div>\tc</div></div></div>
<pre style="user-select: none" class="gutter-free"><div>one</div><div>two</div></pre></div>"""


def test_code_blocks_are_read_without_labels_buttons_or_gutters():
    text = answer_from_html(CHAT_PAGE)
    assert text == (
        "Session: 1a2b3c4d Sequence: 1\n"
        "```\ndef f(**kwargs):\n    return <b> &amp;\n```\n"
        "```\n[RUN_COMMAND]\nls\n[/RUN_COMMAND]\n```\n"
        "a b\n\nc\n"
        "```\none\ntwo\n```\n"
    )


# --- which text a clipboard copy stands for --------------------------------------------------


def test_a_copy_without_html_is_taken_as_it_is():
    assert read_copy("[DONE]\n", None) == ("[DONE]\n", False)


def test_a_copy_from_an_editor_is_taken_as_it_is():
    """An editor puts its colours beside the text: preformatted divs and spans, nothing a
    markdown renderer makes."""
    plain = '[CREATE_FILE path="pkg/__init__.py"]\n**x**\n[/CREATE_FILE]\n'
    html = (
        "<meta charset='utf-8'><div style=\"font-family: Consolas, 'Courier New', monospace; "
        'color: #ccc; white-space: pre;"><div>'
        '<span>[CREATE_FILE path="pkg/__init__.py"]</span></div><div>**x**</div></div>'
    )
    assert read_copy(plain, html) == (plain, False)


def test_a_selection_inside_one_paragraph_is_rendered():
    """Chromium leaves the paragraph out of a selection inside one: spans and line breaks
    only, yet the text was rendered (the escapes and the underscores are gone)."""
    html = "<span>[RUN_COMMAND]<br>find . -name *.pyc -delete<br>[/RUN_COMMAND]</span>"
    plain = "[RUN_COMMAND]\nfind . -name *.pyc -delete\n[/RUN_COMMAND]"
    copy = read_copy(plain, html)
    assert copy.rendered
    (command,) = commands_and_slips(copy.text, rendered=True)[0]
    assert isinstance(command, ParseError) and command.message == RENDERED_REFUSAL


def test_a_prose_line_that_looks_like_a_fence_opens_no_block():
    """Inline code at the start of a paragraph shows as ```python: read back, it must not
    open a code block around the damaged commands after it."""
    reply = (
        '`` ```python `` opens a block\n\n[CREATE_FILE path="pkg/__init__.py"]\nx\n[/CREATE_FILE]\n'
    )
    html = CHAT.render(reply)
    text = answer_from_html(html)
    assert "    ```python opens a block" in text
    (command,) = commands_and_slips(text, rendered=True)[0]
    assert isinstance(command, ParseError) and command.message == RENDERED_REFUSAL
    assert read_copy(re.sub(r"(?m)^ +", "", text), html).rendered


def test_code_lines_the_browser_did_not_show_so_are_not_trusted():
    """A highlighter whose lines are blocks with no line break between them: the browser
    shows four lines, the HTML's text has one run-together line."""
    html = (
        "<pre><code>"
        + "".join(
            f'<span style="display: block">{line}</span>'
            for line in [
                '[CREATE_FILE path="a.py"]',
                "import os",
                "print(os.name)",
                "[/CREATE_FILE]",
            ]
        )
        + "</code></pre>"
    )
    shown = '[CREATE_FILE path="a.py"]\nimport os\nprint(os.name)\n[/CREATE_FILE]\n'
    (command,) = commands_and_slips(answer_from_html(html, shown), rendered=True)[0]
    assert isinstance(command, CreateFile) and command.content == "import os\nprint(os.name)\n"
    glued = '<pre><code><span>[CREATE_FILE path="a.py"]</span><span>import os</span></code></pre>'
    text = answer_from_html(glued, '[CREATE_FILE path="a.py"]\nimport os\n')
    assert "```" not in text  # read as prose, so whatever it holds is refused


def test_several_code_elements_in_one_pre_keep_their_line_breaks():
    html = "<pre><code>[RUN_COMMAND]</code>\n<code>ls -a</code>\n<code>[/RUN_COMMAND]</code></pre>"
    (command,) = commands_and_slips(answer_from_html(html), rendered=True)[0]
    assert isinstance(command, RunCommand) and command.command == "ls -a"


@pytest.mark.parametrize(
    "gutter",
    [
        '<span class="line-number">1</span>',
        '<span aria-hidden="true">1</span>',
        '<span style="user-select: none">1</span>',
        "<span hidden>1</span>",
        '<span style="display:none">1</span>',
    ],
)
def test_each_kind_of_gutter_is_left_out(gutter):
    html = f"<pre><code>{gutter}[RUN_COMMAND]\n{gutter}ls\n{gutter}[/RUN_COMMAND]</code></pre>"
    (command,) = commands_and_slips(answer_from_html(html), rendered=True)[0]
    assert isinstance(command, RunCommand) and command.command == "ls"


def test_a_wrapper_named_for_copying_keeps_its_code():
    html = (
        '<div class="relative group/copy"><pre><code>[RUN_COMMAND]\nls\n[/RUN_COMMAND]</code>'
        "</pre></div>"
    )
    (command,) = commands_and_slips(answer_from_html(html), rendered=True)[0]
    assert isinstance(command, RunCommand)


def test_a_chats_copy_button_gives_the_markdown_source():
    """A chat's Copy writes the markdown as text, its rendering as HTML: the text's code
    blocks are the page's, one for one, and it is taken as it is."""
    for style in FENCED:
        reply = files_reply(style)
        assert read_copy(reply, CHAT.render(reply)) == (reply, False)


def test_an_unfenced_source_with_its_rendering_is_read_as_rendered():
    """With no code block, nothing proves the text is the source: read as rendered (so its
    commands are refused, as the PROTOCOL asks for code blocks: docs/protocol.md 4.6), never
    taken as exact."""
    reply = files_reply("unfenced", content="from pkg.__init__ import x\n")
    assert read_copy(reply, CHAT.render(reply)).rendered


@pytest.mark.parametrize("style", [*FENCED, *UNFENCED])
def test_a_selection_of_the_rendered_page_is_read_from_its_html(style):
    html = CHAT.render(files_reply(style))
    assert read_copy(browser_text(html), html) == (answer_from_html(html), True)


def browser_text(html: str) -> str:
    """What Ctrl+C puts as text (simulated): the page's prose and code, no fence lines.
    tests/test_exact_answers_browser.py has the real one."""
    parts = pagetext._read(html)._parts
    return "\n".join(text if code else pagetext._prose_lines(text) for code, text in parts)


# --- through the session --------------------------------------------------------------------


def started(tmp_path: Path) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path)
    state, _ = start_session(store, "write the files", tmp_path / "workspace")
    return store, state.session_id


def test_a_rendered_unfenced_answer_writes_nothing_and_says_why(tmp_path):
    store, sid = started(tmp_path)
    text = answer_from_html(CHAT.render(files_reply("unfenced", session=sid)))
    report = apply_reply(store, sid, Reply(text.encode(), "<relay>", rendered=True), options())
    assert not any((tmp_path / "workspace").rglob("*.py"))
    failed = [r for r in report.outcome.results if not r.success]
    assert len(failed) == len(PATHS) + 1
    assert all(RENDERED_REFUSAL in r.summary for r in failed)
    assert report.outbox is not None
    assert "read from the chat's rendered page" in report.outbox.read_text()
    assert json.loads((report.history / "meta.json").read_text())["rendered"] is True


def test_a_rendered_fenced_answer_writes_every_file_byte_for_byte(tmp_path):
    store, sid = started(tmp_path)
    text = answer_from_html(CHAT.render(files_reply("a block each", session=sid)))
    apply_reply(store, sid, Reply(text.encode(), "<relay>", rendered=True), options())
    for path in PATHS:
        assert (tmp_path / "workspace" / path).read_bytes() == CONTENT.encode()


def test_the_same_text_not_rendered_is_applied_as_raw(tmp_path):
    store, sid = started(tmp_path)
    step(store, sid, files_reply("unfenced", session=sid))
    assert (tmp_path / "workspace" / "pkg/__init__.py").read_text() == CONTENT


@pytest.mark.slow  # an agent process killed mid-turn
def test_a_turn_recovered_after_a_crash_is_still_read_as_rendered(tmp_path):
    store, sid = started(tmp_path)
    text = answer_from_html(CHAT.render(files_reply("unfenced", session=sid)))
    script = (
        "import sys; from pathlib import Path\n"
        "from codingagent.sandbox.shell import Shell\n"
        "from codingagent.session.seams import Reply\n"
        "from codingagent.session.turn import TurnOptions, apply_reply\n"
        "from codingagent.records.store import SessionStore\n"
        "store = SessionStore(Path(sys.argv[1]))\n"
        "reply = Reply(Path(sys.argv[3]).read_bytes(), '<relay>', rendered=True)\n"
        "apply_reply(store, sys.argv[2], reply, TurnOptions(shell=Shell(timeout=10)))\n"
    )
    (tmp_path / "answer.txt").write_text(text)
    env = {**os.environ, CRASH_ENV: "history"}
    killed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), sid, str(tmp_path / "answer.txt")],
        env=env,
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    assert (store.turn_dir(sid, 1) / "rendered").is_file()  # the reply's mark, for recovery
    report = recover(store, sid, options())
    assert report is not None
    assert not any((tmp_path / "workspace").rglob("*.py"))
    assert all(RENDERED_REFUSAL in r.summary for r in report.outcome.results if not r.success)


def options() -> TurnOptions:
    return TurnOptions(shell=Shell(timeout=10))


def test_a_refused_rendered_reply_applied_with_force_is_still_read_as_rendered(tmp_path):
    """The refusal's advice (step the kept reply with --force) must not turn a rendered
    reply into raw text: the kept reply is marked, and read as rendered again."""
    store, sid = started(tmp_path)
    text = answer_from_html(CHAT.render(files_reply("unfenced", session="0badc0de")))
    reply = Reply(text.encode(), "<clipboard>", rendered=True)
    report = apply_reply(store, sid, reply, options())
    assert report.skipped and report.refusal is not None
    kept = report.refusal.folder / "reply.txt"
    assert "--force" in report.refusal.note and str(kept) in report.refusal.note
    result = run(tmp_path, "step", sid, str(kept), "--force", "--sandbox", "none")
    assert result.exit_code == 0, result.output
    assert not [p for p in (tmp_path / "workspace").rglob("*") if p.is_file()]
    assert RENDERED_REFUSAL in store.outbox_path(sid, 2).read_text()
    applied = json.loads((store.turn_dir(sid, 1) / "meta.json").read_text())
    assert applied["rendered"] is True


def test_a_clipboard_candidate_is_shown_as_it_will_be_read():
    """A copy naming no session waits for the user's y: what it would do is said as it will
    be read, from the copy's HTML (the rendered text hides a command behind a glued label)."""
    reply = '```\n[DELETE_FILE path="old.py"]\n[RUN_COMMAND]\nrm -rf build\n[/RUN_COMMAND]\n```\n'
    html = chat_html(reply)
    plain = "textCopy code" + browser_text(html)  # the label glued to the first line
    assert what_it_would_do(plain) == "  RUN_COMMAND: rm -rf build"  # DELETE_FILE hidden
    assert what_it_would_do(*read_copy(plain, html)) == (
        "  DELETE_FILE old.py\n  RUN_COMMAND: rm -rf build"
    )
    unfenced = CHAT.render('[DELETE_FILE path="__old__.py"]\n')
    assert what_it_would_do(*read_copy(browser_text(unfenced), unfenced)) == (
        "  DELETE_FILE: refused (outside a code block of a rendered page)"
    )


def test_prose_a_chat_keeps_as_written_is_still_rendered():
    """A chat may style its prose white-space: pre-wrap (in its own, proportional font): a
    selection of it carries no markdown element, yet backslashes and marks are gone."""
    html = (
        '<span style="white-space: pre-wrap; font-family: ui-sans-serif, system-ui">'
        '[CREATE_FILE path="sep.py"]\nSEP = "a\\nb"\nPAT = r"foo|bar"\n[/CREATE_FILE]</span>'
    )
    plain = '[CREATE_FILE path="sep.py"]\nSEP = "a\\nb"\nPAT = r"foo|bar"\n[/CREATE_FILE]'
    copy = read_copy(plain, html)
    assert copy.rendered
    with pytest.raises(SessionError, match="selection of a chat's rendered page"):
        exact_text(copy)  # `codingagent paste` and a watcher's inbox refuse to keep it


def test_a_gutter_in_table_cells_makes_the_block_untrusted():
    html = (
        "<pre><code><table><tr><td>1</td><td>[RUN_COMMAND]</td></tr>"
        "<tr><td>2</td><td>rm -rf build</td></tr><tr><td>3</td><td>[/RUN_COMMAND]</td></tr>"
        "</table></code></pre>"
    )
    shown = "1\t[RUN_COMMAND]\n2\trm -rf build\n3\t[/RUN_COMMAND]\n"
    (command,) = commands_and_slips(answer_from_html(html, shown), rendered=True)[0]
    assert isinstance(command, ParseError) and command.message == RENDERED_REFUSAL


def test_no_break_spaces_in_code_are_spaces_to_the_line_check():
    html = (
        '<pre><code>[CREATE_FILE path="a.py"]\ndef f():\n&nbsp;&nbsp;return 1\n[/CREATE_FILE]'
        "</code></pre>"
    )
    shown = '[CREATE_FILE path="a.py"]\ndef f():\n  return 1\n[/CREATE_FILE]\n'
    (command,) = commands_and_slips(answer_from_html(html, shown), rendered=True)[0]
    assert isinstance(command, CreateFile)


def test_an_exact_rendered_copy_is_kept_as_read():
    html = CHAT.render(files_reply("one block"))
    assert exact_text(read_copy(browser_text(html), html)) == answer_from_html(html)


@pytest.mark.parametrize("data", [b"", b"  \n", b"a\0b", b"caf\xe9 [DONE]\n", b"[DONE]\n"])
def test_a_reply_read_from_a_rendered_page_stays_so_whatever_its_bytes(data: bytes):
    """Empty, binary, not UTF-8 or fine: the reply keeps its rendered mark (the turn's meta.json
    says it), and its text and problem are as its bytes make them."""
    decoded = decode(data, rendered=True)
    assert decoded.rendered is True
    assert decoded.text == data.decode("utf-8", errors="replace")
    assert (decoded.problem is None) == (data == b"[DONE]\n")
