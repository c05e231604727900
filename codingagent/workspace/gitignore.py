"""The gitignore rules engine: which entries of a folder the ``.gitignore`` files and
``.git/info/exclude`` ignore, as git ranks them.

pathspec translates each line to a regex; this module decides, per entry, which line has the
last word, and tells quickly (without a regex) that no line can match, the answer for nearly
every file.  It does no I/O: the listing reads the ignore files and hands their lines here.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

# An exclude line tested without a regex: an optional '**/', then a literal name or '*' and a
# literal suffix, then an optional '/' (folders only).  Others: the regex pathspec makes.
_PLAIN = re.compile(r"(?:\*\*/)?(?P<star>\*?)(?P<text>[^\s!#*?\[\]\\/][^*?\[\]\\/]*)(?P<folder>/?)")


@dataclass(frozen=True)
class Rules:
    """The ignore rules in force in one folder: ``.git/info/exclude`` and each ``.gitignore``
    from the root down to the folder, in rising precedence, as git ranks them.

    Each entry is judged by itself, as git does: what is inside an ignored folder is never
    looked at, and a pattern matching a parent folder says nothing about the entry.  The sets
    and patterns besides ``levels`` only tell quickly that no exclude pattern can match, the
    answer for nearly every file: a name pattern is tested on the name alone, a path pattern
    only at the depth it can match.  Negations only re-include: an entry no exclude pattern
    matches is kept.
    """

    levels: tuple[tuple[str, tuple[_Pattern, ...]], ...] = ()  # (folder: '' or '.../', lines)
    names: frozenset[str] = frozenset()  # a file or folder with such a name may be ignored
    folder_names: frozenset[str] = frozenset()  # a folder (with those of 'name/' lines)
    suffixes: tuple[str, ...] = ()  # from '*.log' lines
    folder_suffixes: tuple[str, ...] = ()
    name_patterns: tuple[re.Pattern[str], ...] = ()  # other name patterns that exclude
    path_patterns: tuple[tuple[int, _Pattern], ...] = ()  # (where its folder's path ends, ...)

    def judge(self, rel: str) -> Judge:
        """These rules as they apply in the folder ``rel`` ('' or ending in '/')."""
        here = tuple(
            (start, pattern)
            for start, pattern in self.path_patterns
            if pattern.depth in (0, rel.count("/", start) + 1)
        )
        return Judge(self, rel, here)

    def decide(self, rel: str, name: str) -> bool:
        """Whether the entry ``name`` ('/'-terminated for a folder) in ``rel`` is ignored: the
        last line that matches it, in the deepest ignore file with one, says."""
        for base, patterns in reversed(self.levels):
            path = rel[len(base) :] + name
            for pattern in reversed(patterns):
                if pattern.matches(name, path):
                    return pattern.ignores
        return False

    def below(self, base: str, lines: list[str]) -> Rules:
        """These rules with those of the ignore file ``lines`` in the folder ``base`` added."""
        patterns = [pattern for pattern in map(_Pattern.read, lines) if pattern is not None]
        if not patterns:
            return self
        names, folder_names = set(self.names), set(self.folder_names)
        suffixes, folder_suffixes = list(self.suffixes), list(self.folder_suffixes)
        name_patterns, path_patterns = list(self.name_patterns), list(self.path_patterns)
        for pattern in patterns:
            plain = _PLAIN.fullmatch(pattern.line) if pattern.ignores else None
            if plain is not None:
                text, folder_only = plain["text"], bool(plain["folder"])
                if plain["star"]:
                    folder_suffixes.append(text)
                    if not folder_only:
                        suffixes.append(text)
                else:
                    folder_names.add(text)
                    if not folder_only:
                        names.add(text)
            elif pattern.ignores and pattern.on_name:
                name_patterns.append(pattern.regex)
            elif pattern.ignores:
                path_patterns.append((len(base), pattern))
        return Rules(
            levels=(*self.levels, (base, tuple(patterns))),
            names=frozenset(names),
            folder_names=frozenset(folder_names),
            suffixes=tuple(suffixes),
            folder_suffixes=tuple(folder_suffixes),
            name_patterns=tuple(name_patterns),
            path_patterns=tuple(path_patterns),
        )


@dataclass(frozen=True, slots=True)
class _Pattern:
    """One line of an ignore file, with the regex pathspec translates it to.

    pathspec's regexes also match everything below what the line names (a flat matcher's
    way of ignoring a folder's contents).  The listing never enters an ignored folder, so it
    wants the entry itself: a match must end where the path ends.
    """

    line: str  # without trailing blanks, as pathspec reads it
    regex: re.Pattern[str]
    ignores: bool  # False for a negation ('!keep.log')
    on_name: bool  # no '/' but a trailing one: it matches a name, at any depth
    inside: bool  # ends in '/**': it matches what is in a folder, not the folder
    folders: bool  # ends in '/': it matches folders only
    depth: int  # how many names below the ignore file's folder it can match; 0: any number

    @staticmethod
    def read(line: str) -> _Pattern | None:
        """The line as pathspec reads it; None for a blank line, a comment, or a line pathspec
        cannot read: git skips those too."""
        from pathspec import GitIgnoreSpec  # imported here: slow, and only needed for these

        try:
            with warnings.catch_warnings():  # "possible nested set" for a '[[:alpha:]]'
                warnings.simplefilter("ignore")
                # Only each line's regex is read: the "simple" backend (Python's re), not the
                # best installed (hyperscan, a dependency of secrecy, refuses some lines).
                parsed = GitIgnoreSpec.from_lines([line], backend="simple").patterns
        except (ValueError, re.error):  # a lone '!', a trailing '\\', a '[z-a]'
            return None
        if len(parsed) != 1 or parsed[0].include is None or parsed[0].regex is None:
            return None
        line = line.rstrip()
        text = line.removeprefix("!").removesuffix("/")
        on_name = not any(mark in text.removeprefix("**/") for mark in "/\\")
        return _Pattern(
            line,
            parsed[0].regex,
            ignores=parsed[0].include,
            on_name=on_name,
            inside=text.endswith("/**"),
            folders=line.endswith("/"),
            depth=0 if on_name else _depth(text),
        )

    def matches(self, name: str, path: str) -> bool:
        """Whether the line matches the entry ``name``, at ``path`` below the ignore file's
        folder (both '/'-terminated for a folder), itself rather than a folder above it."""
        if self.on_name:  # a name holds no parent folder to match
            return self.regex.search(name) is not None
        if not self.inside:  # a match of the whole path, not of a prefix: not a parent's
            return self.regex.fullmatch(path) is not None
        if not path.endswith("/"):  # a file: anything below the folder is
            return not self.folders and self.regex.search(path) is not None
        # A folder below the line's folder, but not that folder itself (which ends the path).
        return self.regex.search(path, 0, len(path) - 1) is not None


@dataclass(frozen=True, slots=True)
class Judge:
    """The ignore rules applied to the entries of one folder, ``rel`` ('' or ending in '/')."""

    rules: Rules
    rel: str
    path_patterns: tuple[tuple[int, _Pattern], ...]  # those that can match here

    def ignores_file(self, name: str) -> bool:
        """Whether the file ``name`` is ignored."""
        rules = self.rules
        if name in rules.names or name.endswith(rules.suffixes) or self._matched(name):
            return rules.decide(self.rel, name)
        return False

    def ignores_folder(self, name: str) -> bool:
        """Whether the folder ``name`` is ignored, and so not entered."""
        rules = self.rules
        maybe = name in rules.folder_names or name.endswith(rules.folder_suffixes)
        if maybe or self._matched(name + "/"):
            return rules.decide(self.rel, name + "/")
        return False

    def _matched(self, name: str) -> bool:
        """Whether an exclude pattern kept as a regex matches ``name`` (or its path) here."""
        if not (self.rules.name_patterns or self.path_patterns):  # the usual case: cheap
            return False
        for regex in self.rules.name_patterns:
            if regex.search(name):
                return True
        path = self.rel + name
        return any(pattern.matches(name, path[start:]) for start, pattern in self.path_patterns)


def _depth(text: str) -> int:
    """How many names below its ignore file's folder a path pattern matches (0: any number)."""
    text = text.removeprefix("/")
    if any(mark in f"/{text}/" for mark in ("**", "[", "\\", "//", "/./", "/../")):
        return 0
    return text.count("/") + 1


def add_rules(rules: Rules | None, base: str, lines: list[str]) -> Rules | None:
    """``rules`` with those of an ignore file in the folder ``base``; None: nothing is ignored."""
    if not lines:
        return rules
    added = (rules or Rules()).below(base, lines)
    return added if added.levels else None
