"""The workspace listing as the LLM reads it: every folder represented, source files first,
within a budget of characters. Pure: (path, size) pairs in, lines out.

    src/main.py (120 bytes)                       a file
    data/ 20,000 files, 117 KB: *.txt             a folder rolled up into one line
    docs/ 40 files in 3 folders, 90 KB: *.md      ... with the folders below it
    src/ 12 more files, 30 KB: *.json             the files of a folder not listed one by one

The budget is spent in two rounds. First the structure: folders are opened breadth-first
(a rolled-up line is replaced by a line for each folder inside it) while that fits, so every
folder is represented before any folder's files are listed. Then the files of the opened
folders, source files first, shallow before deep; a folder holding more than ``ROLL_UP`` files
lists only its source files one by one (unless it is the folder asked for). Lines come out in
tree order: a folder's files, then its folders.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from codingagent.workspace.listing import UNSIZED

ROLL_UP = 100  # a folder holding more files than this lists only its source files one by one
_GIVE_UP = 50  # files in a row that do not fit end the listing of files
KINDS = 3  # file kinds (``*.txt``) named on a rolled-up line

SOURCE_SUFFIXES = frozenset(
    {
        "py",
        "pyi",
        "pyx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hh",
        "hpp",
        "cs",
        "fs",
        "java",
        "kt",
        "kts",
        "scala",
        "go",
        "rs",
        "rb",
        "php",
        "swift",
        "m",
        "mm",
        "sh",
        "bash",
        "zsh",
        "ps1",
        "bat",
        "lua",
        "r",
        "jl",
        "ex",
        "exs",
        "erl",
        "hs",
        "ml",
        "clj",
        "dart",
        "vue",
        "svelte",
        "sql",
        "html",
        "css",
        "scss",
        "sass",
        "less",
        "zig",
        "nim",
        "pl",
        "pm",
        "groovy",
        "gradle",
    }
)
PROJECT_FILES = frozenset(
    {
        "makefile",
        "dockerfile",
        "cmakelists.txt",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "package.json",
        "tsconfig.json",
        "cargo.toml",
        "go.mod",
        "gemfile",
        "requirements.txt",
        "pom.xml",
        "build.gradle",
        "tox.ini",
        "readme",
        "readme.md",
        "readme.rst",
        "readme.txt",
    }
)


def is_source(name: str) -> bool:
    """Code, or a file that says how the project is built: what the LLM should see first."""
    lower = name.rsplit("/", 1)[-1].lower()
    return lower in PROJECT_FILES or ("." in lower and lower.rpartition(".")[2] in SOURCE_SUFFIXES)


def overview(
    files: Iterable[tuple[str, int]],
    budget: int,
    omitted: int = 0,
    asked: str | None = None,
    size_of: Callable[[str], int] | None = None,
) -> list[str]:
    """The listing lines of ``files`` (posix paths, sizes or UNSIZED), together at most
    ``budget`` characters (newlines counted) where the folder structure allows it.
    ``omitted`` files were not even counted by the walk: a last line says so. ``asked`` is a
    folder the LLM asked to see ('' or ending in '/'): ``files`` are below it, and all of its
    own files may be listed. ``size_of`` gives the size of an UNSIZED file listed one by one."""
    base = asked or ""
    root = _Folder(base)
    folders = {base: root}
    for path, size in files:
        where, _, name = path.rpartition("/")
        key = f"{where}/" if where else ""
        folder = folders.get(key) or _folder_at(folders, key)
        folder.files.append((name, path, size))
    root.summarise()
    if root.count == 0 and not omitted:
        return []
    tail = [f"  ({omitted:,} more files were not counted: too many)"] if omitted else []
    _Layout(root, budget - _cost(tail), asked is not None, size_of).run()
    return root.lines() + tail


def human_size(n: int) -> str:
    """``512 bytes``, ``6 KB``, ``1.2 MB``: sizes on rolled-up lines."""
    if n < 1024:
        return f"{n:,} bytes"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1024  # type: ignore[assignment]
        if n < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if n < 10 else f"{n:,.0f} {unit}"
    raise AssertionError("unreachable")


def _kind(name: str) -> str:
    stem, dot, suffix = name.rpartition(".")
    return f"*.{suffix}" if dot and stem else name


def _kinds(kinds: Counter[str]) -> str:
    top = [kind for kind, _ in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:KINDS]]
    return ", ".join(top) + (", ..." if len(kinds) > KINDS else "")


def _file_line(path: str, size: int) -> str:
    return f"  {path} ({size} bytes)" if size != UNSIZED else f"  {path}"


def _folder_at(folders: dict[str, _Folder], key: str) -> _Folder:
    """The folder ``key`` ('' or ending in '/'), made with the folders above it as needed."""
    missing = []
    while key not in folders:
        missing.append(key)
        parent = key[:-1].rpartition("/")[0]
        key = f"{parent}/" if parent else ""
    folder = folders[key]
    for path in reversed(missing):
        inner = folders[path] = _Folder(path)
        folder.folders[path[len(folder.path) : -1]] = inner
        folder = inner
    return folder


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _cost(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)


@dataclass(eq=False)
class _Folder:
    path: str  # '' for the workspace, else ending in '/'
    files: list[tuple[str, str, int]] = field(default_factory=list)  # (name, path, size)
    folders: dict[str, _Folder] = field(default_factory=dict)
    count: int = 0  # files at any depth below
    size: int = 0
    below: int = 0  # folders at any depth below
    kinds: Counter[str] = field(default_factory=Counter)
    opened: bool = False
    shown: dict[str, int] = field(default_factory=dict)  # its files listed one by one: sizes
    hidden: int = 0  # its files not listed: count, size, kinds
    hidden_size: int = 0
    hidden_kinds: Counter[str] = field(default_factory=Counter)
    counted: bool = False  # only counted on its parent's "more folders" line
    unsized: int = 0  # files below it whose size is not known

    def summarise(self) -> None:
        """Fill in the counts of every folder, below first (without recursion: a reply's
        command can nest folders thousands deep)."""
        order = [self]
        for folder in order:  # grows while it is read: every folder, parents first
            order.extend(folder.folders.values())
        for folder in reversed(order):
            folder.count, folder.below = len(folder.files), len(folder.folders)
            sizes = [size for _, _, size in folder.files]
            folder.unsized = sizes.count(UNSIZED)
            folder.size = sum(sizes) - UNSIZED * folder.unsized
            folder.kinds = Counter([_kind(name) for name, _, _ in folder.files])
            folder.hidden, folder.hidden_size = folder.count, folder.size
            folder.hidden_kinds = Counter(folder.kinds)
            for inner in folder.folders.values():
                folder.count += inner.count
                folder.size += inner.size
                folder.unsized += inner.unsized
                folder.below += inner.below
                folder.kinds.update(inner.kinds)

    def sources(self) -> int:
        """How many source files it holds, at any depth, judged by their kinds."""
        return sum(n for kind, n in self.kinds.items() if is_source(kind))

    @property
    def shown_as(self) -> str:
        return self.path or "./"

    def rolled_up(self) -> str:
        where = f" in {_count(self.below, 'folder')}" if self.below else ""
        return (
            f"  {self.shown_as} {_count(self.count, 'file')}{where}{self._size(self.size)}: "
            f"{_kinds(self.kinds)}"
        )

    def _size(self, size: int) -> str:
        """``, 6 KB`` when the sizes of its files are known (the walk stats only so many)."""
        return "" if self.unsized else f", {human_size(size)}"

    def rest(self, hidden: int, size: int, kinds: Counter[str]) -> list[str]:
        """The line for the files of an opened folder that are not listed one by one."""
        if not hidden:
            return []
        more = " more" if len(self.files) > hidden else ""
        word = "file" if hidden == 1 else "files"
        return [f"  {self.shown_as} {hidden:,}{more} {word}{self._size(size)}: {_kinds(kinds)}"]

    def opened_lines(self) -> list[str]:
        """Its lines when opened with none of its files listed and none of its folders open."""
        lines = self.rest(self.hidden, self.hidden_size, self.hidden_kinds)
        return lines + [inner.rolled_up() for inner in self.folders.values()]

    def lines(self) -> list[str]:
        """The listing in tree order: a folder's files, then its folders (no recursion)."""
        out: list[str] = []
        stack: list[_Folder | str] = [self]
        while stack:
            folder = stack.pop()
            if isinstance(folder, str):
                out.append(folder)
                continue
            if not folder.opened:
                out.append(folder.rolled_up())
                continue
            out += [
                _file_line(p, folder.shown[p])
                for _, p, _ in sorted(folder.files)
                if p in folder.shown
            ]
            out += folder.rest(folder.hidden, folder.hidden_size, folder.hidden_kinds)
            counted = [inner for inner in folder.folders.values() if inner.counted]
            if counted:
                known = not any(f.unsized for f in counted)
                size = f", {human_size(sum(f.size for f in counted))}" if known else ""
                stack.append(
                    f"  {folder.shown_as} {len(counted):,} more folders, "
                    f"{sum(f.count for f in counted):,} files{size}"
                )
            inner = [folder.folders[name] for name in sorted(folder.folders, reverse=True)]
            stack += [f for f in inner if not f.counted]
        return out


