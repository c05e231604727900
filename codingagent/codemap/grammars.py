"""The languages the code map reads, and their tree-sitter grammars.

Each grammar is a wheel of its own (``tree-sitter-python``, ``tree-sitter-go``, ...): the
compiled parser and its ``queries/tags.scm`` are inside it, so nothing is fetched at run time
(``tree-sitter-language-pack`` 1.x downloads its grammars on first use, which is why it is not
used: docs/prompts.md). The tags queries are the grammars' own: ``@name`` with a
``@definition.*`` or ``@reference.*`` capture. TypeScript's own query holds only what it adds
to JavaScript, so both are read for it.

A grammar that is not installed (an extra the user left out) is no error: that language is
read by the fallback (Python's ``ast`` for Python; nothing for the others).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# language -> (module, its function returning the language, the modules whose tags.scm apply)
_GRAMMARS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", "language", ("tree_sitter_python",)),
    "javascript": ("tree_sitter_javascript", "language", ("tree_sitter_javascript",)),
    "typescript": (
        "tree_sitter_typescript",
        "language_typescript",
        ("tree_sitter_javascript", "tree_sitter_typescript"),
    ),
    "tsx": (
        "tree_sitter_typescript",
        "language_tsx",
        ("tree_sitter_javascript", "tree_sitter_typescript"),
    ),
    "go": ("tree_sitter_go", "language", ("tree_sitter_go",)),
    "rust": ("tree_sitter_rust", "language", ("tree_sitter_rust",)),
    "java": ("tree_sitter_java", "language", ("tree_sitter_java",)),
    "c": ("tree_sitter_c", "language", ("tree_sitter_c",)),
    "cpp": ("tree_sitter_cpp", "language", ("tree_sitter_cpp",)),
    "ruby": ("tree_sitter_ruby", "language", ("tree_sitter_ruby",)),
}

# What loading each grammar costs (its parser and its tags query compiled), in milliseconds of
# CPU as measured here (docs/prompts.md): a map that must parse within a budget counts it.
LOAD_MS: dict[str, float] = {
    "python": 11,
    "javascript": 17,
    "typescript": 54,
    "tsx": 50,
    "go": 4,
    "rust": 8,
    "java": 4,
    "c": 6,
    "cpp": 39,
    "ruby": 34,
}

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
}


@dataclass(frozen=True)
class Grammar:
    """A language's parser and its tags query (tree-sitter objects)."""

    language: str
    parser: Any
    query: Any


def language_of(path: str) -> str | None:
    """The language of a file, by its extension (None: not one the map reads)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return EXTENSIONS.get(name[dot:].lower()) if dot > 0 else None


@functools.cache
def grammar(language: str) -> Grammar | None:
    """The tree-sitter grammar of ``language``, or None when it is not installed."""
    try:
        from tree_sitter import Language, Parser, Query

        module, function, query_modules = _GRAMMARS[language]
        lang = Language(getattr(importlib.import_module(module), function)())
        text = "\n".join(_tags_query(name) for name in query_modules)
        return Grammar(language, Parser(lang), Query(lang, text))
    except (ImportError, KeyError, OSError, AttributeError):
        return None


def _tags_query(module: str) -> str:
    """The ``queries/tags.scm`` that ships inside a grammar's wheel."""
    folder = Path(importlib.import_module(module).__file__ or "").parent
    return (folder / "queries" / "tags.scm").read_text(encoding="utf-8")


def available() -> list[str]:
    """The languages whose grammar is installed (for ``doctor`` and the docs)."""
    return [name for name in _GRAMMARS if grammar(name) is not None]
