"""Guards on what the LLM writes: placeholder lines that stand for left-out code, and Python
that does not compile after a reply's last write to a ``.py`` file."""

from __future__ import annotations

import re
import warnings

from codingagent.execute.context import Turn
from codingagent.workspace import PathRejected

# Lines LLMs write instead of code they left out. A comment is judged by its words alone; other
# lines only when they also carry an ellipsis or are wrapped in <...> or [...], so that Python's
# `...`, JS spreads (`...args`) and prose in text files are never taken for placeholders.
_COMMENT = re.compile(r"(#+|//+|/\*+|<!--|\{/\*|--|;+|%)\s*")
_COMMENT_END = re.compile(r"\s*(\*/\}?|-->)$")
_EDGES = " \t.\u2026:;,-\u2013\u2014*<>[](){}\"'`"
_NOUN = (
    r"(code|codes|content|contents|file|class|classes|module|function|functions|methods?|"
    r"implementation|imports|logic|script|component|body|tests?|helpers|handlers|routes|"
    r"fields|styles|config|properties|lines|cases|setup|program)"
)
_KEPT = (
    r"(is |are )?(unchanged|the same|same|as before|as is|omitted|here|untouched|not shown|"
    r"elided|goes here|go here|remains? (the same|unchanged|as is)|stays? (the same|unchanged))"
)
_STRONG_PLACEHOLDERS = [
    r"keep(ing)? (the |all )?(existing|previous|original|other|remaining|same|rest)\b.*",
    rf"(the )?(rest|remainder) of (the |this |your )?{_NOUN}( {_KEPT})?",
    rf"(\w+ )?(existing|previous|original|unchanged|remaining) {_NOUN}( {_KEPT})?",
    rf"((the |all |other )?(\w+ )?{_NOUN} )?(unchanged|same as before|as before|"
    r"remains? unchanged|stays? the same|remains? the same)",
    r".*\b(same as before|unchanged from before|omitted for brevity|for brevity|code omitted|"
    r"omitted code|truncated for brevity)\b.*",
]
_WEAK_PLACEHOLDERS = [
    r"(the )?(rest|remainder) of .*",
    r"(existing|previous|original|other|remaining|unchanged|more|old|same|your) \w+.*",
    r".*\b(unchanged|as before|omitted|elided|not shown|remains the same|stays the same|"
    r"no changes?)\b.*",
    r"keep(ing)? .*",
]
_STRONG = [re.compile(p, re.IGNORECASE) for p in _STRONG_PLACEHOLDERS]
_WEAK = [re.compile(p, re.IGNORECASE) for p in _WEAK_PLACEHOLDERS + _STRONG_PLACEHOLDERS]


def _placeholder(line: str) -> bool:
    """Whether ``line`` stands for left-out code (``# ... rest of the code unchanged``)."""
    text = line.strip()
    if not text or len(text) > 120:
        return False
    comment = _COMMENT.match(text)
    ellipsis = "..." in text or "\u2026" in text
    wrapped = text[0] + text[-1] in ("<>", "[]")
    if comment is None and not (ellipsis or wrapped):
        return False
    words = _COMMENT_END.sub("", text[comment.end() :] if comment else text)
    words = " ".join(words.strip(_EDGES).split())
    patterns = _WEAK if ellipsis or wrapped else _STRONG
    return any(p.fullmatch(words) for p in patterns)


def elision(content: str) -> tuple[int, str] | None:
    """The first placeholder line of ``content`` (1-based number and text), if any."""
    for number, line in enumerate(content.split("\n"), 1):
        if _placeholder(line):
            return number, line.strip()
    return None


SYNTAX_CHECK_CAP = 1024 * 1024  # bytes of a .py file the syntax check compiles


def syntax_warning(rel: str, turn: Turn) -> str:
    """A warning if the ``.py`` file the reply just wrote for the last time does not compile,
    so that the LLM fixes it next turn instead of finding out from a failing run."""
    if rel not in turn.outcome.changed:
        return ""
    text = turn.outcome.written.get(rel)  # as a file command just wrote it: not read back
    try:
        data = (
            text.encode("utf-8")
            if text is not None
            else turn.workspace.read_bytes(rel, limit=SYNTAX_CHECK_CAP + 1)
        )
    except (OSError, PathRejected):
        return ""  # deleted again: nothing to check
    if len(data) > SYNTAX_CHECK_CAP:  # compiling 1 MB of Python takes ~0.4 s here: not per edit
        return "note: not syntax-checked, the file is over 1 MB"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings would go to the console
        try:
            compile(data, rel, "exec", dont_inherit=True)
        except SyntaxError as e:
            return (
                f"warning: Python cannot compile it: {type(e).__name__} at line {e.lineno}: {e.msg}"
            )
        except (ValueError, RecursionError, MemoryError) as e:
            return f"warning: Python cannot compile it: {e or type(e).__name__}"
    return ""