class _Layout:
    """Spends the budget: folder structure first, then files, source first."""

    def __init__(
        self, root: _Folder, budget: int, explicit: bool, size_of: Callable[[str], int] | None
    ) -> None:
        self.root = root
        self.left = budget
        self.explicit = explicit
        self.size_of = size_of
        self.opened: list[_Folder] = []

    def run(self) -> None:
        self._open_root()
        queue = deque(f for _, f in sorted(self.root.folders.items()) if not f.counted)
        while queue:  # breadth-first
            folder = queue.popleft()
            delta = _cost(folder.opened_lines()) - _cost([folder.rolled_up()])
            if delta <= self.left:
                self.left -= delta
                folder.opened = True
                self.opened.append(folder)
                queue += [inner for _, inner in sorted(folder.folders.items())]
        self._list_files()

    def _open_root(self) -> None:
        root = self.root
        root.opened = True
        self.opened.append(root)
        lines = root.opened_lines()
        if _cost(lines) <= self.left:
            self.left -= _cost(lines)
            return
        # Too many folders even for one line each: the ones holding source files come first,
        # the rest are counted on one line.
        self.left -= _cost(root.rest(root.hidden, root.hidden_size, root.hidden_kinds))
        self.left -= 80  # the line counting the rest
        ranked = sorted(root.folders.values(), key=lambda f: (-f.sources(), f.path))
        for folder in ranked:
            cost = _cost([folder.rolled_up()])
            if cost <= self.left:
                self.left -= cost
            else:
                folder.counted = True

    def _list_files(self) -> None:
        candidates = []
        for folder in self.opened:
            crowded = len(folder.files) > ROLL_UP and not (self.explicit and folder is self.root)
            for name, path, size in folder.files:
                source = is_source(name)
                if source or not crowded:
                    depth = path.count("/")
                    candidates.append((not source, depth, path, name, size, folder))
        candidates.sort(key=lambda c: c[:3])
        rest_cost: dict[int, int] = {}  # the cost of each folder's line for its files not listed
        misses = 0
        for _, _, path, name, size, folder in candidates:
            if misses == _GIVE_UP:
                break  # the budget is spent: the rest would not fit either
            old = rest_cost.get(id(folder))
            if old is None:
                old = _cost(folder.rest(folder.hidden, folder.hidden_size, folder.hidden_kinds))
                rest_cost[id(folder)] = old
            known = size
            if size == UNSIZED and self.size_of is not None:
                known = self.size_of(path)
            line = len(_file_line(path, known)) + 1
            kinds = folder.hidden_kinds.copy()
            kinds[_kind(name)] -= 1
            kinds += Counter()  # drop kinds that reached zero
            size = max(size, 0)  # an UNSIZED file is not in hidden_size
            new = _cost(folder.rest(folder.hidden - 1, folder.hidden_size - size, kinds))
            delta = line + new - old
            if delta > self.left:
                misses += 1
                continue
            misses = 0
            rest_cost[id(folder)] = new
            self.left -= delta
            folder.shown[path] = known
            folder.hidden -= 1
            folder.hidden_size -= size
            folder.hidden_kinds = kinds
