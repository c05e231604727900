"""Markdown drawn as the big chats draw an answer, for the fixture chat page ``rendered.html``.

markdown-it-py renders CommonMark (as the chats' renderers do), raw HTML escaped (as they escape
it); then each code block is dressed as chat pages dress it: a header inside the ``<pre>`` with
the language and a "Copy code" button, keywords in highlighter spans, and a line-number gutter
(``aria-hidden``, not selectable) before each line. What a reader of the page must see through.
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False})
_CODE = re.compile(r'<pre><code(?: class="language-([^"]*)")?>(.*?)</code></pre>', re.DOTALL)
_KEYWORDS = re.compile(r"\b(def|return|import|from|class)\b")
STEPS = 8  # snapshots of a streamed answer


def chat_html(markdown: str) -> str:
    """The answer's HTML, as a chat shows it."""
    return _CODE.sub(_dress, _RENDERER.render(markdown))


def streamed(markdown: str) -> list[str]:
    """The page after each of ``STEPS`` growing pieces of the answer came in."""
    return [
        chat_html(markdown[: -(-len(markdown) * step // STEPS)]) for step in range(1, STEPS + 1)
    ]


def _dress(found: re.Match[str]) -> str:
    language = found.group(1) or "text"
    lines = found.group(2).split("\n")
    last = lines.pop() if lines and lines[-1] == "" else None  # the block's final line break
    gutter = '<span class="line-number" aria-hidden="true" style="user-select: none">{n}</span>'
    body = "\n".join(
        gutter.format(n=n) + _KEYWORDS.sub(r'<span class="hljs-keyword">\1</span>', line)
        for n, line in enumerate(lines, 1)
    )
    if last is not None:
        body += "\n"
    header = (
        f'<div class="code-header"><span>{html.escape(language)}</span>'
        '<button type="button" class="copy-code">Copy code</button></div>'
    )
    return f'<pre>{header}<code class="language-{html.escape(language)}">{body}</code></pre>'
