"""Known secrets in hex dumps: ``xxd``, ``hexdump -C``, ``od -x`` and their kin
(docs/secrets.md, 'Disguises').

A hex dump shows a file's bytes twice over: as hex, in groups of one to eight bytes a few
groups a line, written in the file's order (``xxd``, ``hexdump -C``, ``od -tx1``) or each
group byte-swapped (``od -x``, ``hexdump``, ``xxd -e``: little-endian words), and often again
as an ASCII column (``xxd``, ``hexdump -C``, ``od -tx1z``) showing 16 characters a line. A
secret runs across the lines of both. So the lines of a dump are found (one pass of hyperscan
tells whether a text holds one at all: on a text without, that pass is all it costs), the hex of
each run of dump lines is decoded across the lines in both byte orders, and each run of
:data:`PIECE` or more bytes that is a piece of a known secret (a truncated dump shows a part
of it) is masked: its hex from the first digit to the last (the offsets and ASCII columns
between included), and its characters in the ASCII column of each line it touches.

A dump line: an optional offset column (hex or octal digits, with ``xxd``'s colon), groups
of hex digits of one width separated by one or two spaces (the last may be shorter: ``xxd``
at an odd end), and the rest of the line, which is taken for an ASCII column where it spells
the line's bytes (``|...|``, ``>...<``, or the line's last characters). A line of hex digits
alone (``xxd -p``) is a dump line with one group; so is each byte of a line of ``xxd -i``'s C
array (``0x22, 0x73,``).

A dump longer than ``max_output`` is cut by the runner, which keeps its head and its tail
around ``[... N characters cut ...]``: the line after that mark is read for what is left of
it, the line before it as cut at its end, and the ASCII columns of a block and of the lines
around it are also read across lines as text (a column cut short, then the next line's).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

from codingagent.secrecy.matcher import Ends, compile_set
from codingagent.secrecy.rules import Found

PIECE = 10  # a run of this many bytes of a known secret in a dump is masked
_HEX = rb"[0-9A-Fa-f]"
# A line that may start a dump (hyperscan's pass; `^` is the start of the text): four groups
# of one to eight bytes, or an offset and two of four or eight bytes (`od -tx8`), or 20 hex
# digits in a row (`xxd -p`), or four bytes of a C array (`xxd -i`).
_GROUP = rb"(?:" + _HEX + rb"{2}){1,8}"
_DUMP_START = (
    rb"(?:^|\n)[ \t]*(?:"
    rb"(?:" + _HEX + rb"{4,16}:?[ \t]+)?" + _GROUP + rb"(?: {1,2}" + _GROUP + rb"){3}"
    rb"|" + _HEX + rb"{4,16}:?[ \t]+(?:" + _HEX + rb"{8}){1,2} (?:" + _HEX + rb"{8}){1,2}"
    rb"|" + _HEX + rb"{20}"
    rb"|0[xX]" + _HEX + rb"{2}, ?0[xX]" + _HEX + rb"{2}, ?0[xX]" + _HEX + rb"{2}, ?0[xX])"
)
_MAX_STARTS = 100_000  # past this many matches, every line is tried
_MAX_TAKEN = 8  # groups an ASCII column may be mistaken for, at most
# A line of `xxd -i` (a C array): bytes as 0x22, commas between.
_C_ROW = re.compile(rb"[ \t]*0[xX]" + _HEX + rb"{2}(?:, ?0[xX]" + _HEX + rb"{2})*,?[ \t]*(?:\n|$)")
_C_BYTE = re.compile(rb"0[xX](" + _HEX + rb"{2})")
_TOKEN = re.compile(_HEX + rb"+")
_WORD = re.compile(rb"[ \t]*[^ \t\n]+")
# The mark the runner leaves where it cut a long output's middle (sandbox/process.py).
_CUT = re.compile(rb"\[\.\.\. [0-9,]+ characters cut \.\.\.\]")
_CUT_LINE = re.compile(rb"[ \t]*" + _CUT.pattern)
# A dump line: indent, an offset (taken for one only when it is not a group: below), groups.
_ROW = re.compile(
    rb"[ \t]*(?:(" + _HEX + rb"{1,16})(:?)[ \t]+)?"
    rb"(" + _HEX + rb"{2,}(?= |\n|$)(?: {1,2}" + _HEX + rb"{2,}(?= |\n|$))*)"
)
# What the ASCII column shows of each byte.
_SHOWN = bytes(byte if 0x20 <= byte < 0x7F else 0x2E for byte in range(256))


class Row(NamedTuple):
    """One dump line: where its groups start in the text, and what it holds."""

    groups: list[int]  # where each group of hex digits starts
    widths: list[int]  # how many bytes each holds
    written: bytes  # its bytes in the order written
    swapped: bytes  # each group's bytes reversed
    ascii: int  # where its ASCII column starts, -1 without one
    stop: int  # where the line ends


class Run(NamedTuple):
    start: int  # in the joined bytes of a block
    end: int
    label: str


class HexDumps:
    """Where pieces of a set of known secrets stand in the hex dumps of a text."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        """``secrets``: (secret, label) pairs."""
        self._secrets = list(secrets)
        self._pieces: list[tuple[bytes, str]] = []  # made, and compiled, on the first dump
        self._set: Ends | None = None

    def find(self, text: str) -> list[Found]:
        """Each piece of a known secret in a hex dump in ``text``: spans in ``text``."""
        if not self._secrets:
            return []
        data = text.encode("utf-8", "surrogatepass")
        starts = _starts()(data)
        if starts == []:
            return []
        lines = _line_starts(data, starts)
        spans: list[tuple[int, int, str]] = []
        for mark in _CUT.finditer(data):  # the line after the runner's mark is cut at its start
            start = data.rfind(b"\n", 0, max(0, data.rfind(b"\n", 0, mark.start()))) + 1
            after = data.find(b"\n", mark.end()) + 1
            if after:
                lines.append(after)
                spans += self._literal(data, start, _end(data, after))
        done = -1  # lines of a block already read are not read again
        for line in sorted(set(lines)):
            if line <= done:
                continue
            previous = done
            rows, done = _block(data, line)
            before = data.rfind(b"\n", 0, max(0, line - 1)) + 1
            if rows and previous < before < line:  # a line cut at its start: hyperscan's
                cut = _row(data, before, line - 1, True)  # pass leaves it out
                if cut is not None:
                    rows, line = [cut, *rows], before
            if rows:  # and the line on each side of it
                start = data.rfind(b"\n", 0, max(0, line - 1)) + 1
                end = _end(data, rows[-1].stop + 1)
                spans += self._in_block(rows) + self._literal(data, line, end)
                spans += self._columns(data, start, end)
        return _in_characters(text, data, spans)

    def _columns(self, data: bytes, start: int, stop: int) -> list[tuple[int, int, str]]:
        """Pieces of known secrets in the ASCII columns of the lines in ``data[start:stop]``
        read across the lines (a column cut by the runner at the end of one line, and the
        column of the next)."""
        parts: list[bytes] = []
        bases = [0]  # where each line's column starts in the joined columns
        firsts = []  # and in the text
        line = start
        while line <= stop:
            end = _end(data, line)
            first, last = _column(data, line, end)
            parts.append(data[first:last])
            bases.append(bases[-1] + last - first)
            firsts.append(first)
            line = end + 1
        spans = []
        for run in self._runs(b"".join(parts)):
            part = bisect.bisect_right(bases, run.start) - 1
            while part < len(firsts) and bases[part] < run.end:  # one span a line
                begin = max(run.start, bases[part]) - bases[part] + firsts[part]
                end = min(run.end, bases[part + 1]) - bases[part] + firsts[part]
                if begin < end:
                    spans.append((begin, end, f"{run.label}-hexdump"))
                part += 1
        return spans

    def _literal(self, data: bytes, start: int, stop: int) -> list[tuple[int, int, str]]:
        """Pieces of known secrets as they are in ``data[start:stop]``: an ASCII column,
        whole or cut where the output was (``[... 900 characters cut ...]``)."""
        return [
            (start + run.start, start + run.end, f"{run.label}-hexdump")
            for run in self._runs(data[start:stop])
        ]

    def _in_block(self, rows: list[Row]) -> list[tuple[int, int, str]]:
        if sum(len(row.written) for row in rows) < min(PIECE, *(len(s) for s, _ in self._secrets)):
            return []
        bases = [0]
        for row in rows:
            bases.append(bases[-1] + len(row.written))
        spans = []
        for swapped in (False, True):
            joined = b"".join(row.swapped if swapped else row.written for row in rows)
            if swapped and joined == b"".join(row.written for row in rows):
                continue  # one byte a group: one order
            for run in self._runs(joined):
                spans += _spans(rows, bases, run, swapped)
        return spans

    def _runs(self, joined: bytes) -> list[Run]:
        """The runs of ``joined`` made of overlapping pieces of known secrets."""
        if self._set is None:
            self._pieces = _pieces(self._secrets)
            self._set = compile_set([(piece, False) for piece, _ in self._pieces], True)
        hits = sorted(
            (end - len(self._pieces[index][0]), end, self._pieces[index][1])
            for index, end in self._set(joined) or ()
        )
        runs: list[Run] = []
        for start, end, label in hits:
            if runs and start <= runs[-1].end:
                runs[-1] = runs[-1]._replace(end=max(end, runs[-1].end))
            else:
                runs.append(Run(start, end, label))
        return runs


def _pieces(secrets: list[tuple[str, str]]) -> list[tuple[bytes, str]]:
    """Each piece of :data:`PIECE` bytes of each secret (a shorter secret whole), once."""
    pieces: dict[bytes, str] = {}
    for secret, label in secrets:
        data = secret.encode("utf-8", "surrogatepass")
        for at in range(max(1, len(data) - PIECE + 1)):
            pieces.setdefault(data[at : at + PIECE], label)
    return list(pieces.items())


@functools.cache
def _starts() -> Ends:
    return compile_set([(_DUMP_START, False)], literal=False, limit=_MAX_STARTS)


def _line_starts(data: bytes, ends: list[tuple[int, int]] | None) -> list[int]:
    """The start of each line a match of :data:`_DUMP_START` ends on (of every line, where
    there were too many matches to count)."""
    if ends is None:
        return [0] + [m.end() for m in re.finditer(rb"\n", data)]
    return sorted({data.rfind(b"\n", 0, end) + 1 for _, end in ends})


def _end(data: bytes, line: int) -> int:
    """Where the line starting at ``line`` ends."""
    end = data.find(b"\n", line)
    return len(data) if end < 0 else end


def _column(data: bytes, line: int, end: int) -> tuple[int, int]:
    """Where a dump line's ASCII column stands: after ``  |`` or ``  >`` (before the closing
    one), or after the first two spaces that follow its first word (``xxd``), or, without
    those, the whole line (the column of a line the runner cut: ``...0001000|``)."""
    for opening in (b"  |", b"  >"):
        at = data.find(opening, line, end)
        if at >= 0:
            return at + 3, end - (data[end - 1 : end] in (b"|", b"<"))
    word = _WORD.match(data, line, end)
    if word is None:
        return end, end
    at = data.find(b"  ", word.end(), end)
    if at >= 0:
        return at + 2, end
    first = word.end() - len(word.group().lstrip())
    first += data[first : first + 1] in (b"|", b">")
    return first, max(first, end - (data[end - 1 : end] in (b"|", b"<")))


def _block(data: bytes, line: int) -> tuple[list[Row], int]:
    """The dump lines from ``line`` on, and the start of the last one read."""
    rows: list[Row] = []
    last = line
    while line < len(data):
        stop = data.find(b"\n", line)
        stop = len(data) if stop < 0 else stop
        row = _row(data, line, stop, not rows)
        if row is None:
            break
        rows.append(row)
        last, line = line, stop + 1
    return rows, last


def _row(data: bytes, line: int, stop: int, first: bool) -> Row | None:
    """The dump line from ``line`` to ``stop``, or None; ``first`` of its block (a line cut
    by the runner, which keeps an output's head and tail, may be the first, cut at its start,
    or the last before the runner's mark, cut at its end: a group cut short is read for the
    digits it has)."""
    found = _ROW.match(data, line, stop)
    if found is None and first:  # what is left of an offset column, cut: after it
        junk = _WORD.match(data, line, stop)
        found = None if junk is None else _ROW.match(data, junk.end(), stop)
    if found is None:
        if _C_ROW.match(data, line, stop) is None:
            return None
        tokens = [byte.span(1) for byte in _C_BYTE.finditer(data, line, stop)]
        return _made(data, tokens, stop, spaced=False)
    area = found.start(3)
    tokens = [token.span() for token in _TOKEN.finditer(data, area, found.end(3))]
    offset, colon = found.group(1), found.group(2)
    width = tokens[0][1] - tokens[0][0]
    if offset is not None and not colon and (len(offset) == width or len(offset) < 4):
        tokens.insert(0, found.span(1))  # a group (or what is left of one), not an offset
    elif (
        offset is None and len(tokens) == 1 and width < 16 and first and not _after_cut(data, line)
    ):
        return None  # one short group alone, not where the runner cut: not a dump
    if len(tokens) == 1 and width % 2:  # `xxd -p`'s line, cut: before the mark, at its end
        start, end = tokens[0]
        cut_at_end = _CUT_LINE.match(data, stop + 1) is not None
        tokens = [(start, end - 1) if cut_at_end else (start + 1, end)]
        width -= 1
    elif len(tokens) > 1 and tokens[0][1] - tokens[0][0] < tokens[1][1] - tokens[1][0]:
        width = tokens[1][1] - tokens[1][0]
        start, end = tokens[0]  # the end of a group: its last whole bytes
        tokens[0] = (end - (end - start) // 2 * 2, end)
        if tokens[0][0] == end:
            del tokens[0]
    else:
        width = tokens[0][1] - tokens[0][0]
    if width % 2:
        return None
    kept = 0
    for index, (start, end) in enumerate(tokens):
        kept += 1
        if end - start != width and not (index == 0 and end - start < width):
            # shorter: the last group; another width: the ASCII column
            if end - start > width or (end - start) % 2:
                kept -= 1
            break
    tokens = tokens[:kept]
    if not tokens:
        return None
    row = _made(data, tokens, stop)
    if row.ascii < 0 and tokens[-1][1] < stop:
        # The ASCII column may start with what looks like groups (`xxd`: "  cafe babe"):
        # fewer groups, where the rest then spells their bytes from the first group left out.
        for kept in range(len(tokens) - 1, max(0, len(tokens) - _MAX_TAKEN), -1):
            shorter = _made(data, tokens[:kept], stop)
            if shorter.ascii == tokens[kept][0]:
                return shorter
    return row


def _after_cut(data: bytes, line: int) -> bool:
    """Whether the line before ``line`` is the runner's mark."""
    return _CUT_LINE.match(data, data.rfind(b"\n", 0, max(0, line - 1)) + 1) is not None


