"""Secrets masked before a prompt is written, and put back when the LLM writes a mask to a file.

A prompt goes to a third-party chat, so the one masking step runs on the finished prompt text
(file views, command output, search hits, MESSAGE text, everything): :meth:`Masker.mask`
replaces each secret with ``[masked: aws-secret-key 1a2b3c4d]``. What counts as a secret is
:mod:`codingagent.secrecy.rules`; docs/secrets.md says all of it.

**Per session.** Each session has its own :class:`Masker` (:func:`for_session`): the secrets
it found (in files, command output, the agent's environment, the workspace's secret files)
are masked wherever else they stand in that session's later prompts, also in disguise
(:mod:`codingagent.secrecy.disguises`: base64, hex, URL-encoded, reversed, spaced out), and
never in another session's.

**Putting secrets back.** The short id in a mask is an HMAC of the secret under a key kept in
the user's state folder (``~/.local/state/codingagent/mask.key``, which sandboxed commands do
not see: homes are hidden), so the chat learns nothing about the secret from it, and the id
stays the same across runs. Which secret a mask stands for is kept in memory only, never in a
file. When the LLM writes a mask into a file (CREATE_FILE of a file it read),
:meth:`Masker.unmask` puts the secret back; a mask this process has not seen is looked up in
the file being replaced; a mask found nowhere refuses the write (the file is never written
with a mask in it).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from codingagent.folders import user_state_folder
from codingagent.secrecy import rules
from codingagent.secrecy.disguises import MIN_DISGUISED, Disguises

MASK = re.compile(r"\[masked: ([a-z0-9-]+) ([0-9a-f]{8})\]")
MARKER = rules.MARKER
MIN_REPEATED = MIN_DISGUISED  # a secret this long is masked wherever else it stands, too


class UnknownMask(Exception):
    """A mask in text being written that no secret is known for; ``str(e)`` is the mask."""


class Masked(NamedTuple):
    text: str
    kinds: Counter[str]  # how many secrets of each kind were masked (never the values)

    @property
    def total(self) -> int:
        return sum(self.kinds.values())


class Masker:
    """One session's masking: the secrets it knows, and the masks it has written."""

    def __init__(self, environment: Mapping[str, str] | None = None) -> None:
        self._masks: dict[str, str] = {}  # mask -> the text it replaced, in memory only
        self._secrets: dict[str, str] = {}  # secret -> label: masked wherever it stands
        self._disguises: Disguises | None = None  # made again when a secret is learned
        for secret, label in environment_secrets(environment or {}):
            self.learn(secret, label)

    def learn(self, secret: str, label: str) -> None:
        """Mask ``secret`` wherever it stands in later texts, also in disguise."""
        if len(secret) >= MIN_REPEATED and not secret.isalpha() and secret not in self._secrets:
            self._secrets[secret] = label
            self._disguises = None

    def mask(self, text: str) -> Masked:
        """``text`` with every secret found or known replaced by its mask."""
        found = list(rules.find(text))
        for each in found:
            self.learn(text[each.start : each.end], each.label)
        # Where spans start alike, the first named wins: a known format, then a known secret
        # (its kind learned where it was found), then a secret-looking name's value.
        known = self._disguised().find(text) + self._everywhere(text)
        spans = [f for f in found if not f.keyword] + known + [f for f in found if f.keyword]
        merged: list[rules.Found] = []  # overlapping spans joined: each is masked whole
        for each in sorted(spans, key=lambda s: (s.start, -s.end)):
            if merged and each.start < merged[-1].end:
                merged[-1] = merged[-1]._replace(end=max(merged[-1].end, each.end))
            else:
                merged.append(each)
        parts: list[str] = []
        end = 0
        for each in merged:
            parts += [
                text[end : each.start],
                self._mask_of(each.label, text[each.start : each.end]),
            ]
            end = each.end
        parts.append(text[end:])
        kinds = Counter(each.label for each in merged)
        return Masked("".join(parts), kinds)

    def unmask(self, text: str, sources: Iterable[str] = ()) -> str:
        """``text`` with each mask put back to its secret; ``sources`` (the file being
        replaced) are searched for a mask not seen yet. :class:`UnknownMask` if one is left."""
        if MARKER not in text:
            return text
        for source in sources:
            if any(found.group() not in self._masks for found in MASK.finditer(text)):
                self.mask(source)

        def secret(found: re.Match[str]) -> str:
            if found.group() not in self._masks:
                raise UnknownMask(found.group())
            return self._masks[found.group()]

        return MASK.sub(secret, text)

    def _everywhere(self, text: str) -> list[rules.Found]:
        """Every place a known secret stands in ``text`` as it is (``echo $API_KEY`` after
        a view of ``.env``)."""
        extra = []
        for secret, label in self._secrets.items():
            at = text.find(secret)
            while at >= 0:
                extra.append(rules.Found(at, at + len(secret), label, False))
                at = text.find(secret, at + len(secret))
        return extra

    def _disguised(self) -> Disguises:
        if self._disguises is None:
            self._disguises = Disguises(self._secrets.items())
        return self._disguises

    def _mask_of(self, label: str, secret: str) -> str:
        digest = hmac.new(_key(), secret.encode("utf-8", "surrogatepass"), hashlib.sha256)
        masked = f"[masked: {label} {digest.hexdigest()[:8]}]"
        self._masks[masked] = secret
        return masked


_sessions: dict[str, Masker] = {}


def for_session(session_id: str) -> Masker:
    """The masker of session ``session_id`` in this process (made on first use, knowing the
    secrets in the agent's environment)."""
    if session_id not in _sessions:
        _sessions[session_id] = Masker(os.environ)
    return _sessions[session_id]


def environment_secrets(environment: Mapping[str, str]) -> list[tuple[str, str]]:
    """(value, label) of each secret in ``environment``: the value of a secret-looking name
    (not a path, not a word), and each secret of a known format in any value."""
    return list(_secrets_of(tuple(environment.items())))


@functools.lru_cache(maxsize=8)
def _secrets_of(environment: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """:func:`environment_secrets`, looked for once a process for the same environment (each
    session's masker asks)."""
    found = []
    for name, value in environment:
        if rules.secret_name(name) and not value.startswith("/") and rules.is_value(value):
            found.append((value, rules.label_of(name)))
        found += [(value[f.start : f.end], f.label) for f in rules.find(value) if not f.keyword]
    return tuple(found)


@functools.cache
def _key() -> bytes:
    """The HMAC key of mask ids: in the user's state folder, made once; in memory only if
    that cannot be written (ids then change between runs)."""
    path = user_state_folder() / "mask.key"
    try:
        return path.read_bytes()
    except OSError:
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
    except FileExistsError:
        return path.read_bytes()
    except OSError:
        pass
    return key
