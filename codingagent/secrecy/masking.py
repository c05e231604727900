"""Secrets masked before a prompt is written, and put back when the LLM writes a mask to a file.

A prompt goes to a third-party chat, so the one masking step runs on the finished prompt text
(file views, command output, search hits, MESSAGE text, everything): :func:`mask` replaces
each secret with ``[masked: aws-secret-key 1a2b3c4d]``.

**The rules.** The provider patterns are detect-secrets' (Yelp; its plugin classes keep the
patterns of AWS, Azure, GitHub, GitLab, Slack, Stripe, OpenAI, PyPI, npm, SendGrid, Twilio,
Discord, Telegram, Mailchimp, Square keys, JWTs and passwords in URLs up to date): we use their
compiled ``denylist`` patterns, but run each once over the whole text instead of through
detect-secrets' per-line scanner, which takes about 11 s for a 1 MB file (our way: tens of ms,
see ``benchmarks``). Its entropy plugins are not used: without its file-type filters they flag
most identifiers. Two rules are ours: a PEM private key's body (each base64 line masked on its
own, so line numbers stay right) and assignments to secret-looking names (detect-secrets'
keyword list plus ``token`` and ``credential``: ``API_KEY=...``, ``"password": "..."``).

**Putting secrets back.** The short id in a mask is an HMAC of the secret under a key kept in
the user's state folder (``~/.local/state/codingagent/mask.key``, which sandboxed commands do
not see: homes are hidden), so the chat learns nothing about the secret from it, and the id
stays the same across runs. Which secret a mask stands for is kept in memory only, never in a
file. When the LLM writes a mask into a file (CREATE_FILE of a file it read), :func:`unmask`
puts the secret back; a mask this process has not seen is looked up in the file being
replaced; a mask found nowhere refuses the write (the file is never written with a mask in it).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

MASK = re.compile(r"\[masked: ([a-z0-9-]+) ([0-9a-f]{8})\]")
MARKER = "[masked: "
MIN_REPEATED = 12  # a secret this long is masked wherever else it stands, too

# These mask only their group: the password in a URL, the key in `aws_secret = '...'`.
_GROUP_ONLY = frozenset({"aws-secret-key", "url-password"})

_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY"
    r"(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PEM_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}")
_STEMS = ("key", "pass", "pwd", "secret", "token", "credential", "contras")  # in every name
_ASSIGNMENT = re.compile(
    r"(?<![\w.-])(?P<name>[\w.-]+)[\"']?(?P<space>[ \t]*)(?::=|=>|=|:)[ \t]*"
    r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]{4,}?)(?P=q)|(?P<bare>[^\s\"'`,;]{4,}))"
)
_CODE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")  # a variable, not a value
_NOT_A_VALUE = re.compile(r"[()\[\]{}$<>%]|^\d+(?:\.\d+)?$|^\*+$|^(?:true|false|none|null)$", re.I)

_known: dict[str, str] = {}  # mask -> secret, in memory only


@functools.cache
def _rules() -> tuple[list[tuple[str, re.Pattern[str]]], re.Pattern[str]]:
    """detect-secrets' provider patterns with our labels, and the secret-looking names.
    Imported on first use: the package takes ~0.1 s to import."""
    from detect_secrets.plugins import (
        aws,
        azure_storage_key,
        basic_auth,
        discord,
        github_token,
        gitlab_token,
        jwt,
        keyword,
        mailchimp,
        npm,
        openai,
        pypi_token,
        sendgrid,
        slack,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    providers = (
        (azure_storage_key.AzureStorageKeyDetector, "azure-storage-key"),
        (basic_auth.BasicAuthDetector, "url-password"),
        (discord.DiscordBotTokenDetector, "discord-token"),
        (github_token.GitHubTokenDetector, "github-token"),
        (gitlab_token.GitLabTokenDetector, "gitlab-token"),
        (jwt.JwtTokenDetector, "jwt"),
        (mailchimp.MailchimpDetector, "mailchimp-key"),
        (npm.NpmDetector, "npm-token"),
        (openai.OpenAIDetector, "openai-key"),
        (pypi_token.PypiTokenDetector, "pypi-token"),
        (sendgrid.SendGridDetector, "sendgrid-key"),
        (slack.SlackDetector, "slack-token"),
        (square_oauth.SquareOAuthDetector, "square-secret"),
        (stripe.StripeDetector, "stripe-key"),
        (telegram_token.TelegramBotTokenDetector, "telegram-token"),
        (twilio.TwilioKeyDetector, "twilio-key"),
    )
    access_key_id, secret_access_key = aws.AWSKeyDetector().denylist
    rules = [("aws-access-key-id", access_key_id), ("aws-secret-key", secret_access_key)]
    rules += [(label, pattern) for plugin, label in providers for pattern in plugin().denylist]
    names = re.compile("|".join([*keyword.DENYLIST, "token", "credential"]), re.IGNORECASE)
    return rules, names


class UnknownMask(Exception):
    """A mask in text being written that no secret is known for; ``str(e)`` is the mask."""


def mask(text: str) -> tuple[str, int]:
    """``text`` with every secret found replaced by its mask, and how many were replaced."""
    spans = sorted(_everywhere(text, list(_find(text))), key=lambda s: (s[0], -s[1]))
    parts: list[str] = []
    end = count = 0
    for start, stop, label in spans:
        if start < end:
            continue  # overlaps a secret masked already
        secret = text[start:stop]
        parts += [text[end:start], _mask_of(label, secret)]
        end = stop
        count += 1
    parts.append(text[end:])
    return "".join(parts), count


def unmask(text: str, sources: Iterable[str] = ()) -> str:
    """``text`` with each mask put back to its secret; ``sources`` (the file being replaced)
    are searched for a mask this process has not seen. :class:`UnknownMask` if one is left."""
    if MARKER not in text:
        return text
    for source in sources:
        if any(found.group() not in _known for found in MASK.finditer(text)):
            mask(source)

    def secret(found: re.Match[str]) -> str:
        if found.group() not in _known:
            raise UnknownMask(found.group())
        return _known[found.group()]

    return MASK.sub(secret, text)


def _everywhere(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` and every other place a secret found there, or masked before in this
    process, stands in ``text`` on its own (``echo $API_KEY`` after a view of ``.env``)."""
    labels = {text[start:end]: label for start, end, label in spans}
    for masked, secret in _known.items():
        labels.setdefault(secret, MASK.fullmatch(masked).group(1))  # type: ignore[union-attr]
    extra = []
    for secret, label in labels.items():
        if len(secret) < MIN_REPEATED or secret.isalpha():  # "password": a word, not a key
            continue
        at = text.find(secret)
        while at >= 0:
            extra.append((at, at + len(secret), label))
            at = text.find(secret, at + len(secret))
    return spans + extra


