"""The bodies of body commands: how the lines between an opening and a closing tag become a
command's fields (the parser finds the lines; this module reads them).

File content is verbatim, except that one code fence wrapping all of it is removed (the command
says so), and so are the lines a chat page adds around a code block when its answer is copied
(``python`` and ``Copy code`` standing alone above it, docs/admission.md): the result names them.
A REPLACE body is SEARCH/REPLACE blocks, read with the tolerances models need; a
PATCH body is kept as written for :mod:`codingagent.protocol.patches`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from codingagent.protocol.commands import ReplaceBlock

_CLIP = 60
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_SEARCH_MARK = re.compile(r"<{5,9} ?SEARCH>?", re.IGNORECASE)
_DIVIDER = re.compile(r"={5,9}")
# In REPLACE lines only the divider as the protocol writes it ends a block: an RST heading
# (``========``) is content.
_SECOND_DIVIDER = "======="
_REPLACE_MARK = re.compile(r">{5,9} ?REPLACE", re.IGNORECASE)
# What a chat page shows around a code block, copied with it: its language, then a copy button.
_LANGUAGE = re.compile(r"[A-Za-z][A-Za-z0-9_+#.-]{0,19}")
_COPY_LABELS = frozenset({"copy code", "copy", "copied!", "copy to clipboard"})
_FENCES_IGNORED = "ignored the code fence lines around the block"
_BLOCK_HELP = (
    "write <<<<<<< SEARCH, the lines to find, =======, the lines to put instead, >>>>>>> REPLACE"
)


def fence(line: str) -> tuple[str, str] | None:
    """``(marker, info string)`` if ``line`` is a markdown code fence (```` ```python ````)."""
    match = _FENCE.fullmatch(line.strip())
    if match is None:
        return None
    marker, info = match.groups()
    if marker[0] == "`" and "`" in info:
        return None  # ```x``` is inline code, not a fence
    return marker, info.strip()


def _trim_blank_edges(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _unfence(lines: list[str]) -> list[str] | None:
    """The lines inside one code fence that wraps all of ``lines``, or None if there is none.

    Blank lines around the fence go with it. The fence must really wrap the body: a body that
    starts with one code block and ends with another (``` a ``` text ``` b ```) is left alone.
    Fences inside must open with an info string (```` ```bash ````) and be closed.
    """
    body = _trim_blank_edges(lines)
    if len(body) < 2:
        return None
    opening, closing = fence(body[0]), fence(body[-1])
    if opening is None or closing is None or closing[1]:
        return None
    marker = opening[0]
    if closing[0][0] != marker[0] or len(closing[0]) < len(marker):
        return None
    inner = body[1:-1]
    return inner if _fences_balanced(inner, marker) else None


def _fences_balanced(lines: list[str], outer: str) -> bool:
    """Whether every fence in ``lines`` that could close ``outer`` closes an inner block."""
    inside = False
    for line in lines:
        found = fence(line)
        if found is None or found[0][0] != outer[0] or len(found[0]) < len(outer):
            continue
        if found[1]:
            inside = True
        elif inside:
            inside = False
        else:
            return False  # a bare fence outside any inner block would close the outer one
    return not inside


def _lines_text(lines: list[str]) -> str:
    """File content is verbatim: every line keeps its indentation and gets its newline back."""
    return "\n".join(lines) + "\n" if lines else ""


def chat_residue(lines: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """``lines`` without the chat page's lines around a code block, and those lines.

    Above the block: a language name then a copy label (``python`` / ``Copy code``), a
    language name right before a fence of that language, or copy labels before a fence.
    Below it: copy labels right after a
    closing fence. A language name alone above unfenced content is content.
    """
    body = _trim_blank_edges(lines)
    start = 0
    if body and _LANGUAGE.fullmatch(body[0].strip()) and len(body) > 1:
        after, fenced = body[1].strip().lower(), fence(body[1])
        if after in _COPY_LABELS or (fenced and fenced[1].lower() == body[0].strip().lower()):
            start = 1
    while start < len(body) and body[start].strip().lower() in _COPY_LABELS:
        start += 1
    if start == len(body):
        start = 0  # nothing but such words: they are the content
    elif start and fence(body[start]) is None:
        copy_labels = [line for line in body[:start] if line.strip().lower() in _COPY_LABELS]
        start = start if copy_labels else 0  # no copy button: "python" is content
    end = len(body)
    while end > start + 1 and body[end - 1].strip().lower() in _COPY_LABELS:
        end -= 1
    if end < len(body) and fence(body[end - 1]) is None:
        end = len(body)
    if start == 0 and end == len(body):
        return lines, ()
    return body[start:end], tuple(line.strip() for line in body[:start] + body[end:])


def file_body(lines: list[str], first_line: int) -> dict[str, object]:
    """A file's content; one code fence around all of it is removed, and so are the chat
    page's lines around it; both are recorded."""
    lines, residue = chat_residue(lines)
    inner = _unfence(lines)
    if inner is None:
        return {"content": _lines_text(lines), "residue": residue}
    return {"content": _lines_text(inner), "fence_removed": True, "residue": residue}


def command_body(lines: list[str], first_line: int) -> dict[str, object]:
    """A shell command loses the blank lines around it, a code fence wrapping it (a fence
    line would be run as a command) and the chat page's lines around that; inner lines stay
    as written."""
    lines, residue = chat_residue(_trim_blank_edges(lines))
    inner = _unfence(lines)
    command = "\n".join(_trim_blank_edges(inner) if inner is not None else lines)
    return {"command": command, "residue": residue}


