"""A source text without its comments (docs/prompts.md, "The code the task points at"): what
a build keeps of it, so a bundle's copy of a function is the same code as its source's
(:mod:`.copies`), and a call a comment mentions (``# see _fix()``) is no call
(:mod:`.calls`). Pure: text in, text out.

Python's comments run from ``#`` to the end of the line; those of the C family (JavaScript,
TypeScript, Go, Rust, Java, C, C++) from ``//`` to the end of the line and from ``/*`` to
``*/``; Ruby's from ``#``. A comment sign inside a string is no comment: strings end at their
quote, or at the end of the line (a line's stray quote, in a regular expression, spoils no
more than that line), save Python's triple-quoted strings and JavaScript's template strings,
which run to their closing quotes. Each comment leaves its line breaks, so lines keep their
numbers.
"""

from __future__ import annotations

HASH = frozenset({"python", "ruby"})  # languages whose comments start with ``#``


def uncommented(text: str, language: str | None) -> str:
    """``text`` without its comments, in ``language`` (None: as it is)."""
    if language is None:
        return text
    hashed = language in HASH
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if (hashed and c == "#") or (not hashed and text.startswith("//", i)):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif not hashed and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c in "'\"`":
            end = _string_end(text, i, language)
            out.append(text[i:end])
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _string_end(text: str, start: int, language: str) -> int:
    """Where the string that opens at ``start`` ends (just after its closing quote)."""
    quote = text[start]
    if language == "python" and text.startswith(quote * 3, start):
        end = text.find(quote * 3, start + 3)
        return len(text) if end < 0 else end + 3
    multiline = quote == "`" and language != "python"
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n" and not multiline:
            return i
        i += 1
    return len(text)
