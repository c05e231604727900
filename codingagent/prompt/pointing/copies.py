"""One copy of duplicated code (docs/prompts.md, "The code the task points at"). A package
often ships its code twice or more: ``es/lib/x.js`` (ES modules) beside ``lib/x.js``
(CommonJS), ``x.js`` beside ``x.cjs`` and ``x.mjs``, a ``dist/`` bundle beside the sources
it was built from. The code the task points at shows one copy of a definition, never two.

Two definitions are copies when they have the same qualified name and kind, about as many
lines (within a quarter, or 3), and either their files are one module built twice
(:func:`module_key`: the same path once the build folders, the build words of a file's name
and the flavour of its extension are left out: ``es/lib/x.js``, ``lib/x.js``, ``x.cjs``,
``dist/x.esm.js``), or their bodies are the same code (a bundle's copy of a source's: at
least ``SAME_WORDS`` of their words shared, comments left out: a bundler drops them).

Of copies, the one shown (:meth:`Copies.order`) is

1. the nearest to a file the evidence reaches (a frame's, one the failing tests import, one
   the task names by path): that file itself, else one with its extension, else the one
   sharing the most leading folders with it;
2. else the one an import loads (Python's package ``x/__init__.py`` over ``x.py`` beside
   it);
3. else, where the tree makes its builds again (:meth:`Copies.builds`: it holds a build's
   configuration), a source over a build (under ``src/`` first; under a build folder, or
   with a build word in its name, last): a build is made again from its source; then the
   nearest, as in 1, to the files the package's entry imports (``package.json``'s
   ``exports`` for ``require``, ``node`` or ``default``, else its ``main``): what runs;
4. where it does not (an installed package: its build runs, and nothing makes it again),
   the entry's first, then the source;
5. else the plain source's extension (``.js`` before ``.cjs`` and ``.mjs``), else the first
   path.

The entry is parsed when it is read (:meth:`Copies.entry`), even when the map has not read
it: its definitions are the copies that run.
"""

from __future__ import annotations

import itertools
import json
import posixpath
import re
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from codingagent.codemap.grammars import language_of
from codingagent.codemap.lexical import words
from codingagent.codemap.ranking import Definition
from codingagent.prompt.pointing.comments import uncommented
from codingagent.protocol.commands import file_lines

Pair = tuple[str, Definition]


class Files(Protocol):
    """What copies are told apart by: :class:`.definitions.Tree`'s files and definitions."""

    file_set: set[str]
    texts: dict[str, str]
    by_name: dict[str, list[Pair]]

    def text(self, rel: str, parse: bool = False) -> str | None: ...


BUILD_FOLDERS = frozenset(
    {"dist", "build", "es", "esm", "es5", "es6", "es2015", "es2017", "es2020", "cjs"}
    | {"commonjs", "umd", "amd", "bundle", "bundles"}
)
BUILD_CONFIGS = frozenset(  # a build's configuration: the tree makes its builds again
    f"{tool}.config.{ext}"
    for tool in ("rollup", "webpack", "vite", "tsup", "esbuild", "babel", "swc")
    for ext in ("js", "cjs", "mjs", "ts", "json")
) | {"tsconfig.json", ".babelrc", ".swcrc", "gulpfile.js", "Gruntfile.js"}
KEY_FOLDERS = BUILD_FOLDERS | {"lib", "src"}  # left out of a module's key
BUILD_WORDS = frozenset(
    ("min", "esm", "cjs", "mjs", "umd", "bundle", "browser", "node", "module", "prod")
)
FLAVOURS = {ext: "js" for ext in ("js", "cjs", "mjs", "jsx", "ts", "cts", "mts", "tsx")}
DECLARATIONS = (".d.ts", ".d.mts", ".d.cts")  # type declarations: no code to show or change
SOURCE = (".py", ".js", ".ts", ".go", ".rs", ".java", ".rb")  # of one module's forms, first
SAME_WORDS = 0.8  # bodies sharing this share of their words are the same code
SAME_LINES = 0.25  # copies' lengths differ by at most this share (or ``SAME_LINES_MOST``)
SAME_LINES_MOST = 3
COMPARED_MOST = 12  # definitions of one name compared with one, at most
ENTRY_CONDITIONS = ("require", "node", "default")
JS_SUFFIXES = ("", ".js", ".cjs", ".mjs", ".ts", ".tsx", ".jsx", "/index.js", "/index.cjs")
_JS_IMPORT = re.compile(
    r"""\brequire\s*\(\s*['"]([^'"\n]+)['"]|\bfrom\s*['"]([^'"\n]+)['"]"""
    r"""|^\s*import\s*\(?\s*['"]([^'"\n]+)['"]""",
    re.M,
)
_PY_IMPORT = re.compile(r"^\s*(?:from\s+(\.*)([\w.]*)\s+import\b|import\s+([\w.]+))", re.M)


