"""An answer read from a chat's rendered page, as the page shows code (docs/protocol.md,
"Answers read from a rendered page").

A selection copied in a browser puts two texts on the clipboard: ``text/plain``, the rendered
text (markdown's marks gone: ``__init__.py`` is ``init.py``, a code block's "Copy code"
label glued to its first line), and ``text/html``, the rendered page itself. In the HTML every
code block is a ``<pre>`` whose text is exactly what the model wrote. :func:`answer_from_html`
reads it as the extension's ``pagetext.js`` reads a page: each code block verbatim between
fence lines (no language label, no Copy button, no line-number gutter), the prose around it as
lines. The session then refuses what stood outside the code blocks and would change files or
run (:mod:`codingagent.protocol.codeblocks`).

:func:`read_copy` decides which text a copy is: a chat's own Copy button writes the answer's
markdown source as ``text/plain`` (often with HTML beside it); a plain editor or terminal
writes text, with HTML that is only its colours. Only a copy of a rendered page is read from
its HTML.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import NamedTuple

from codingagent.protocol.codeblocks import code_blocks

# Elements that end a line of prose (the CSS default is a block, or a line of its own).
_BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    ]
)
# What a page shows that is not the answer's text.
_SKIPPED = frozenset(
    [
        "button",
        "script",
        "style",
        "svg",
        "template",
        "noscript",
        "head",
        "title",
        "select",
        "textarea",
        "input",
        "codingagent-apply",
        "codingagent-relay",
    ]
)
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# What only a markdown renderer makes: a copy without any is plain text in colours.
_RENDERED = frozenset(
    [
        "p",
        "pre",
        "code",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "strong",
        "em",
        "ul",
        "ol",
        "li",
        "blockquote",
        "table",
        "hr",
    ]
)
# Line-number gutters and copy-button labels, by the class names highlighters give them.
_GUTTER = re.compile(r"line-?numbers?|linenumber|lineno|gutter|hljs-ln-n|copy", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|user-select\s*:\s*none", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BACKTICKS = re.compile(r"`+")


class Copy(NamedTuple):
    """The text to apply, and whether it was read from a rendered page."""

    text: str
    rendered: bool


def read_copy(plain: str, html: str | None) -> Copy:
    """The text a clipboard copy stands for: ``plain`` as it is, unless ``html`` shows it is
    the rendered text of a chat's page; then the answer read from the HTML, rendered."""
    if not html or not html.strip():
        return Copy(plain, False)
    page = _read(html)
    if not page.tags & _RENDERED:
        return Copy(plain, False)  # an editor's or a terminal's colours: the text is exact
    shown = {line for code in page.codes for line in code.splitlines()}
    lines = plain.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks = code_blocks(lines)
    for index, line in enumerate(lines):
        opens = blocks[index] == 0 and index + 1 < len(blocks) and blocks[index + 1] != 0
        if opens and line not in shown:
            # A fence line the page does not show: the plain text is the markdown source (a
            # chat's Copy button), exact as the model wrote it.
            return Copy(plain, False)
    return Copy(page.text(), True)


def answer_from_html(html: str) -> str:
    """The answer a rendered page shows: code blocks verbatim between fences, prose as lines."""
    return _read(html).text()


def _read(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def fenced(code: str) -> str:
    """``code`` between fence lines longer than any run of backticks in it."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


class _Page(HTMLParser):
    """The page's text in parts: prose, and each ``<pre>``'s code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()  # every element name seen
        self.codes: list[str] = []  # each code block's text
        self._parts: list[tuple[bool, str]] = []  # (is code, text)
        self._prose: list[str] = []
        self._open: list[tuple[str, bool]] = []  # open elements: (name, skipped)
        self._skipping = 0  # open elements whose text is not the answer's
        self._pre: list[tuple[bool, str]] | None = None  # inside a <pre>: (in <code>, text)
        self._pre_depth = 0
        self._code_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "br":
            self._text("\n")
            return
        if tag in _VOID:
            return
        skipped = tag in _SKIPPED or (tag not in ("pre", "code") and _hidden(dict(attrs)))
        self._open.append((tag, skipped))
        if skipped:
            self._skipping += 1
            return
        if self._skipping:
            return
        if tag == "pre":
            self._pre_depth += 1
            if self._pre is None:
                self._flush_prose()
                self._pre = []
            return
        if self._pre is not None:
            if tag == "code":
                self._code_depth += 1
            elif tag in _BLOCKS:
                self._pre_line_break()
            return
        if tag in _BLOCKS:
            self._prose.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not any(name == tag for name, _ in self._open):
            return
        while self._open:
            name, skipped = self._open.pop()
            if skipped:
                self._skipping -= 1
            elif not self._skipping:
                self._close(name)
            if name == tag:
                break

    def _close(self, tag: str) -> None:
        if tag == "pre" and self._pre is not None:
            self._pre_depth -= 1
            if self._pre_depth == 0:
                self._end_pre()
        elif self._pre is not None:
            if tag == "code":
                self._code_depth -= 1
            elif tag in _BLOCKS:
                self._pre_line_break()
        elif tag in _BLOCKS:
            self._prose.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self._text(data)

    def _text(self, data: str) -> None:
        if self._skipping:
            return
        if self._pre is not None:
            self._pre.append((self._code_depth > 0, data))
        else:
            self._prose.append(data)

    def _pre_line_break(self) -> None:
        """A block inside a code block (a highlighter's line) starts or ends a line."""
        assert self._pre is not None
        if self._pre and not self._pre[-1][1].endswith("\n"):
            self._pre.append((self._code_depth > 0, "\n"))

    def _end_pre(self) -> None:
        """The code block's text: its ``<code>`` when it has one (a header with the language
        and a Copy button may sit beside it in the ``<pre>``), less one final line break."""
        assert self._pre is not None
        inside = [text for in_code, text in self._pre if in_code]
        code = "".join(inside if inside else (text for _, text in self._pre))
        code = code.removesuffix("\n")
        self.codes.append(code)
        self._parts.append((True, code))
        self._pre = None
        self._code_depth = 0

    def _flush_prose(self) -> None:
        text = "".join(self._prose)
        self._prose = []
        if text.strip():
            self._parts.append((False, text))

    def close(self) -> None:
        super().close()
        if self._pre is not None:  # a <pre> never closed: the copy ended inside it
            self._pre_depth = 0
            self._end_pre()
        self._flush_prose()

    def text(self) -> str:
        out: list[str] = []
        for is_code, text in self._parts:
            out.append(fenced(text) if is_code else _prose_lines(text))
        return "\n".join(part for part in out if part) + "\n"


def _prose_lines(text: str) -> str:
    """Prose as the page shows it: spaces run together, each line trimmed, at most one blank
    line in a row."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip("\n")


def _hidden(attributes: dict[str, str | None]) -> bool:
    """Whether an element is not part of the answer's text: hidden, a gutter, a label."""
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        return True
    if _HIDDEN_STYLE.search(attributes.get("style") or ""):
        return True
    return bool(_GUTTER.search(attributes.get("class") or ""))
