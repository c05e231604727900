"""Known secrets in disguise: what a command prints when it transforms a secret before
printing it (docs/secrets.md, 'Disguises').

For each secret a session knows, :class:`Disguises` looks for it

- base64 (standard and URL-safe alphabet) and base32, at every alignment: the characters that
  depend only on the secret's own bytes, wherever in the encoded stream it starts;
- hex, URL-encoded (``%2F`` and ``+`` forms, and every byte as ``%XX``), backslash-escaped
  (``\\x41``, ``\\101``, ``\\u0041``, ``\\/``), reversed, rot13;
- in any mix of upper and lower case (``tr a-z A-Z``), which also covers the case of the hex,
  base32, escaped, reversed and rot13 forms;
- broken by white space anywhere (``fold -w 7``, ``base64``'s and ``xxd -p``'s lines, ``sed
  's/./& /g'``), and by ``od -c``'s offset column at the start of its lines;
- with one to four separator characters between its characters (``['g', 'h', ...]``);
- in a hex dump (``xxd``, ``hexdump -C``, ``od -x``): a piece of it, in its hex across lines
  in either byte order and in the ASCII column (:mod:`.hexdumps`).

The text is searched with its white space (and ``od``'s offsets) taken out: all forms of all
secrets as literal strings in one pass (:mod:`.matcher`), base64's in their case, the others
in any case; the separated forms in one pass over every n-th character of the text. No
regular expression, no backtracking; the cost hardly grows with the number of secrets. Each
disguise is located: the span masked is the one that spells the secret, from its first
character to its last.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import re
from collections.abc import Callable, Iterable
from urllib.parse import quote, quote_plus

from codingagent.secrecy.hexdumps import HexDumps
from codingagent.secrecy.matcher import Ends, compile_set
from codingagent.secrecy.rules import Found

MIN_DISGUISED = 8  # shorter secrets are not looked for in disguise: too many chance matches
_STRIDES = (2, 3, 4, 5)  # one to four separator characters between the secret's characters
_SPACE = re.compile(r"\s+")  # what str.split() takes out
# In `od` output (its second line starts at offset 0000020), white space and, after a line
# break, the offset column (7 octal digits).
_OD_MARK = "0000020 "
_OD_GAP = re.compile(r"\s+(?:[0-7]{7}(?= ))?")


def encodings(secret: str) -> list[tuple[str, str]]:
    """(how, text) of each transformed form of ``secret`` searched for; none equal to it."""
    return _unique(secret, _case_kept(secret) + _case_folded(secret))


def _case_kept(secret: str) -> list[tuple[str, str]]:
    """The forms whose case matters: base64."""
    data = secret.encode("utf-8", "surrogatepass")
    forms = [("base64", core) for core in _cores(data, base64.b64encode, 6, 3)]
    return forms + [("base64", core) for core in _cores(data, base64.urlsafe_b64encode, 6, 3)]


def _case_folded(secret: str) -> list[tuple[str, str]]:
    """The forms looked for in any case."""
    data = secret.encode("utf-8", "surrogatepass")
    forms = [("base32", core) for core in _cores(data, base64.b32encode, 5, 5)]
    forms += [("hex", data.hex())]
    forms += [("url", quote(secret, safe="")), ("url", quote_plus(secret, safe=""))]
    forms += [("url", "".join(f"%{byte:02X}" for byte in data))]
    forms += [("escaped", "".join(f"\\x{byte:02x}" for byte in data))]
    forms += [("escaped", "".join(f"\\{byte:03o}" for byte in data))]
    forms += [("escaped", "".join(f"\\u{ord(char):04x}" for char in secret))]
    forms += [("escaped", secret.replace("/", "\\/"))]
    forms += [("reversed", secret[::-1]), ("rot13", codecs.encode(secret, "rot13"))]
    return forms


def _unique(secret: str, forms: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen = {secret}
    unique = []
    for how, form in forms:
        if form not in seen and len(form) >= MIN_DISGUISED:
            seen.add(form)
            unique.append((how, form))
    return unique


def _cores(data: bytes, encode: Callable[[bytes], bytes], bits: int, group: int) -> list[str]:
    """The characters of an encoding (``bits`` a character, ``group`` bytes a block) that
    depend on ``data`` alone, for each offset at which it can start in an encoded stream."""
    cores = []
    for offset in range(group):
        encoded = encode(b"\0" * offset + data).decode("ascii")
        first = -(-8 * offset // bits)  # the first character made of the secret's bits only
        last = 8 * (offset + len(data)) // bits  # past the last such character
        cores.append(encoded[first:last])
    return cores


class Disguises:
    """The disguised forms of a set of secrets, and where they stand in a text."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        """``secrets``: (secret, label) pairs; the short ones are left out."""
        # (form, any case, label, the secret itself or ""), searched in the joined text
        self._forms: list[tuple[str, bool, str, str]] = []
        self._plain: list[tuple[str, str]] = []  # (secret, label) for the separated forms
        for secret, label in secrets:
            if len(secret) < MIN_DISGUISED:
                continue
            self._plain.append((secret, label))
            self._forms.append((secret, True, label, secret))
            for how, form in _unique(secret, _case_kept(secret)):
                self._forms.append((form, False, f"{label}-{how}", ""))
            for how, form in _unique(secret, _case_folded(secret)):
                self._forms.append((form, True, f"{label}-{how}", ""))
        self._joined_set: Ends | None = None  # compiled on the first search
        self._plain_set: Ends | None = None
        self._dumps = HexDumps(self._plain)

    def __bool__(self) -> bool:
        return bool(self._plain)

    def find(self, text: str) -> list[Found]:
        """Each disguised secret in ``text``: spans in ``text``, labels ``KIND-HOW``."""
        if not self._plain:
            return []
        return self._joined_in(text) + self._separated_in(text) + self._dumps.find(text)

    def _joined_in(self, text: str) -> list[Found]:
        if self._joined_set is None:
            words = [(_bytes(form), caseless) for form, caseless, _, _ in self._forms]
            self._joined_set = compile_set(words, literal=True)
        gap = _OD_GAP if _OD_MARK in text else _SPACE
        joined = gap.sub("", text) if gap is _OD_GAP else "".join(text.split())
        breaks: list[int] | None = None  # where white space was, made on the first find
        found = []
        for index, start in _starts(joined, self._joined_set, [f[0] for f in self._forms]):
            form, _, label, secret = self._forms[index]
            if breaks is None:
                breaks = _removed(text, gap)
            end = _original(breaks, start + len(form) - 1) + 1
            start = _original(breaks, start)
            if not secret:
                found.append(Found(start, end, label, False))
            elif text[start:end] != secret:  # (else: the secret itself, masked anyway)
                how = "spaced" if end - start > len(form) else "case"
                found.append(Found(start, end, f"{label}-{how}", False))
        return found

    def _separated_in(self, text: str) -> list[Found]:
        if self._plain_set is None:
            self._plain_set = compile_set([(_bytes(s), False) for s, _ in self._plain], True)
        secrets = [secret for secret, _ in self._plain]
        found = []
        for stride in _STRIDES:
            for phase in range(stride):
                for index, at in _starts(text[phase::stride], self._plain_set, secrets):
                    secret, label = self._plain[index]
                    start = phase + stride * at
                    end = phase + stride * (at + len(secret) - 1) + 1
                    found.append(Found(start, end, f"{label}-spaced", False))
        return found


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _starts(text: str, words: Ends, forms: list[str]) -> list[tuple[int, int]]:
    """(index of the form, where in ``text`` it starts) of each match of ``words``."""
    data = _bytes(text)
    ascii_only = len(data) == len(text)
    starts = []
    for index, end in words(data) or ():
        start = end - len(_bytes(forms[index]))
        if not ascii_only:  # a byte offset: count the characters before it
            start = len(data[:start].decode("utf-8", "surrogatepass"))
        starts.append((index, start))
    return starts


def _removed(text: str, gap: re.Pattern[str]) -> list[int]:
    """For each character ``gap`` took out of ``text``, its index in the joined text: the
    joined text's index ``i`` is ``i + bisect_right(removed, i)`` in ``text``."""
    removed = []
    taken = 0
    for each in gap.finditer(text):
        for index in range(each.start(), each.end()):
            removed.append(index - taken)
            taken += 1
    return removed


def _original(removed: list[int], index: int) -> int:
    return index + bisect.bisect_right(removed, index)
