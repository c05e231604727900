"""Which definitions a task's words point at (docs/prompts.md, "The code the task points
at"): each definition scored against the words of a task, as a search engine scores pages.
Pure: words in, scores out.

A task's words and a definition's are split the same way: identifiers into their parts
(``parseHeader`` and ``parse_header`` into ``parse`` and ``header``), lower-cased, stemmed
lightly (``parsing``, ``parsed``, ``parser`` and ``parse`` are one word), English stop words
left out. A definition scores, for each word of the task it shares:

- its name holding the word: ``NAME_WEIGHT`` times how rare the word is among the names of
  the tree's definitions (``parse_header`` for "header"; a part that runs the task's words
  together all through holds them: ``_wrap_inlinelinenos`` "inline" and "linenos");
- its body holding it (when its file was read): BM25 (k1 1.2, b 0.75) over the bodies read,
  so a word every function uses (``return``, ``self``) counts for little, and a long body
  does not win by length;
- its file's path holding it: ``PATH_WEIGHT`` times how rare the word is among the paths, so
  a file named by a common word (``patch``, ``version``, ``test``, ``fix``) weighs less than
  an identifier.

A definition in a test file counts ``TEST_SHARE`` of its score: a report is about the code;
a failing test comes in through its frame. A class's body is its own lines, not its methods'
(each method is a definition of its own).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

NAME_WEIGHT = 2.0
PATH_WEIGHT = 0.5
TEST_SHARE = 0.3
COMPOUND_PIECE = 3  # a task's word read inside a name's part has this many letters at least
CODE_WORD = 2  # a task's word written as code (`x`, a_b, aB, x()) weighs this much more
K1 = 1.2
B = 0.75

_CODE = re.compile(r"`([^`\n]+)`|\b([A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*|\(\)?))")
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_TEST_PATH = re.compile(
    r"(^|/)(tests?|specs?|__tests__|testing)/|(^|/)test_[^/]*$|[._-](test|spec)\."
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s")
STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can cannot could did do does doing don doesn done
    down during each even ever every few for from further get gets got had has have having he
    her here hers him his how however if in into is isn it its itself just let like ll me
    more most much must my no nor not now of off on once only or other our out over own same
    she should so some such than that the their them then there these they this those though
    through to too under until up upon us very was wasn we were what when where which while
    who whom why will with would you your yours instead expected expect actually really
    still seems seem happen happens happened thing things way want wanted need needs please
    thanks hi hello bug issue problem wrong correct correctly right work works working
    broken break breaks anymore since version latest""".split()  # noqa: SIM905
)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """``word`` (lower case) without a common English ending: ``parsing`` -> ``pars``."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """The stemmed words of ``text``: identifiers split into their parts, stop words and
    words under three letters left out."""
    return [word for word in map(_word, _PART.findall(text)) if word]


@functools.lru_cache(maxsize=1 << 16)
def _word(part: str) -> str | None:
    """A part of an identifier as :func:`words` counts it (None: left out)."""
    low = part.lower()
    return stem(low) if len(low) >= 3 and low not in STOP else None


@functools.lru_cache(maxsize=1 << 16)
def name_words(name: str) -> frozenset[str]:
    """The words of a name or a path (kept: a tree's names repeat from task to task)."""
    return frozenset(words(name))


def query(text: str) -> Counter[str]:
    """The task's words and their weights: once each, ``CODE_WORD`` for a word written as
    code."""
    weights: Counter[str] = Counter()
    for word in words(text):
        weights[word] = 1
    for match in _CODE.finditer(text):
        for word in words(match[1] or match[2]):
            weights[word] = CODE_WORD
    return weights


@functools.lru_cache(maxsize=1 << 16)
def is_test(path: str) -> bool:
    """Whether ``path`` is a test file (or in a test folder)."""
    low = path.lower()
    return ("test" in low or "spec" in low) and bool(_TEST_PATH.search(low))


@dataclass(frozen=True)
class Doc:
    """A definition as the scoring sees it."""

    path: str
    name: str  # its own name (``parse`` of ``Parser.parse``)
    body: Counter[str] | None  # the words of its lines (a class: its own), None: not read


def scores(
    task: Counter[str], docs: Sequence[Doc], among: Sequence[Doc] | None = None
) -> list[float]:
    """Each doc's score for the task's words (0: none shared); how rare a word is among names
    and paths is counted ``among`` these (default: ``docs``; the whole tree's when ``docs``
    are some of them)."""
    if not task or not docs:
        return [0.0] * len(docs)
    joined = _Compounds(task)
    names = [joined.words(doc.name) for doc in docs]
    universe = docs if among is None else among
    paths = {path: name_words(path) for path in {doc.path for doc in universe}}
    path_idf = _idf(paths.values(), task)
    paths.update((doc.path, name_words(doc.path)) for doc in docs if doc.path not in paths)
    name_idf = _idf((joined.words(doc.name) for doc in universe) if among else names, task)
    wanted = set(task)
    bodies = [doc.body for doc in docs if doc.body is not None]
    body_idf = _idf((set(body) for body in bodies), task)
    average = sum(sum(body.values()) for body in bodies) / len(bodies) if bodies else 1.0
    found = []
    for doc, own in zip(docs, names, strict=True):
        if doc.body is None and own.isdisjoint(wanted) and paths[doc.path].isdisjoint(wanted):
            found.append(0.0)
            continue
        score = 0.0
        length = sum(doc.body.values()) if doc.body is not None else 0
        for word, weight in task.items():
            part = 0.0
            if word in own:
                part += NAME_WEIGHT * name_idf[word]
            if word in paths[doc.path]:
                part += PATH_WEIGHT * path_idf[word]
            if doc.body is not None and doc.body[word]:
                count = doc.body[word]
                norm = K1 * (1 - B + B * length / (average or 1.0))
                part += body_idf[word] * count * (K1 + 1) / (count + norm)
            score += weight * part
        found.append(score * (TEST_SHARE if is_test(doc.path) else 1.0))
    return found


class _Compounds:
    """A name's words, a part written as the task's words run together (``inlinelinenos``
    for "inline" and "linenos") read as those words."""

    def __init__(self, task: Counter[str]) -> None:
        # each task word, and the word its stem cut a final "e" off (``inlin``: ``inline``)
        self.pieces = {word: word for word in task} | {f"{word}e": word for word in task}
        self.found: dict[str, frozenset[str]] = {}

    def words(self, name: str) -> frozenset[str]:
        own = name_words(name)
        extra: set[str] = set()
        for word in own:
            if word not in self.pieces and len(word) >= 2 * COMPOUND_PIECE:
                if word not in self.found:
                    self.found[word] = frozenset(self._split(word, 0) or ())
                extra |= self.found[word]
        return own | extra if extra else own

    def _split(self, word: str, start: int) -> list[str] | None:
        """The task's words ``word[start:]`` runs together, when it is two or more of them."""
        for piece, stem in self.pieces.items():
            if len(piece) >= COMPOUND_PIECE and word.startswith(piece, start):
                end = start + len(piece)
                if end == len(word):
                    return [stem] if start else None
                rest = self._split(word, end)
                if rest is not None:
                    return [stem, *rest]
        return None


def _idf(sets: Iterable[Set[str]], task: Counter[str]) -> dict[str, float]:
    """How rare each of the task's words is among ``sets`` (log-scaled, as BM25's)."""
    count = 0
    held: Counter[str] = Counter()
    for each in sets:
        count += 1
        held.update(word for word in task if word in each)
    return {word: math.log(1 + (count - held[word] + 0.5) / (held[word] + 0.5)) for word in task}
