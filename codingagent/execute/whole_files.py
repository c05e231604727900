"""CREATE_FILE, DELETE_FILE and READ_FILE: whole files."""

from __future__ import annotations

from pathlib import PurePosixPath

from codingagent.execute.context import (
    CommandFailed,
    Success,
    Turn,
    clip,
    fence_note,
    is_a_directory,
    not_found,
    noted,
    read_text,
    remove,
    write,
)
from codingagent.execute.lines import lines_name
from codingagent.execute.placeholders import elision
from codingagent.execute.symbols import find_symbol
from codingagent.protocol.commands import CreateFile, DeleteFile, ReadFile
from codingagent.state import FileRange, ReadRequest


def create_file(cmd: CreateFile, turn: Turn) -> Success:
    found = elision(cmd.content)
    if found is not None and turn.workspace.is_file(cmd.path):
        number, line = found
        raise CommandFailed(
            f"Not written: line {number} of the new content of '{cmd.path}' ('{clip(line)}') "
            "stands for code that was left out, and CREATE_FILE replaces the whole file; send "
            "the complete content, or change only some lines with REPLACE",
        )
    try:
        created = write(cmd.path, cmd.content, turn)
    except IsADirectoryError:
        raise is_a_directory(cmd.path) from None
    summary = f"{'Created' if created else 'Overwrote'} '{cmd.path}'"
    return Success(noted(summary, fence_note(cmd.fence_removed, cmd.residue), parenthesis=True))


def delete_file(cmd: DeleteFile, turn: Turn) -> Success:
    remove(cmd.path, turn)
    return Success(f"Deleted '{cmd.path}'")


def read_file(cmd: ReadFile, turn: Turn) -> Success:
    if cmd.symbol is not None:
        return _read_symbol(cmd, cmd.symbol, turn)
    folder = turn.workspace.is_dir(cmd.path)
    if cmd.map:
        return _read_map(cmd, folder, turn)
    if folder and (cmd.start_line is not None or cmd.end_line is not None):
        raise CommandFailed(f"'{cmd.path}' is a folder: READ_FILE lists it without lines")
    if not folder and not turn.workspace.is_file(cmd.path):
        raise not_found(cmd.path)
    start, end = cmd.start_line, cmd.end_line
    first = 1 if start is None else start
    if first < 1 or (end is not None and end < first):
        last = "end" if end is None else end
        raise CommandFailed(f"Invalid line range {first}-{last} for '{cmd.path}'")
    _request(turn, cmd.path, start, end)
    if folder:
        return Success(f"The files in '{cmd.path}' are listed under Requested File Contents")
    if start is None and end is None:
        return Success(f"'{cmd.path}' is shown under Requested File Contents")
    if end is None:
        what = f"'{cmd.path}' from line {start} on is"
    elif first == end:
        what = f"Line {first} of '{cmd.path}' is"
    else:
        what = f"{lines_name(first, end).capitalize()} of '{cmd.path}' are"
    return Success(f"{what} shown under Requested File Contents")


def _read_symbol(cmd: ReadFile, symbol: str, turn: Turn) -> Success:
    """READ_FILE ``symbol=``: the lines of each definition of the name, as line ranges."""
    if cmd.start_line is not None or cmd.end_line is not None:
        raise CommandFailed("Give either symbol or start_line/end_line, not both")
    text = read_text(cmd.path, turn, editing=False)
    found = find_symbol(text, symbol, cmd.path)
    if not found:
        raise CommandFailed(
            f"No function, class or method '{clip(symbol)}' found in '{cmd.path}'; "
            f"SEARCH for it, or READ_FILE with start_line and end_line"
        )
    for start, end in found:
        _request(turn, cmd.path, start, end)
    ranges = ", ".join(lines_name(start, end) for start, end in found)
    return Success(
        f"'{clip(symbol)}' ({ranges} of '{cmd.path}') is shown under Requested File Contents"
    )


def _read_map(cmd: ReadFile, folder: bool, turn: Turn) -> Success:
    """READ_FILE ``map="true"``: the code map of a folder or a file in the next prompt."""
    if cmd.start_line is not None or cmd.end_line is not None:
        raise CommandFailed("Give either map or start_line/end_line, not both")
    if not folder and not turn.workspace.is_file(cmd.path):
        raise not_found(cmd.path)
    _request(turn, cmd.path, None, None, code_map=True)
    return Success(f"The code map of '{cmd.path}' is shown under Requested File Contents")


def _request(
    turn: Turn, path: str, start: int | None, end: int | None, code_map: bool = False
) -> None:
    """Ask for the file (or its lines, or its map) in the next prompt, once however it is
    spelled."""
    rel = PurePosixPath(path).as_posix()
    request: ReadRequest = rel
    if start is not None or end is not None or code_map:
        request = FileRange(path=rel, start_line=start, end_line=end, map=code_map)
    # One file under many spellings (`a/../big.txt`, `./big.txt`, a symlink) is one request,
    # shown once under the first spelling: otherwise each copy would fill the outbox again.
    key = (turn.workspace.relpath(path), start, end if not code_map else -1)
    if key not in turn.reads:
        turn.reads.add(key)
        turn.outcome.read_requests.append(request)
