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

from codingagent.protocol.codeblocks import RENDERED_REFUSAL, code_blocks, opens_block
from codingagent.protocol.commands import ParseError
from codingagent.protocol.scan import commands_and_slips
from codingagent.state import SessionError


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Elements that end a line of prose (the CSS default is a block, or a line of its own).
_BLOCKS = _words(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main nav ol p "
    "section summary table tbody td tfoot th thead tr ul"
)
# What a page shows that is not the answer's text.
_SKIPPED = _words(
    "button script style svg template noscript head title select textarea input "
    "codingagent-apply codingagent-relay"
)
_VOID = _words("area base br col embed hr img input link meta param source track wbr")
# What only a markdown renderer makes: a copy with any of it is a rendered page's.
_RENDERED = _words(
    "p pre code h1 h2 h3 h4 h5 h6 strong em b i u ul ol li blockquote table hr a del s sup sub "
    "img math"
)
# Line-number gutters, by the class names highlighters give them (a <pre> or <code> itself
# may carry one: it is never hidden).
_GUTTER = re.compile(r"line-?numbers?|linenumber|lineno|gutter|hljs-ln-n", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|user-select\s*:\s*none", re.IGNORECASE)
_PREFORMATTED = re.compile(r"white-space\s*:\s*(pre|pre-wrap|break-spaces)\b", re.IGNORECASE)
# An editor's or a terminal's copy names a fixed-width font where it keeps the text as it is;
# a chat's prose kept with white-space: pre-wrap is in a proportional one.
_MONOSPACE = re.compile(
    r"font-family\s*:[^;]*(monospace|consolas|menlo|monaco|courier|mono\b|fira code|cascadia)",
    re.IGNORECASE,
)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BACKTICKS = re.compile(r"`+")


class Copy(NamedTuple):
    """The text to apply, and whether it was read from a rendered page."""

    text: str
    rendered: bool


def read_copy(plain: str, html: str | None) -> Copy:
    """The text a clipboard copy stands for: ``plain`` as it is where the copy shows it is
    exact, else the answer read from ``html``, rendered.

    Exact only on evidence: no HTML; HTML whose text is all kept as it is in a fixed-width
    font, with nothing a markdown renderer makes (an editor's or a terminal's colours); or a
    text whose code blocks are, one for one, the page's code blocks (a chat's Copy writes the
    markdown source beside its rendering). Any other copy with HTML is a selection of a
    rendered page.
    """
    if not html or not html.strip():
        return Copy(plain, False)
    page = _read(html)
    if page.preformatted_only and not page.tags & _RENDERED:
        return Copy(plain, False)
    if page.codes and _code_of(plain) == page.codes:
        return Copy(plain, False)
    return Copy(page.text(plain), True)


def answer_from_html(html: str, shown: str | None = None) -> str:
    """The answer a rendered page shows: code blocks verbatim between fences, prose as lines.
    ``shown``: the page's text as the browser copied it, to check each code block's lines
    against (a block whose lines the browser did not show so is read as prose)."""
    return _read(html).text(shown)


def _read(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def _code_of(text: str) -> list[str]:
    """The contents of the text's fenced code blocks, in order."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found: dict[int, list[str]] = {}
    for line, block in zip(lines, code_blocks(lines), strict=True):
        if block:
            found.setdefault(block, []).append(line)
    return ["\n".join(block) for block in found.values()]


def fenced(code: str) -> str:
    """``code`` between fence lines longer than any run of backticks in it."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def _as_shown(code: str, seen: list[str] | None) -> bool:
    """Whether every line of ``code`` is a line of the browser's own text of the page (the
    first may end one: a "Copy code" label glued before it). A highlighter whose lines are
    blocks with no line break between them reads as one run-together line, which is not;
    nor is a gutter in a table cell beside each line. No-break spaces count as spaces (the
    browser's text has them as spaces). ``seen``: that text's lines (:func:`_lines_of`)."""
    if seen is None:
        return True
    lines = set(seen)
    first, *rest = _nbsp_free(code).split("\n")
    return (first in lines or any(line.endswith(first) for line in seen)) and all(
        line in lines for line in rest if line.strip()
    )


def _lines_of(shown: str | None) -> list[str] | None:
    """The lines of the browser's text, no-break spaces as spaces; split once a page."""
    return None if shown is None else _nbsp_free(shown).replace("\r\n", "\n").split("\n")


def _nbsp_free(text: str) -> str:
    return text.replace("\u00a0", " ")


def exact_text(copy: Copy) -> str:
    """The text of ``copy`` to keep where it will be read as raw text (a file in ``inbox/``):
    a selection of a rendered page only when all it would change or run stands in code
    blocks, so its text is exact; else a SessionError saying why."""
    if copy.rendered and any(
        isinstance(command, ParseError) and command.message == RENDERED_REFUSAL
        for command in commands_and_slips(copy.text, rendered=True)[0]
    ):
        raise SessionError(
            "This reply is a selection of a chat's rendered page, where markdown changes text "
            "outside code blocks, and commands in it stand outside one: kept as it is, it "
            "would be applied damaged. Use the chat's Copy button, or ask the LLM to put its "
            "commands in a code block"
        )
    return copy.text


class _Page(HTMLParser):
    """The page's text in parts: prose, and each ``<pre>``'s code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()  # every element name seen
        self.codes: list[str] = []  # each code block's text
        self._parts: list[tuple[bool, str]] = []  # (is code, text)
        self._prose: list[str] = []
        self._open: list[tuple[str, bool, bool]] = []  # (name, skipped, preformatted)
        self._skipping = 0  # open elements whose text is not the answer's
        self._formatted = 0  # open elements that keep their text as it is (white-space: pre)
        self._loose = False  # text seen outside any such element
        self._pre: list[tuple[bool, str]] | None = None  # inside a <pre>: (in <code>, text)
        self._pre_depth = 0
        self._code_depth = 0

    @property
    def preformatted_only(self) -> bool:
        """Whether all the text stands in elements that show it as it is (an editor's copy)."""
        return not self._loose

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "br":
            self._text("\n")
            return
        if tag in _VOID:
            return
        attributes = dict(attrs)
        style = attributes.get("style") or ""
        skipped = tag in _SKIPPED or (tag not in ("pre", "code") and _hidden(attributes))
        formatted = tag == "pre" or (
            _PREFORMATTED.search(style) is not None and _MONOSPACE.search(style) is not None
        )
        self._open.append((tag, skipped, formatted))
        self._formatted += formatted
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
            elif tag in _BLOCKS or "display:block" in style.replace(" ", ""):
                self._pre_line_break()
            return
        if tag in _BLOCKS:
            self._prose.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not any(name == tag for name, _, _ in self._open):
            return
        while self._open:
            name, skipped, formatted = self._open.pop()
            self._formatted -= formatted
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
        if not self._formatted and data.strip():
            self._loose = True
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
        and a Copy button may sit beside it in the ``<pre>``), with the line breaks between
        several ``<code>``, less one final line break."""
        assert self._pre is not None
        pieces = self._pre
        if any(in_code for in_code, _ in pieces):
            first = next(i for i, (in_code, _) in enumerate(pieces) if in_code)
            pieces = [
                (in_code, text)
                for i, (in_code, text) in enumerate(pieces)
                if in_code or (i > first and not text.strip() and "\n" in text)
            ]
        code = "".join(text for _, text in pieces).removesuffix("\n")
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

    def text(self, shown: str | None = None) -> str:
        """The answer: each code block between fences (read as prose where the browser's own
        text ``shown`` does not show its lines so), the prose as lines."""
        out: list[str] = []
        seen = _lines_of(shown)
        for is_code, text in self._parts:
            code = is_code and _as_shown(text, seen)
            out.append(fenced(text) if code else _prose_lines(text))
        return "\n".join(part for part in out if part) + "\n"


def _prose_lines(text: str) -> str:
    """Prose as the page shows it: spaces run together, each line trimmed, at most one blank
    line in a row; a line that would read as a code fence is indented, so that it cannot
    open a code block the page did not have."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(f"    {line}" if opens_block(line) else line)
    return "\n".join(kept).strip("\n")


def _hidden(attributes: dict[str, str | None]) -> bool:
    """Whether an element is not part of the answer's text: hidden, or a gutter."""
    if "hidden" in attributes or attributes.get("aria-hidden") == "true":
        return True
    if _HIDDEN_STYLE.search(attributes.get("style") or ""):
        return True
    return bool(_GUTTER.search(attributes.get("class") or ""))
