"""The commands a reply's text is parsed into (their results are ``state.CommandResult``).

One pydantic class per command, discriminated on ``kind``: a command is one declaration.  Its
class says whether it writes a file (``writes``) and which path it names (``target``); ``line``
is the 1-based line of the reply where the command's opening tag stands, so errors can point the
LLM at it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Command(BaseModel):
    # The validators are built on first use, not at import: `codingagent sessions` and other
    # commands that never parse a reply should not pay for schemas they do not use.
    model_config = ConfigDict(frozen=True, defer_build=True)

    writes: ClassVar[bool] = False  # whether it writes or deletes the file it targets

    line: int = Field(ge=1, description="1-based line of the opening tag in the reply")

    @property
    def target(self) -> str | None:
        """The workspace path the command names, as the LLM wrote it (None: it names none)."""
        return None

    @property
    def name(self) -> str:
        """The command's tag name as the LLM wrote it (``CREATE_FILE``, ...)."""
        return self.kind  # type: ignore[attr-defined]


class CreateFile(_Command):
    writes: ClassVar[bool] = True

    kind: Literal["CREATE_FILE"] = "CREATE_FILE"
    path: str
    content: str
    fence_removed: bool = False  # the body was wrapped in a code fence, which was removed
    residue: tuple[str, ...] = ()  # a chat page's lines around the block, removed

    @property
    def target(self) -> str:
        return self.path


class EditFile(_Command):
    writes: ClassVar[bool] = True

    kind: Literal["EDIT_FILE"] = "EDIT_FILE"
    path: str
    start_line: int
    end_line: int
    content: str
    fence_removed: bool = False
    residue: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return self.path


class DeleteFile(_Command):
    writes: ClassVar[bool] = True

    kind: Literal["DELETE_FILE"] = "DELETE_FILE"
    path: str

    @property
    def target(self) -> str:
        return self.path


class ReadFile(_Command):
    kind: Literal["READ_FILE"] = "READ_FILE"
    path: str
    start_line: int | None = None  # protocol 1.1: only some lines (None: from the first)
    end_line: int | None = None  # (None: to the last)
    symbol: str | None = None  # a function, class or method by name (docs/prompts.md)
    map: bool = False  # the code map of a folder (or a file) instead of its text

    @property
    def target(self) -> str:
        return self.path


class ReplaceBlock(BaseModel):
    """One SEARCH/REPLACE block: lines to find (verbatim, each ending in a newline) and the
    lines to put in their place."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    line: int = Field(ge=1, description="1-based reply line of the block's SEARCH marker")
    search: str
    replace: str
    # Shapes read as the LLM meant them ("read the ======= ... as >>>>>>> REPLACE"), for the result.
    tolerated: tuple[str, ...] = ()


class Replace(_Command):
    """Content-anchored edit (protocol 1.1): blocks applied in order, all or nothing."""

    writes: ClassVar[bool] = True

    kind: Literal["REPLACE"] = "REPLACE"
    path: str
    blocks: tuple[ReplaceBlock, ...]

    @property
    def target(self) -> str:
        return self.path


class Patch(_Command):
    """Unified diffs or a ``*** Begin Patch`` envelope (protocol 1.2), all or nothing; it may
    name several files, so it has no one ``target``."""

    writes: ClassVar[bool] = True

    kind: Literal["PATCH"] = "PATCH"
    text: str  # the body as written (a code fence around all of it removed)
    body_line: int = Field(ge=1, description="reply line of the body's first line")


class Ask(_Command):
    """A question for the user (protocol 1.2): the turn ends there, and the next prompt
    carries the answer."""

    kind: Literal["ASK"] = "ASK"
    question: str


class Search(_Command):
    """Grep the workspace (protocol 1.1); the hits are shown in the next outbox."""

    kind: Literal["SEARCH"] = "SEARCH"
    query: str
    glob: str | None = None
    regex: bool = False
    case_sensitive: bool = False
    context: int | None = None  # lines shown around each hit (None: the default)


class RunCommand(_Command):
    kind: Literal["RUN_COMMAND"] = "RUN_COMMAND"
    command: str
    residue: tuple[str, ...] = ()  # a chat page's lines around the block, removed


class Message(_Command):
    kind: Literal["MESSAGE"] = "MESSAGE"
    text: str


class Done(_Command):
    kind: Literal["DONE"] = "DONE"
    summary: str


class ParseError(_Command):
    """A command the parser recognised but could not read; it becomes a ``[FAILED]`` result."""

    kind: Literal["PARSE_ERROR"] = "PARSE_ERROR"
    command: str = Field(description="tag name of the broken command, e.g. EDIT_FILE")
    message: str

    @property
    def name(self) -> str:
        return self.command


Command = Annotated[
    CreateFile
    | EditFile
    | DeleteFile
    | ReadFile
    | Replace
    | Patch
    | Ask
    | Search
    | RunCommand
    | Message
    | Done
    | ParseError,
    Field(discriminator="kind"),
]


def plural(n: int, noun: str) -> str:
    """``1 line``, ``3 lines``: counts in result lines and the console."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def file_lines(text: str) -> list[str]:
    """The lines of a file as EDIT_FILE counts them: only ``\\n`` ends a line (not form feeds
    or other separators ``str.splitlines`` knows), and a final newline starts no new line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(lines: Sequence[str], first: int) -> list[str]:
    """File lines as the LLM is shown them: ``  12 | code``, numbered from ``first``.

    The numbers are right-aligned (at least four wide) so the text lines up. A line's own
    trailing ``\\r`` (CRLF files) is not shown, and an empty line gets no trailing space.
    """
    width = max(4, len(str(first + len(lines) - 1)))
    shown = []
    for number, line in enumerate(lines, first):
        text = line.removesuffix("\r")
        shown.append(f"{number:>{width}} | {text}" if text else f"{number:>{width}} |")
    return shown
