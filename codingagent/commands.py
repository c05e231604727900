"""The values that flow through a turn: parsed commands and their results.

One pydantic class per command, discriminated on ``kind``.  ``line`` is the 1-based line of the
reply where the command's opening tag stands, so errors can point the LLM at it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int = Field(ge=1, description="1-based line of the opening tag in the reply")

    @property
    def name(self) -> str:
        """The command's tag name as the LLM wrote it (``CREATE_FILE``, ...)."""
        return self.kind  # type: ignore[attr-defined]


class CreateFile(_Command):
    kind: Literal["CREATE_FILE"] = "CREATE_FILE"
    path: str
    content: str


class EditFile(_Command):
    kind: Literal["EDIT_FILE"] = "EDIT_FILE"
    path: str
    start_line: int
    end_line: int
    content: str


class DeleteFile(_Command):
    kind: Literal["DELETE_FILE"] = "DELETE_FILE"
    path: str


class ReadFile(_Command):
    kind: Literal["READ_FILE"] = "READ_FILE"
    path: str


class RunCommand(_Command):
    kind: Literal["RUN_COMMAND"] = "RUN_COMMAND"
    command: str


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
    CreateFile | EditFile | DeleteFile | ReadFile | RunCommand | Message | Done | ParseError,
    Field(discriminator="kind"),
]


def plural(n: int, noun: str) -> str:
    """``1 line``, ``3 lines``: counts in result lines and the console."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class CommandResult(BaseModel):
    """The outcome of one command, as the LLM sees it in ``## Previous Command Results``.

    Serialised with camelCase keys, like the rest of the session state.
    """

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    command: str
    success: bool
    summary: str
    output: str | None = None
    duration_ms: float = 0.0

    @property
    def headline(self) -> str:
        """``[OK] CREATE_FILE: Created 'a.py'`` — the first line of the result."""
        status = "OK" if self.success else "FAILED"
        return f"[{status}] {self.command}: {self.summary}"

    def lines(self) -> list[str]:
        """The result as the outbox shows it: the headline, then the output, if any, indented.

        Single-line output stays on the ``Output:`` line, as in the protocol document; longer
        output follows it as an indented block.
        """
        lines = [self.headline]
        if self.output is None:
            return lines
        out = self.output.rstrip("\n").split("\n")
        if len(out) == 1:
            lines.append(f"  Output: {out[0]}")
        else:
            lines.append("  Output:")
            lines.extend(f"    {line}" if line else "" for line in out)
        return lines