def _made(data: bytes, tokens: list[tuple[int, int]], stop: int, spaced: bool = True) -> Row:
    """The row of ``tokens``, groups of hex digits with only spaces between them if
    ``spaced`` (else ``xxd -i``'s bytes)."""
    widths = [(end - start) // 2 for start, end in tokens]
    after = tokens[-1][1]
    if spaced:  # bytes.fromhex skips the spaces
        written = bytes.fromhex(data[tokens[0][0] : after].decode())
    else:
        written = bytes.fromhex(b"".join(data[start:end] for start, end in tokens).decode())
    swapped = _swapped(written, widths)
    ascii = _ascii(data, after, stop, written, swapped)
    return Row([start for start, _ in tokens], widths, written, swapped, ascii, stop)


def _swapped(written: bytes, widths: list[int]) -> bytes:
    """Each group of two to eight bytes reversed (a little-endian word); a longer group is a
    run of bytes."""
    if max(widths) < 2 or min(widths) > 8:
        return written
    if min(widths) == max(widths):  # all of one width: a slice a byte of the word
        width = widths[0]
        swapped = bytearray(len(written))
        for at in range(width):
            swapped[at::width] = written[width - 1 - at :: width]
        return bytes(swapped)
    groups, at = [], 0
    for size in widths:
        group = written[at : at + size]
        groups.append(group[::-1] if size <= 8 else group)
        at += size
    return b"".join(groups)


def _ascii(data: bytes, after: int, stop: int, written: bytes, swapped: bytes) -> int:
    """Where the ASCII column of a line's bytes starts after its groups, or -1 (its end may
    be cut: a line's trailing spaces taken off)."""
    rest = data[after:stop]
    size = len(written)
    shown = {written.translate(_SHOWN), swapped.translate(_SHOWN)}
    inner = rest.strip(b" ")
    if len(inner) == size + 2 and inner[:1] + inner[-1:] in (b"||", b"><"):
        at = after + rest.index(inner) + 1
        return at if data[at : at + size] in shown else -1
    for each in (form for whole in shown for form in (whole, whole.rstrip(b" "))):
        if each and len(rest) > len(each) and rest[:1] == b" " and rest.endswith(each):
            return stop - len(each)
    for each in shown:  # `xxd -e`: a last group set apart, its characters after the column
        at = rest.rfind(b" " + each) + 1
        if at > 0 and len(rest) - at - size <= _MAX_TAKEN:
            return after + at
    return -1


def _spans(
    rows: list[Row], bases: list[int], run: Run, swapped: bool
) -> list[tuple[int, int, str]]:
    """The spans in the text (byte offsets) of ``run``: its hex and its ASCII columns."""
    first = bisect.bisect_right(bases, run.start) - 1
    last = bisect.bisect_right(bases, run.end - 1) - 1
    places = [
        _place(rows[line], at - bases[line], swapped)
        for at in range(run.start, run.end)
        for line in [bisect.bisect_right(bases, at) - 1]
    ]
    spans = [(min(places), max(places) + 2, f"{run.label}-hexdump")]
    for line in range(first, last + 1):
        row = rows[line]
        if row.ascii >= 0:
            start = max(run.start, bases[line]) - bases[line]
            end = min(run.end, bases[line + 1]) - bases[line]
            start, end = row.ascii + start, min(row.ascii + end, row.stop)
            if start < end:
                spans.append((start, end, f"{run.label}-hexdump"))
    return spans


def _place(row: Row, at: int, swapped: bool) -> int:
    """Where the two hex digits of the line's byte ``at`` start."""
    group = 0
    while at >= row.widths[group]:
        at -= row.widths[group]
        group += 1
    if swapped:
        at = row.widths[group] - 1 - at
    return row.groups[group] + 2 * at


def _in_characters(text: str, data: bytes, spans: list[tuple[int, int, str]]) -> list[Found]:
    """``spans`` (byte offsets in ``data``, the UTF-8 of ``text``) as :class:`Found`\\ s."""
    if len(data) == len(text):
        return [Found(start, end, label, False) for start, end, label in spans]
    bounds = sorted({at for start, end, _ in spans for at in (start, end)})
    chars, count, previous = {}, 0, 0
    for at in bounds:
        count += len(data[previous:at].decode("utf-8", "surrogatepass"))
        chars[at], previous = count, at
    return [Found(chars[start], chars[end], label, False) for start, end, label in spans]
