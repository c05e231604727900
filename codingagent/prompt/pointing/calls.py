"""What a definition calls (docs/prompts.md, "The code the task points at"): the names its
body calls, and the definitions they stand for (:meth:`.definitions.Tree.definers`).

- ``name(`` and ``obj.name(``; Babel's ``(0, _module.name)(`` (and ``(0, _module.default)(``:
  the module's own, ``module``);
- a bare call (``name(``, no ``obj.`` before it) in a language whose methods are called on
  their object (Python, JavaScript, TypeScript, Go, Rust) never stands for a method of a
  class: ``col(loc, s)`` in a method ``col`` calls the module's ``col`` it imports, not the
  method beside it;
- a class built (``Delta(1, 2)``) calls its constructor (``__init__``, ``constructor``);
- a function handed on by name, alone as an argument, an element or a keyword's value
  (``parse(s, [rfc2822, extractRFC2822])``, ``sorted(xs, key=_key)``), is called by what it
  is handed to: a function or method of its own file or of one it imports;
- a call a comment mentions (``# see _fix()``) is none.

And what made the values a line reads (:func:`feeders`): what a failing line's values came
from.
"""

from __future__ import annotations

import re

from codingagent.codemap.grammars import language_of
from codingagent.prompt.pointing.comments import uncommented
from codingagent.prompt.pointing.definitions import Definition, Tree, module_name
from codingagent.protocol.commands import file_lines

CALLS_MOST = 40  # definitions one definition calls, followed at most
Key = tuple[str, int, int]  # a definition: its file, first line, last line
# Languages whose methods are only called on an object (``self.x()``, ``this.x()``)
OWNED_METHODS = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust"})

# a call: ``name(``, and Babel's ``(0, _module.name)(`` (``(0, _module.default)(``: ``module``)
_CALL = re.compile(r"\b([A-Za-z_$][\w$]*)\s*\(|([\w$]+)\.([A-Za-z_$][\w$]*)\)\(")
_OWNER = re.compile(r"(?:\.|\?\.|->|::)\s*$")  # what stands before a call on an object
# a name handed on: alone as an argument, an element or a keyword's value (``key=_key``)
_HANDED = re.compile(r"(?:[(\[,]|\w=)\s*([A-Za-z_$][\w$]*)\s*(?=[,)\]])")
HANDED_KINDS = ("function", "method")  # what a name handed on may stand for
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
# an assignment's targets: ``a, b = ``, ``const { a } = ``, ``x += ``; not ``==``, ``=>``
_ASSIGNED = re.compile(r"^\s*(?:(?:const|let|var)\s+)?([\w$.,\s\[\]{}*:]+?)\s*[-+*/%|&^]?=(?![=>])")


def calls(text: str) -> dict[str, bool]:
    """The names ``text`` calls, in order, each once, and whether every call of it is bare
    (``name(``, not ``obj.name(``; Babel's ``(0, _module.default)(`` calls the module's own:
    ``module``)."""
    found: dict[str, bool] = {}
    for match in _CALL.finditer(text):
        name, owner, field = match.groups()
        if name is None:
            name = field if field != "default" else re.sub(r"\d+$", "", owner.lstrip("_"))
            bare = False
        else:
            bare = not _OWNER.search(text[max(0, match.start() - 4) : match.start()])
        found[name] = found.get(name, True) and bare
    return found


def called(text: str) -> list[str]:
    """The names ``text`` calls, in order, each once (:func:`calls`)."""
    return list(calls(text))


def callees(tree: Tree, key: Key, definition: Definition) -> list[tuple[Key, Definition]]:
    """The definitions ``definition`` (at ``key``) calls, in order: of each name, those it
    stands for (at most two; of a class built, its constructor: the class is too long to
    follow, its methods called are); a class calls nothing (its methods do)."""
    rel = key[0]
    text = tree.text(rel)
    if text is None or definition[2] == "class":
        return []
    return _resolved(tree, rel, text, definition, file_lines(text)[key[1] - 1 : key[2]])


def feeders(
    tree: Tree, key: Key, definition: Definition, line: int
) -> list[tuple[Key, Definition]]:
    """The definitions that made the values line ``line`` of ``definition`` (at ``key``)
    reads: what that line calls, and what the lines before it call that assign a name it
    reads (``results = _pred_succ(G)``, then ``pred, succ, w = results`` before ``w =
    succ[path[-1]]``), and so on up to the definition's first line. A line that fails on
    a value it was handed (a ``KeyError``, a ``None``) is downstream of the fault."""
    text = tree.text(key[0])
    if text is None or definition[2] == "class" or not key[1] <= line <= key[2]:
        return []
    lines = file_lines(text)[key[1] - 1 : line]
    wanted = _names(lines[-1])
    feeding = [lines[-1]]
    for code in reversed(lines[:-1]):
        assigned = _ASSIGNED.match(code)
        if assigned and wanted & _names(assigned[1]):
            feeding.append(code)
            wanted |= _names(code[assigned.end() :])
    return _resolved(tree, key[0], text, definition, feeding)


def _names(code: str) -> set[str]:
    """The names ``code`` reads (not its object's own: ``self``, ``this``)."""
    return set(_IDENTIFIER.findall(code)) - {"self", "this", "cls"}


def _resolved(
    tree: Tree, rel: str, text: str, definition: Definition, lines: list[str]
) -> list[tuple[Key, Definition]]:
    """The definitions ``lines`` of ``definition`` (in ``rel``, whose text is ``text``) call
    or hand on, in order (module doc)."""
    body = uncommented("\n".join(lines), language_of(rel))  # a comment's ``f()`` is no call
    found: dict[Key, Definition] = {}
    names = calls(body)
    handed = {name for name in _HANDED.findall(body) if name not in names}
    names.update(dict.fromkeys(handed, True))
    near = {rel, *tree.imports(rel, text)}
    owned = language_of(rel) in OWNED_METHODS
    for path in tree.imports(rel, text):  # the modules it imports by path that it calls
        if module_name(path) in names:
            tree.text(path, parse=True)
    for name, bare in names.items():
        if name == definition[0]:
            continue  # its own first line, or a call of itself
        if name not in tree.by_name:
            tree.parse_module(name, text, rel)
        for path, callee in tree.definers(name, rel, text, definition, bare and owned)[:2]:
            if name in handed and (callee[2] not in HANDED_KINDS or path not in near):
                continue  # a value handed on, not a function of its own or an imported file
            if callee[2] == "class":
                made = tree.constructor(path, callee)
                if made is None:
                    continue
                callee = made
            path, callee = tree.copies.preferred(path, callee)
            found.setdefault((path, callee[3], callee[4]), callee)
        if len(found) >= CALLS_MOST:
            break
    return list(found.items())
