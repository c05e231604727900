"""Known secrets in their common disguises: what a command prints when it encodes a secret
before printing it (docs/secrets.md, 'Disguises').

For each secret a session knows, :class:`Disguises` looks for it

- base64 encoded (standard and URL-safe alphabet), in all three alignments: the characters
  that depend only on the secret's own bytes, wherever in the encoded stream it starts;
- hex (lower and upper case), URL-encoded (``%2F`` and ``+`` forms, and every byte as
  ``%XX``), reversed;
- with one to four separator characters between its characters (``g h p _``, one a line,
  ``['g', 'h', ...]``), or with white space anywhere in it (``A KIA IOSF``).

The secret and its encoded forms are searched in the text with its white space taken out
(``base64`` wraps its output at 76 columns); each is an exact substring search
(``str.find``), and the separated forms are substring searches in every n-th character of
the text, so the cost grows with the number of secrets times the text's length, with no
regex backtracking.
"""

from __future__ import annotations

import base64
import bisect
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from codingagent.secrecy.rules import Found

MIN_DISGUISED = 8  # shorter secrets are not looked for in disguise: too many chance matches
_STRIDES = (2, 3, 4, 5)  # one to four separator characters between the secret's characters
_SPACE = re.compile(r"\s+")


def encodings(secret: str) -> list[tuple[str, str]]:
    """(how, text) of each encoded form of ``secret`` searched for; none equal to it."""
    data = secret.encode("utf-8", "surrogatepass")
    forms = [("base64", core) for core in _base64_cores(data, base64.b64encode)]
    forms += [("base64", core) for core in _base64_cores(data, base64.urlsafe_b64encode)]
    forms += [("hex", data.hex()), ("hex", data.hex().upper())]
    forms += [("url", quote(secret, safe="")), ("url", quote_plus(secret, safe=""))]
    forms += [("url", "".join(f"%{byte:02X}" for byte in data))]
    forms += [("reversed", secret[::-1])]
    seen = {secret}
    unique = []
    for how, form in forms:
        if form not in seen and len(form) >= MIN_DISGUISED:
            seen.add(form)
            unique.append((how, form))
    return unique


def _base64_cores(data: bytes, encode: object) -> list[str]:
    """The base64 characters that depend on ``data`` alone, for each of the three offsets at
    which it can start in an encoded stream."""
    cores = []
    for offset in range(3):
        encoded = encode(b"\0" * offset + data).decode("ascii")  # type: ignore[operator]
        first = -(-8 * offset // 6)  # the first character made of the secret's bits only
        last = 8 * (offset + len(data)) // 6  # past the last such character
        cores.append(encoded[first:last])
    return cores


class Disguises:
    """The disguised forms of a set of secrets, and where they stand in a text."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        """``secrets``: (secret, label) pairs; the short ones are left out."""
        self._encoded: list[tuple[str, str]] = []  # (form, label)
        self._plain: list[tuple[str, str]] = []  # (secret, label) for the separated forms
        for secret, label in secrets:
            if len(secret) < MIN_DISGUISED:
                continue
            self._plain.append((secret, label))
            if not _SPACE.search(secret):
                self._encoded.append((secret, f"{label}-spaced"))
            self._encoded += [(form, f"{label}-{how}") for how, form in encodings(secret)]

    def __bool__(self) -> bool:
        return bool(self._plain)

    def find(self, text: str) -> list[Found]:
        """Each disguised secret in ``text``: spans in ``text``, labels ``KIND-HOW``."""
        if not self._plain:
            return []
        return self._encoded_in(text) + self._separated_in(text)

    def _encoded_in(self, text: str) -> list[Found]:
        joined = _SPACE.sub("", text)
        breaks: list[int] | None = None  # where white space was, made on the first find
        found = []
        for form, label in self._encoded:
            at = joined.find(form)
            while at >= 0:
                if breaks is None:
                    breaks = _removed(text)
                start = _original(breaks, at)
                end = _original(breaks, at + len(form) - 1) + 1
                if end - start > len(form) or not label.endswith("-spaced"):
                    found.append(Found(start, end, label, False))  # (else: the secret itself)
                at = joined.find(form, at + len(form))
        return found

    def _separated_in(self, text: str) -> list[Found]:
        found = []
        for stride in _STRIDES:
            for phase in range(stride):
                every = text[phase::stride]
                for secret, label in self._plain:
                    at = every.find(secret)
                    while at >= 0:
                        start = phase + stride * at
                        end = phase + stride * (at + len(secret) - 1) + 1
                        found.append(Found(start, end, f"{label}-spaced", False))
                        at = every.find(secret, at + len(secret))
        return found


def _removed(text: str) -> list[int]:
    """For each character ``_SPACE`` took out of ``text``, its index in the joined text: the
    joined text's index ``i`` is ``i + bisect_right(removed, i)`` in ``text``."""
    removed = []
    taken = 0
    for each in _SPACE.finditer(text):
        for index in range(each.start(), each.end()):
            removed.append(index - taken)
            taken += 1
    return removed


def _original(removed: list[int], index: int) -> int:
    return index + bisect.bisect_right(removed, index)
