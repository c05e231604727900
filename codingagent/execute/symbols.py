"""Where a function, class or method is defined in a file: READ_FILE ``symbol=``.

Python files (``.py``, ``.pyi``) are read with :mod:`ast`: a name matches a definition's
qualified name (``Parser.parse``, ``outer.inner``) or, if none does, its last part (``parse``
finds every method of that name). The lines run from the first decorator to the definition's
last line.

Other languages the code map reads (JavaScript, TypeScript, Go, Rust, Java, Ruby) are parsed
with the same tree-sitter grammars (:mod:`codingagent.codemap.tags`): a definition's lines are
its node's. Other files (and a name the parser does not find, and Python that does
not parse) use a fallback documented in docs/prompts.md: a
line that defines the name (``def``, ``class``, ``function``, ``func``, ``fn``, ``struct``...,
``const NAME =``, or a C-style ``type NAME(...)``), and the block after it: up to the brace that
closes the first ``{`` when one opens on that line or the next, else the lines indented deeper
than the definition (and a closing ``end`` at its own indentation). Pure: text in, ranges out.
"""

from __future__ import annotations

import ast
import re

from codingagent.codemap.grammars import language_of
from codingagent.codemap.tags import Definition, file_tags
from codingagent.protocol.commands import file_lines

MAX_DEFINITIONS = 5  # definitions of one name shown at most

_KEYWORDS = (
    r"def|class|function\*?|func|fn|sub|struct|enum|interface|trait|impl|type|module|object|"
    r"record|namespace|macro|defn|defmacro|procedure|method"
)
_MODIFIERS = r"(?:(?:export|default|public|private|protected|internal|static|async|abstract|"
_MODIFIERS += r"final|override|virtual|inline|pub(?:\([\w:]+\))?|unsafe|extern|const)\s+)*"


def find_symbol(text: str, name: str, path: str) -> list[tuple[int, int]]:
    """The line ranges (1-based, inclusive) defining ``name`` in ``text`` (the file
    ``path``), at most ``MAX_DEFINITIONS``, in file order; empty if none is found."""
    name = name.strip()
    if not name:
        return []
    python = path.lower().endswith((".py", ".pyi"))
    # C and C++ tags name a function by its declarator, prototypes too: the fallback's braces
    # find the body
    if not python and language_of(path) not in ("c", "cpp"):
        parsed = file_tags(path, text.encode("utf-8", errors="surrogateescape"))
        found = _parsed(parsed.definitions, name) if parsed is not None else []
        if found:
            return found[:MAX_DEFINITIONS]
    if python:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            pass
        else:
            return _python(tree, name)[:MAX_DEFINITIONS]
    return _by_text(file_lines(text), name)[:MAX_DEFINITIONS]


def _parsed(definitions: list[Definition], name: str) -> list[tuple[int, int]]:
    exact = [(d.line, d.end_line) for d in definitions if d.qualified == name]
    last = name.rpartition(".")[2].rpartition("::")[2]
    return sorted(set(exact or [(d.line, d.end_line) for d in definitions if d.name == last]))


def _python(tree: ast.Module, name: str) -> list[tuple[int, int]]:
    found: list[tuple[str, int, int]] = []
    todo: list[tuple[str, ast.AST]] = [("", tree)]
    while todo:
        prefix, node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualified = f"{prefix}{child.name}"
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                found.append((qualified, first, child.end_lineno or child.lineno))
                todo.append((f"{qualified}.", child))
            elif not isinstance(child, ast.expr):
                todo.append((prefix, child))  # definitions inside if/try/with blocks
    exact = [(a, b) for q, a, b in found if q == name]
    last = name.rpartition(".")[2]
    return sorted(exact or [(a, b) for q, a, b in found if q.rpartition(".")[2] == last])


def _by_text(lines: list[str], name: str) -> list[tuple[int, int]]:
    last = re.escape(name.rpartition(".")[2].rpartition("::")[2])
    definition = re.compile(
        rf"^\s*{_MODIFIERS}(?:(?:{_KEYWORDS})\s+(?:\([^)]*\)\s*)?[\w.:]*?{last}\b"
        rf"|(?:const|let|var|val)\s+{last}\s*[:=]"
        rf"|(?:[\w:<>\[\],*&]+\s+)+[*&]*(?:[\w:]+::)?{last}\s*\([^;]*$)"
    )
    return [
        (number, _block_end(lines, number))
        for number, line in enumerate(lines, 1)
        if definition.search(line)
    ]


def _block_end(lines: list[str], start: int) -> int:
    """The last line of the block a definition on line ``start`` opens."""
    for number in (start, start + 1):
        if number <= len(lines) and "{" in lines[number - 1]:
            return _closing_brace(lines, number)
    indent = _indent(lines[start - 1])
    end = start
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1]
        if not line.strip():
            continue
        if _indent(line) <= indent:
            return number if line.strip() == "end" and _indent(line) == indent else end
        end = number
    return end


def _closing_brace(lines: list[str], start: int) -> int:
    depth = 0
    for number in range(start, len(lines) + 1):
        for char in lines[number - 1]:
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return number
    return len(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