def is_declaration(path: str) -> bool:
    """Whether ``path`` only declares types (``.d.ts``): nothing there to show or change."""
    return path.endswith(DECLARATIONS)


def module_key(rel: str) -> str:
    """The module a file is a build of: its path without build folders (nor ``lib``,
    ``src``), the build words of its name (``x.esm.js``) and its extension's flavour."""
    *folders, name = rel.split("/")
    stem, _, ext = name.rpartition(".") if "." in name else (name, "", "")
    first, *rest = stem.split(".")
    kept = [first, *(word for word in rest if word not in BUILD_WORDS)]
    path = [folder for folder in folders if folder not in KEY_FOLDERS]
    return "/".join([*path, ".".join(kept)]) + "." + FLAVOURS.get(ext, ext)


def made(rel: str) -> int:
    """0 for a source (under ``src/``), 2 for a build (under a build folder, or a build word
    in its name), 1 for the rest."""
    *folders, name = rel.split("/")
    if "src" in folders:
        return 0
    built = any(f in BUILD_FOLDERS for f in folders)
    return 2 if built or any(w in BUILD_WORDS for w in name.split(".")[1:-1]) else 1


def source_first(path: str) -> int:
    """Of one module's forms (``x.js`` and ``x.mjs``), the plain source first."""
    return 0 if path.endswith(SOURCE) else 1


def imports(rel: str, text: str, files: set[str]) -> set[str]:
    """The files of ``files`` that the file ``rel`` (whose text is ``text``) imports by path:
    a JavaScript relative specifier (``require("./x.cjs")``, ``from "../x"``), a Python
    relative or dotted module (``from .x import y``, ``import pkg.x``)."""
    found: set[str] = set()
    folder = posixpath.dirname(rel)
    if rel.endswith((".py", ".pyi")):
        for dots, module, plain in _PY_IMPORT.findall(text):
            name = (module or plain).replace(".", "/")
            up = [".."] * (len(dots) - 1)
            bases = [posixpath.join(folder, *up)] if dots else ["", "src"]
            for base in bases if name else ():
                path = posixpath.normpath(posixpath.join(base, name))
                found.update(f for f in (f"{path}.py", f"{path}/__init__.py") if f in files)
        return found
    for match in _JS_IMPORT.finditer(text):
        spec = match[1] or match[2] or match[3]
        if not spec.startswith("."):
            continue
        path = posixpath.normpath(posixpath.join(folder, spec))
        for suffix in JS_SUFFIXES:
            if path + suffix in files:
                found.add(path + suffix)
                break
    return found