def _find(text: str) -> Iterable[tuple[int, int, str]]:
    """(start, end, label) of each secret in ``text``; spans may overlap."""
    for block in _PEM.finditer(text):
        for line in _PEM_LINE.finditer(block.group(1)):
            yield block.start(1) + line.start(), block.start(1) + line.end(), "private-key"
    rules, names = _rules()
    for label, pattern in rules:
        group = 1 if label in _GROUP_ONLY else 0
        for found in pattern.finditer(text):
            if found.group(group) and MARKER not in found.group(group):
                yield found.start(group), found.end(group), label
    for start, end in _lines_naming_secrets(text):
        for found in _ASSIGNMENT.finditer(text, start, end):
            value = "quoted" if found.group("quoted") is not None else "bare"
            if names.search(found.group("name")) and _is_secret_value(found, value):
                yield found.start(value), found.end(value), _label(found.group("name"))


def _lines_naming_secrets(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line with a secret-looking word in it: the assignment rule runs
    on those only (``str.find`` is many times faster than a regex over every line)."""
    folded = text.lower()
    if len(folded) != len(text):  # a character whose lower case is longer: no str.find
        return [(0, len(text))]
    starts: set[int] = set()
    for stem in _STEMS:
        at = folded.find(stem)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            starts.add(start)
            end = text.find("\n", at)
            at = folded.find(stem, len(text) if end < 0 else end)
    return [(start, _line_end(text, start)) for start in sorted(starts)]


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _is_secret_value(found: re.Match[str], value: str) -> bool:
    text = found.group(value)
    if MARKER in text or _NOT_A_VALUE.search(text):
        return False
    # `password = other_variable` in code; `PASSWORD=hunter22` in a .env file is a value.
    return not (value == "bare" and found.group("space") and _CODE.fullmatch(text))


def _label(name: str) -> str:
    name = name.lower()
    if "aws" in name and "secret" in name:
        return "aws-secret-key"
    if any(word in name for word in ("pass", "pwd", "contras")):
        return "password"
    if "token" in name:
        return "token"
    return "api-key" if "key" in name else "secret"


def _mask_of(label: str, secret: str) -> str:
    digest = hmac.new(_key(), secret.encode("utf-8", "surrogatepass"), hashlib.sha256)
    masked = f"[masked: {label} {digest.hexdigest()[:8]}]"
    _known[masked] = secret
    return masked


@functools.cache
def _key() -> bytes:
    """The HMAC key of mask ids: in the user's state folder, made once; in memory only if
    that cannot be written (ids then change between runs)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    path = Path(base) / "codingagent" / "mask.key"
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
