"""Which lines of a file may hold a secret: one pass of many patterns over the raw bytes, so
that the rule table (:mod:`.rules`, Python regular expressions) runs on those lines only
(docs/secrets.md, 'Learning before the first command').

The patterns are looser than the rules (a line they miss is never looked at, a line they flag
for nothing costs a little): each rule's fixed part (``AKIA``, ``ghp_``, ``-----BEGIN``...)
and, for an assignment to a secret-looking name, the name, the sign and the first characters of
the value. They run in one pass (:mod:`.matcher`: hyperscan, at memory speed).

Two sets: for source code, the formats that are secrets wherever they stand, and an assignment
of a value of 16 or more token characters; for other text files, every rule.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from codingagent.secrecy.matcher import Ends, compile_set

# (pattern, caseless); patterns bound their repeats, so a match ends at one place.
_FORMATS: tuple[tuple[bytes, bool], ...] = (
    (rb"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", False),
    (rb"aws.{0,20}(?:key|pwd|pw|password|pass|token).{0,20}['\"][0-9a-zA-Z/+]{40}['\"]", True),
    (rb"AccountKey=[a-zA-Z0-9+/=]{8}", False),
    (rb"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.", False),
    (rb"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}|github_pat_[A-Za-z0-9_]{8}", False),
    (rb"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas)-|GR1348941", False),
    (rb"eyJ[A-Za-z0-9\-_=]{1,64}\.", False),
    (rb"[0-9a-z]{32}-us[0-9]", False),
    (rb"_authToken=", False),
    (rb"T3BlbkFJ|sk-(?:proj|svcacct|admin|ant-api|ant-admin)", False),
    (rb"pypi-AgE", False),
    (rb"SG\.[a-zA-Z0-9_-]{22}\.", False),
    (rb"xox[aboprs]-|hooks\.slack\.com/services/", True),
    (rb"sq0csp-|[rs]k_live_", False),
    (rb"\d{8}:[0-9A-Za-z_-]{35}", False),
    (rb"[AS][CK][a-z0-9]{32}", False),
    (rb"AIza[0-9A-Za-z\-_]{35}|GOCSPX-", False),
    (rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY", False),
)
# (a name's letters may be any UTF-8: contraseña)
_NAME = (
    rb"(?:key|pass|pwd|secret|token|credential|contras)[\w.\x80-\xff-]{0,64}"
    rb"[\"']?[ \t]*(?::=|=>|=|:)"
)
# A value of a source file's assignment: 16 token characters, quoted or right after the sign;
# of another file's: any 4.
_TOKEN16 = rb"[A-Za-z0-9+/=_.~-]{16}"
_SOURCE_VALUE = (_NAME + rb"(?:[ \t]*[\"']" + _TOKEN16 + rb"|" + _TOKEN16 + rb")", True)
_TEXT_VALUE = (_NAME + rb"[ \t]*(?:[\"'][^\"'\n]{4}|[^\s\"'`,;]{4})", True)
_URL_PASSWORD = (rb"://[^\s:/?#@]{1,256}:[^\s:/?#@]{1,256}@", False)
SOURCE = (*_FORMATS, _SOURCE_VALUE)
TEXT = (*_FORMATS, _TEXT_VALUE, _URL_PASSWORD)
ASSIGNMENT = len(_FORMATS)  # the index of the assignment's pattern in both
PEM = re.compile(rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY")
PEM_END = re.compile(rb"-----END [A-Z0-9 ]{0,40}PRIVATE KEY[A-Z ]*-----")
LONG_LINE = 4096  # a line longer is looked at around each match only, WINDOW bytes each side
WINDOW = 1024
MAX_EVENTS = 4096  # matches in one file past which the whole file is handed to the rules


class Region(NamedTuple):
    """A part of a file the rules must look at."""

    start: int
    end: int
    formats: bool  # a known format's pattern matched in it: its rules must run
    assignments: bool  # a secret-looking name's pattern matched: its rule must run


def regions(data: bytes, source: bool) -> list[Region]:
    """Each region of ``data`` the rules must look at, in order, not overlapping: each line a
    pattern matched, and for a private key the block up to its end."""
    matches = _matcher(source)(data)
    if matches is None:
        return [Region(0, len(data), True, True)]
    spans: list[Region] = []
    for index, end in sorted(matches, key=lambda match: match[1]):
        assignment = index == ASSIGNMENT
        if spans and end <= spans[-1].end:
            last = spans[-1]
            spans[-1] = last._replace(
                formats=last.formats or not assignment, assignments=last.assignments or assignment
            )
            continue
        start = data.rfind(b"\n", 0, end - 1) + 1
        stop = data.find(b"\n", end - 1)
        stop = len(data) if stop < 0 else stop
        if stop - start > LONG_LINE:  # a minified script: the match and around it
            start, stop = max(start, end - WINDOW), min(stop, end + WINDOW)
        if PEM.search(data, start, stop):
            closing = PEM_END.search(data, stop)
            stop = len(data) if closing is None else closing.end()
        if spans and start <= spans[-1].end:
            last = spans[-1]
            spans[-1] = Region(
                last.start,
                max(stop, last.end),
                last.formats or not assignment,
                last.assignments or assignment,
            )
        else:
            spans.append(Region(start, stop, not assignment, assignment))
    return spans


@functools.cache
def _matcher(source: bool) -> Ends:
    return compile_set(SOURCE if source else TEXT, literal=False, limit=MAX_EVENTS)
