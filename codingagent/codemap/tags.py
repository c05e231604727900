"""What one source file defines and references: :func:`file_tags`.

tree-sitter, with the grammar's own tags query (:mod:`.grammars`), where the language's
grammar is installed; Python's ``ast`` for Python otherwise; nothing for other files. Pure:
bytes in, tags out.

A definition is a class, function, method, interface, type, module or constant, named by its
place (``Parser.parse`` for a method) and shown by its first line. A reference is a name the
file calls or uses as a type, as the tags query says; the ranking counts them.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codingagent.codemap.grammars import grammar, language_of

SIGNATURE_CHARS = 160  # a definition's first line is clipped here


@dataclass(frozen=True)
class Definition:
    name: str  # the name alone: ``parse``
    qualified: str  # with the definitions it is inside: ``Parser.parse``
    kind: str  # class, function, method, interface, type, module, constant, ...
    line: int  # its first line (1-based)
    end_line: int  # its last line
    signature: str  # its first line as written (indentation kept), clipped

    def as_tuple(self) -> tuple[str, str, str, int, int, str]:
        return (self.name, self.qualified, self.kind, self.line, self.end_line, self.signature)


@dataclass
class FileTags:
    definitions: list[Definition] = field(default_factory=list)
    references: Counter[str] = field(default_factory=Counter)

    def to_plain(self) -> tuple[tuple[str, ...], dict[str, int], str]:
        """Built-in types only, and few objects (for :mod:`marshal`, read back for every file
        of a big tree): the names defined, the names referenced with their counts, and the
        definitions as one text, a line each, read only for the files a map shows
        (:func:`definitions_of`)."""
        names = tuple(dict.fromkeys(d.name for d in self.definitions))
        text = "\n".join(
            "\t".join(
                (str(d.line), str(d.end_line), d.kind, _one(d.name), _one(d.qualified), d.signature)
            )
            for d in self.definitions
        )
        return names, dict(self.references), text


def _one(name: str) -> str:
    """A name as one field of a line (a capture can span lines in odd code)."""
    return " ".join(name.split())


def definitions_of(text: str) -> list[tuple[str, str, str, int, int, str]]:
    """The definitions :meth:`FileTags.to_plain` wrote as text, as tuples in the order of
    :meth:`Definition.as_tuple`."""
    found = []
    for line in text.split("\n") if text else ():
        first, last, kind, name, qualified, signature = line.split("\t", 5)
        found.append((name, qualified, kind, int(first), int(last), signature))
    return found


def file_tags(path: str, data: bytes) -> FileTags | None:
    """The tags of the file ``path`` whose bytes are ``data``; None when its language is not
    one the map reads."""
    language = language_of(path)
    if language is None:
        return None
    parsed = grammar(language)
    if parsed is not None:
        return _tree_sitter(parsed, data)
    if language == "python":
        return _python(data)
    return None


def _tree_sitter(parsed: Any, data: bytes) -> FileTags:
    from tree_sitter import QueryCursor

    tree = parsed.parser.parse(data)
    lines = data.split(b"\n")
    tags = FileTags()
    found: dict[tuple[int, int], tuple[str, str, Any]] = {}  # def node span -> name, kind, node
    for _, captures in QueryCursor(parsed.query).matches(tree.root_node):
        names = captures.get("name")
        if not names:
            continue
        name = _text(names[0])
        if not name:
            continue
        for key, nodes in captures.items():
            if key.startswith("definition."):
                node = nodes[0]
                found.setdefault((node.start_byte, node.end_byte), (name, key[11:], node))
            elif key.startswith("reference."):
                tags.references[name] += 1
    for _, (name, kind, node) in sorted(found.items()):
        outer = []
        parent = node.parent
        while parent is not None:
            enclosing = found.get((parent.start_byte, parent.end_byte))
            if enclosing is not None and enclosing[2] is not node:
                outer.append(enclosing[0])
            parent = parent.parent
        row = node.start_point[0]
        signature = lines[row].decode("utf-8", errors="replace") if row < len(lines) else ""
        tags.definitions.append(
            Definition(
                name,
                ".".join([*reversed(outer), name]),
                kind,
                row + 1,
                node.end_point[0] + 1,
                _clip(signature),
            )
        )
    tags.definitions.sort(key=lambda d: (d.line, d.end_line))
    return tags


def _text(node: Any) -> str:
    return (node.text or b"").decode("utf-8", errors="replace").strip()


def _clip(line: str) -> str:
    line = line.rstrip().replace("\t", "    ").replace("\r", "")
    return line if len(line) <= SIGNATURE_CHARS else line[: SIGNATURE_CHARS - 3] + "..."


def _python(data: bytes) -> FileTags:
    """The fallback for Python without its grammar: :mod:`ast`."""
    tags = FileTags()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return tags
    lines = data.decode("utf-8", errors="replace").split("\n")
    todo: list[tuple[str, ast.AST]] = [("", tree)]
    while todo:
        prefix, node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                signature = _clip(lines[child.lineno - 1]) if child.lineno <= len(lines) else ""
                end = child.end_lineno or child.lineno
                qualified = prefix + child.name
                tags.definitions.append(
                    Definition(child.name, qualified, kind, child.lineno, end, signature)
                )
                todo.append((qualified + ".", child))
            elif isinstance(child, ast.Call):
                if isinstance(child.func, ast.Name):
                    tags.references[child.func.id] += 1
                elif isinstance(child.func, ast.Attribute):
                    tags.references[child.func.attr] += 1
                todo.append((prefix, child))
            else:
                todo.append((prefix, child))
    tags.definitions.sort(key=lambda d: (d.line, d.end_line))
    return tags