def text_body(field: str) -> Callable[[list[str], int], dict[str, object]]:
    """Messages and summaries are prose: surrounding whitespace carries no meaning."""

    def render(lines: list[str], first_line: int) -> dict[str, object]:
        return {field: "\n".join(lines).strip()}

    return render


def replace_body(lines: list[str], first_line: int) -> dict[str, object]:
    """The SEARCH/REPLACE blocks of a REPLACE body; blank and fence lines between blocks are
    ignored, any other text there is an error (the edit it belongs to is unclear).

    Shapes whose intent is plain are read and the block says what was tolerated: a
    ``<<<<<<< SEARCH>`` marker, a block closed by ``=======`` (so a doubled divider before
    ``>>>>>>> REPLACE`` ends the block, as aider reads it: a divider never becomes file
    content; other runs of ``=`` are, e.g. RST headings), and SEARCH and REPLACE lines each
    wrapped in a code fence.
    """
    blocks: list[ReplaceBlock] = []
    search: list[str] = []
    replace: list[str] = []
    tolerated: list[str] = []
    section: list[str] | None = None
    start = 0
    closed_by_divider = fenced = False
    for number, line in enumerate(lines, first_line):
        mark = line.strip()
        if section is None:
            if _SEARCH_MARK.fullmatch(mark):
                start, search, replace, tolerated = number, [], [], []
                if fenced:
                    tolerated.append(_FENCES_IGNORED)
                    fenced = False
                if mark.endswith(">"):
                    tolerated.append(f"read '{mark}' as <<<<<<< SEARCH")
                section, closed_by_divider = search, False
            elif closed_by_divider and _REPLACE_MARK.fullmatch(mark):
                closed_by_divider = False  # the doubled divider's own >>>>>>> REPLACE
                blocks[-1] = _doubled_divider(blocks[-1])
            elif fence(line) is not None:
                fenced = True  # told in the result of the block it stands by
            elif mark:
                raise BodyError(
                    f"text outside a SEARCH/REPLACE block at reply line {number} "
                    f"('{clip(mark)}'); {_BLOCK_HELP}"
                )
        elif section is search:
            if _DIVIDER.fullmatch(mark):
                section = replace
            elif _REPLACE_MARK.fullmatch(mark) or _SEARCH_MARK.fullmatch(mark):
                raise BodyError(f"the block at reply line {start} has no ======= line")
            else:
                search.append(line)
        elif _REPLACE_MARK.fullmatch(mark) or mark == _SECOND_DIVIDER:
            block = _block(start, search, replace, tolerated)
            closed_by_divider = mark.startswith("=")
            if closed_by_divider:
                note = f"read the ======= at reply line {number} as >>>>>>> REPLACE"
                block = block.model_copy(update={"tolerated": (*block.tolerated, note)})
            blocks.append(block)
            section = None
        elif _SEARCH_MARK.fullmatch(mark):
            raise BodyError(f"the block at reply line {start} has no >>>>>>> REPLACE line")
        else:
            replace.append(line)
    if section is not None:
        raise BodyError(f"the block at reply line {start} has no >>>>>>> REPLACE line")
    if not blocks:
        raise BodyError(f"no SEARCH/REPLACE block; {_BLOCK_HELP}")
    if fenced and _FENCES_IGNORED not in blocks[-1].tolerated:
        update = {"tolerated": (*blocks[-1].tolerated, _FENCES_IGNORED)}
        blocks[-1] = blocks[-1].model_copy(update=update)
    return {"blocks": tuple(blocks)}


def _block(start: int, search: list[str], replace: list[str], tolerated: list[str]) -> ReplaceBlock:
    """One block; SEARCH and REPLACE lines each wrapped in a code fence lose the fences (an
    empty REPLACE needs none)."""
    inner_search, inner_replace = _unfence(search), _unfence(replace)
    if inner_search is not None and (inner_replace is not None or not _trim_blank_edges(replace)):
        search, replace = inner_search, inner_replace or []
        tolerated = [*tolerated, "removed the code fences around SEARCH and REPLACE"]
    return ReplaceBlock(
        line=start,
        search=_lines_text(search),
        replace=_lines_text(replace),
        tolerated=tuple(tolerated),
    )


def _doubled_divider(block: ReplaceBlock) -> ReplaceBlock:
    """A block closed by ``=======`` that ``>>>>>>> REPLACE`` follows: a doubled divider (the
    note saying the block was closed by ``=======`` is the block's last)."""
    *kept, _ = block.tolerated
    note = "read the second ======= as the end of the block (a divider is never file content)"
    return block.model_copy(update={"tolerated": (*kept, note)})


def patch_body(lines: list[str], first_line: int) -> dict[str, object]:
    """A PATCH body as written; a code fence around all of it (```` ```diff ````) becomes two
    blank lines, so every line keeps its reply line number."""
    if _unfence(lines) is not None:
        first = next(i for i, line in enumerate(lines) if line.strip())
        last = max(i for i, line in enumerate(lines) if line.strip())
        lines = [*lines[:first], "", *lines[first + 1 : last], "", *lines[last + 1 :]]
    return {"text": _lines_text(lines), "body_line": first_line}


class BodyError(Exception):
    """A body that cannot be read; it becomes a ParseError in the command's place."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def clip(text: str) -> str:
    """Quote at most ``_CLIP`` characters of the LLM's text back to it."""
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."
