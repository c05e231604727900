"""What counts as a secret in a text: our rule table (docs/secrets.md, 'The rules').

The provider patterns are detect-secrets' (Yelp, Apache-2.0, version 1.5.0), copied into this
table rather than read from its plugins: its public scanning API runs every plugin on every
line, about 300 times slower than one pass of each pattern over the whole text
(``benchmarks/secrecy.py``), and a prompt is masked every turn. ``tests/test_secrecy.py``
checks that detect-secrets' public API finds what this table finds in a sample of each kind.

Three rules are ours: a PEM private key's body (each base64 line on its own, so line numbers
stay right), an assignment to a secret-looking name (``API_KEY=...``, ``"password": "..."``)
whose value looks like a value, not a word, an identifier or a format string, and names that
are never secrets (``PWD``, ``HOME``, ``PATH``, ...).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import NamedTuple

MARKER = "[masked: "


class Found(NamedTuple):
    start: int
    end: int
    label: str
    keyword: bool  # found by the assignment rule (a name), not by the secret's own format


# (label, pattern, the group that is the secret). detect-secrets 1.5.0's denylists.
_I = "(?i)"
PROVIDERS: tuple[tuple[str, str, int], ...] = (
    ("aws-access-key-id", r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", 0),
    (
        "aws-secret-key",
        _I + r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"]([0-9a-zA-Z/+]{40})['\"]",
        1,
    ),
    ("azure-storage-key", r"AccountKey=[a-zA-Z0-9+/=]{88}", 0),
    ("url-password", r"://[^:/?#\[\]@!$&'()*+,;=\s]+:([^:/?#\[\]@!$&'()*+,;=\s]+)@", 1),
    ("discord-token", r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}", 0),
    ("github-token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 0),
    ("github-token", r"github_pat_[A-Za-z0-9_]{50,}", 0),  # fine-grained (ours)
    ("gitlab-token", r"(?:glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
    ("gitlab-token", r"GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
    ("gitlab-token", r"glcbt-(?:[0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
    ("gitlab-token", r"glimt-[A-Za-z0-9_\-]{25}(?!\w)", 0),
    ("gitlab-token", r"glptt-[A-Za-z0-9_\-]{40}(?!\w)", 0),
    ("gitlab-token", r"glagent-[A-Za-z0-9_\-]{50,1024}(?!\w)", 0),
    ("gitlab-token", r"gloas-[A-Za-z0-9_\-]{64}(?!\w)", 0),
    ("jwt", r"eyJ[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.?[A-Za-z0-9\-_.+/=]*?", 0),
    ("mailchimp-key", r"[0-9a-z]{32}-us[0-9]{1,2}", 0),
    # (detect-secrets has `//.+/:`, which takes seconds on a minified script's long line)
    ("npm-token", r"//[^\s]{1,256}?/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*", 0),
    ("openai-key", r"sk-[A-Za-z0-9\-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", 0),
    ("openai-key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9\-_]{40,}", 0),  # ours
    ("anthropic-key", r"sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9\-_]{40,}", 0),  # ours
    ("google-api-key", r"AIza[0-9A-Za-z\-_]{35}", 0),  # ours
    ("google-oauth-secret", r"GOCSPX-[0-9A-Za-z\-_]{28}", 0),  # ours
    ("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9\-_]{70,}", 0),
    ("pypi-token", r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9\-_]{70,}", 0),
    ("sendgrid-key", r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}", 0),
    ("slack-token", _I + r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+", 0),
    (
        "slack-token",
        _I + r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
        0,
    ),
    ("square-secret", r"sq0csp-[0-9A-Za-z\\\-_]{43}", 0),
    ("stripe-key", r"(?:r|s)k_live_[0-9a-zA-Z]{24,}", 0),
    ("telegram-token", r"\d{8,10}:[0-9A-Za-z_-]{35}", 0),
    ("twilio-key", r"AC[a-z0-9]{32}", 0),
    ("twilio-key", r"SK[a-z0-9]{32}", 0),
)
# detect-secrets' keyword list, plus token and credential.
SECRET_NAMES = re.compile(
    r"api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key"
    r"|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret"
    r"|contraseña|contrasena|token|credential",
    re.IGNORECASE,
)
# Names a secret-looking word may be part of that never hold one (the shell's own variables).
NEVER_SECRET_NAMES = frozenset(
    {
        *("PWD", "OLDPWD", "HOME", "PATH", "SHELL", "USER", "LOGNAME", "HOSTNAME", "TERM"),
        *("LANG", "TMPDIR", "PS1", "PS2", "PS4", "IFS", "MAIL", "SHLVL", "XAUTHORITY"),
        *("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KRB5CCNAME", "PWD_FILE", "PASSWORD_FILE"),
    }
)

_COMPILED = [(label, re.compile(pattern), group) for label, pattern, group in PROVIDERS]
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
# A plain word, an identifier, a phrase: letters joined by single separators, no digits.
_WORDS = re.compile(r"[A-Za-z_]+(?:[ .:/-][A-Za-z_]+)*[.:]?")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_SPACED = re.compile(r"[ \t]")
_SHORT_LINE = 400
_EXAMPLE = re.compile(r"(?i)(?:password|passwd|secret|token)[\W_]?\d{0,4}")
# A random-looking value: 16 or more characters of a token's alphabet, of two or more of
# lower case, upper case and digits, not a path, not words and numbers joined by separators.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.~-]{16,}")
_PATH_LIKE = re.compile(r"^[./~]|\.[A-Za-z]{1,4}$|//")
_SEGMENT = re.compile(r"[^_./-]+")
_WORDISH = re.compile(r"[A-Z]?[a-z]+|[A-Z]+|\d+")
_MIN_ENTROPY = 3.0  # bits a character: random base62 of 16 characters has about 3.6
_CASE_CHANGE = re.compile(r"[a-z][A-Z]")
_WORDY_CASE_CHANGES = 3  # publicKeyTokenValue has 3; random letters have many more


def find(text: str) -> Iterator[Found]:
    """Each secret in ``text``; spans may overlap."""
    return look(text, strict=False)


def high_confidence(text: str) -> Iterator[Found]:
    """The secrets in ``text`` that are secrets wherever they stand, source code included: a
    known format (not a password in a URL), a private key, or a random-looking value (not a
    word, an identifier or a path) quoted or written without spaces after a secret-looking
    name (docs/secrets.md)."""
    return look(text, strict=True)


def redacted(text: str) -> str:
    """``text`` with each :func:`high_confidence` secret replaced by ``[masked: <kind>]``: for
    what is kept on disk from source code (the code map's cache), where no session's masks
    apply and a secret must not be written in plain text (docs/secrets.md)."""
    spans = sorted(high_confidence(text))
    if not spans:
        return text
    out: list[str] = []
    end = 0
    for each in spans:
        if each.start < end:  # inside (or overlapping) a span already masked
            end = max(end, each.end)
            continue
        out += [text[end : each.start], f"{MARKER}{each.label}]"]
        end = each.end
    out.append(text[end:])
    return "".join(out)


def look(
    text: str, strict: bool, formats: bool = True, assignments: bool = True
) -> Iterator[Found]:
    """:func:`high_confidence` if ``strict``, else :func:`find`; the rules of known formats
    only if ``formats``, the rule of secret-looking names only if ``assignments``."""
    if formats:
        yield from _formats(text, strict)
    if assignments:
        yield from _assignments(text, strict)


def _formats(text: str, strict: bool) -> Iterator[Found]:
    for block in _PEM.finditer(text):
        for line in _PEM_LINE.finditer(block.group(1)):
            yield Found(
                block.start(1) + line.start(), block.start(1) + line.end(), "private-key", False
            )
    for label, pattern, group in _COMPILED:
        if strict and label == "url-password":
            continue
        for found in pattern.finditer(text):
            value = found.group(group)
            if not value or MARKER in value:
                continue
            if label == "url-password" and not is_value(value):
                continue  # http://user:pass@host in a test or a doc
            yield Found(found.start(group), found.end(group), label, False)


def _assignments(text: str, strict: bool) -> Iterator[Found]:
    one_line = len(text) <= _SHORT_LINE and "\n" not in text  # (a line the prefilter flagged)
    for start, end in [(0, len(text))] if one_line else _lines_naming_secrets(text):
        for found in _ASSIGNMENT.finditer(text, start, end):
            kind = "quoted" if found.group("quoted") is not None else "bare"
            name = found.group("name")
            if not secret_name(name) or not _assigned_value(found, kind):
                continue
            if strict and not random_looking(found.group(kind)):
                continue
            if (
                strict
                and kind == "bare"
                and _SPACED.search(text, found.end("name"), found.start(kind))
            ):
                continue  # `password = other.thing` in code
            yield Found(found.start(kind), found.end(kind), label_of(name), True)


def secret_name(name: str) -> bool:
    """Whether a variable or key named ``name`` holds a secret."""
    return name.upper() not in NEVER_SECRET_NAMES and SECRET_NAMES.search(name) is not None


def is_value(text: str) -> bool:
    """Whether ``text``, assigned to a secret-looking name, can be a secret: not empty, not a
    plain word or identifier (``"name"``, ``password_field``), not a format string or a
    placeholder (``{password}``, ``%s``, ``$TOKEN``, ``<token>``, ``****``)."""
    text = text.strip()
    if not _ALNUM.search(text) or MARKER in text or _NOT_A_VALUE.search(text):
        return False  # (no letter or digit: '****/**/**', a mask of a secret)
    if _EXAMPLE.fullmatch(text):
        return False  # password='password1' in a doc or a test
    if _WORDS.fullmatch(text):
        return len(_CASE_CHANGE.findall(text)) > _WORDY_CASE_CHANGES
    return True


def label_of(name: str) -> str:
    """The kind of secret a name holds, for its mask."""
    name = name.lower()
    if "aws" in name and "secret" in name:
        return "aws-secret-key"
    if any(word in name for word in ("pass", "pwd", "contras")):
        return "password"
    if "token" in name:
        return "token"
    return "api-key" if "key" in name else "secret"


def _assigned_value(found: re.Match[str], kind: str) -> bool:
    text = found.group(kind)
    # `password = other_variable` in code; `PASSWORD=hunter22` in a .env file is a value.
    if kind == "bare" and found.group("space") and _CODE.fullmatch(text):
        return False
    return is_value(text)


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


def random_looking(value: str) -> bool:
    """Whether ``value`` looks made by a machine, not typed by a person (docs/secrets.md)."""
    if not _TOKEN.fullmatch(value) or _PATH_LIKE.search(value):
        return False
    classes = sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit))
    if classes < 2:
        return False
    if all(_WORDISH.fullmatch(part) for part in _SEGMENT.findall(value)):
        return False  # MY_SECRET_KEY_2, app.settings.v2, Bearer-Token-2024
    counts = Counter(value)
    total = len(value)
    entropy = -sum(n / total * math.log2(n / total) for n in counts.values())
    return entropy >= _MIN_ENTROPY