class Copies:
    """Which copy of a definition the code the task points at shows, in ``tree``."""

    def __init__(self, tree: Files) -> None:
        self.tree = tree
        self.reached: set[str] = set()
        self._entry: set[str] | None = None
        self._builds: bool | None = None
        self._chosen: dict[tuple[str, int, bool], Pair] = {}
        self._words: dict[tuple[str, int], Counter[str]] = {}

    def reach(self, files: Iterable[str]) -> None:
        """The files the evidence reaches: their copies are shown first."""
        self.reached.update(files)
        self._chosen.clear()

    def preferred(self, rel: str, definition: Definition, read: bool = True) -> Pair:
        """The copy of ``definition`` (in ``rel``) to show: itself when it has none. With
        ``read``, the files of its likely copies are read to compare their bodies; without,
        only those read already are."""
        key = (rel, definition[3], read)
        if key not in self._chosen:
            candidates = (
                (path, found)
                for path, found in self.tree.by_name.get(definition[1], [])
                if path != rel and not is_declaration(path) and _alike(definition, found)
            )  # (a name a thousand files define: the first few alike, not all of them)
            alike = list(itertools.islice(candidates, COMPARED_MOST))
            readable = [
                pair
                for pair in alike
                if (self.tree.text(pair[0]) if read else self.tree.texts.get(pair[0])) is not None
            ]
            copies = [pair for pair in readable if self.same((rel, definition), pair)]
            mine = (rel, definition)
            self._chosen[key] = (
                min([mine, *copies], key=lambda p: self.order(p[0])) if copies else mine
            )
        return self._chosen[key]

    def one(self, pairs: list[Pair]) -> list[Pair]:
        """``pairs`` with each definition that has a copy among them given as its copy to
        show, once, in their order."""
        chosen: dict[tuple[str, int], Pair] = {}
        for rel, definition in pairs:
            best = self.preferred(rel, definition)
            chosen.setdefault((best[0], best[1][3]), best)
        return list(chosen.values())

    def same(self, one: Pair, other: Pair) -> bool:
        """Whether two definitions are copies (see the module doc); bodies are compared
        only when both files were read."""
        (a, da), (b, db) = one, other
        if a == b:
            return da[3] == db[3]
        if not _alike(da, db):
            return False
        if module_key(a) == module_key(b):
            return True
        wa, wb = self._body(a, da), self._body(b, db)
        shared = sum((wa & wb).values())
        return bool(wa) and shared >= SAME_WORDS * max(sum(wa.values()), sum(wb.values()))

    def order(self, rel: str) -> tuple[object, ...]:
        """How a copy in ``rel`` ranks among its copies, the first shown (module doc)."""
        shadowed = rel.endswith(".py") and f"{rel[:-3]}/__init__.py" in self.tree.file_set
        built, entry = made(rel), _nearest(rel, self.entry())
        return (
            _nearest(rel, self.reached),
            shadowed,  # Python imports a package ``x/`` before a module ``x.py`` beside it
            *((built, entry) if self.builds() else (entry, built)),
            source_first(rel),
            rel,
        )

    def builds(self) -> bool:
        """Whether the tree makes its builds again: it holds a build's configuration (a
        bundler's, a compiler's: ``BUILD_CONFIGS``), or no ``package.json`` names an entry."""
        if self._builds is None:
            files = self.tree.file_set
            self._builds = not self.entry() or any(
                path.rpartition("/")[2] in BUILD_CONFIGS for path in files
            )
        return self._builds

    def entry(self) -> set[str]:
        """The package's entry (``package.json``) and the files it imports (the entry
        parsed: what runs, its definitions copies of the sources')."""
        if self._entry is None:
            self._entry = set()
            main = _entry_path(self.tree.text("package.json"))
            files = self.tree.file_set
            for path in (main, f"{main}.js", f"{main}/index.js") if main else ():
                text = self.tree.text(path, parse=True) if path in files else None
                if text is not None:
                    self._entry = {path, *imports(path, text, files)}
                    break
        return self._entry

    def _body(self, rel: str, definition: Definition) -> Counter[str]:
        key = (rel, definition[3])
        if key not in self._words:
            text = self.tree.texts.get(rel)
            lines = file_lines(text)[definition[3] - 1 : definition[4]] if text else []
            code = uncommented("\n".join(lines), language_of(rel))  # a build drops comments
            self._words[key] = Counter(words(code))
        return self._words[key]


def _alike(one: Definition, other: Definition) -> bool:
    """The same qualified name and kind, about as many lines."""
    if one[1] != other[1] or one[2] != other[2]:
        return False
    la, lb = one[4] - one[3] + 1, other[4] - other[3] + 1
    return abs(la - lb) <= max(SAME_LINES_MOST, SAME_LINES * max(la, lb))


def _nearest(rel: str, anchors: set[str]) -> tuple[int, int, int]:
    """How near ``rel`` is to the nearest of ``anchors`` (smaller is nearer): itself, its
    extension, the leading folders shared."""
    best = (1, 1, 0)
    ext = rel.rpartition(".")[2]
    folders = rel.split("/")[:-1]
    for anchor in anchors:
        if anchor == rel:
            return (0, 0, -len(folders))
        theirs = anchor.split("/")[:-1]
        shared = 0
        while shared < min(len(folders), len(theirs)) and folders[shared] == theirs[shared]:
            shared += 1
        best = min(best, (1, 0 if anchor.rpartition(".")[2] == ext else 1, -shared))
    return best


def _entry_path(manifest: str | None) -> str | None:
    """The file a ``package.json`` says ``require()`` loads: ``exports``'s, else ``main``."""
    try:
        data = json.loads(manifest or "")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    found = data.get("exports")
    if isinstance(found, dict) and "." in found:
        found = found["."]
    while isinstance(found, dict):
        found = next((found[c] for c in ENTRY_CONDITIONS if c in found), None)
    if not isinstance(found, str):
        found = data.get("main")
    if not isinstance(found, str):
        return None
    return posixpath.normpath(found).lstrip("/") or None
