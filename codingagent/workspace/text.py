"""A file's bytes as text for the model: UTF-8, or said not to be (docs/prompts.md, "Files that
are not UTF-8").

A real project may hold a file in Latin-1 or Windows-1252 (an old source file, a data file).
Shown with U+FFFD for each such byte, it would read as damage the model may "fix"; shown
without a word, the model would think it UTF-8. So such a file is shown decoded as cp1252
(``latin-1`` where cp1252 has no character for a byte: every byte is then one character), with
a note saying so, wherever its content is shown; and EDIT_FILE, REPLACE and PATCH refuse it
rather than write it back re-encoded (:func:`refusal`).
"""

from __future__ import annotations

import codecs
from typing import NamedTuple

SINGLE_BYTE = ("cp1252", "latin-1")  # tried in this order for a file that is not UTF-8


class Decoded(NamedTuple):
    """A file's text; ``encoding`` None when it is UTF-8, else what it is shown decoded as,
    and ``line`` the first line holding a byte UTF-8 does not allow."""

    text: str
    encoding: str | None = None
    line: int = 0

    @property
    def note(self) -> str:
        """What a view of the text says about it: '' for UTF-8."""
        if self.encoding is None:
            return ""
        return (
            f"not UTF-8 (from line {self.line}): shown decoded as {self.encoding}, one "
            "character a byte; EDIT_FILE, REPLACE and PATCH refuse it"
        )


def decoded(data: bytes, whole: bool = True) -> Decoded:
    """``data`` as text; ``whole`` False when ``data`` may end inside a character (a read cut
    at a limit): a cut UTF-8 character at its end is then dropped, not taken for a byte that
    is not UTF-8."""
    try:
        return Decoded(codecs.getincrementaldecoder("utf-8")().decode(data, final=whole))
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
    for encoding in SINGLE_BYTE:
        try:
            return Decoded(data.decode(encoding), encoding, line)
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def refusal(path: str, data: bytes) -> str:
    """Why a command that edits text refuses ``path``, whose ``data`` is not UTF-8."""
    if b"\0" in data:
        return f"'{path}' is not a UTF-8 text file"
    found = decoded(data)
    return (
        f"'{path}' is not a UTF-8 text file (from line {found.line}; it reads as "
        f"{found.encoding}): EDIT_FILE, REPLACE and PATCH never re-encode a file. Change it "
        "with a RUN_COMMAND that keeps its encoding, or write it whole with CREATE_FILE (it "
        "is then UTF-8)"
    )
