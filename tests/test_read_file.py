"""READ_FILE: whole files and line ranges, one request per file whatever its spelling."""

from __future__ import annotations

import sys

from executing import TEN, headlines, put, run

from codingagent.protocol.commands import ReadFile
from codingagent.state import FileRange
from codingagent.workspace import Workspace


def test_read_requests_are_normalised_and_deduplicated(ws: Workspace) -> None:
    put(ws, "src/a.py", "x")
    put(ws, "b.txt", "y")
    outcome = run(
        ws,
        ReadFile(line=1, path="./src//a.py"),
        ReadFile(line=2, path="b.txt"),
        ReadFile(line=3, path="src/a.py"),
        ReadFile(line=4, path="missing.py"),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: './src//a.py' is shown under Requested File Contents",
        "[OK] READ_FILE: 'b.txt' is shown under Requested File Contents",
        "[OK] READ_FILE: 'src/a.py' is shown under Requested File Contents",
        "[FAILED] READ_FILE: File 'missing.py' not found",
    ]
    assert outcome.read_requests == ["src/a.py", "b.txt"]
    assert outcome.changed == []


def test_read_file_ranges(ws):
    put(ws, "a.txt", TEN)
    outcome = run(
        ws,
        ReadFile(line=1, path="a.txt", start_line=3, end_line=5),
        ReadFile(line=2, path="a.txt", start_line=8),
        ReadFile(line=3, path="a.txt", end_line=2),
        ReadFile(line=3, path="a.txt", start_line=4, end_line=4),
        ReadFile(line=4, path="a.txt", start_line=5, end_line=4),
        ReadFile(line=5, path="a.txt", start_line=0),
        ReadFile(line=6, path="a.txt", start_line=3, end_line=5),
        ReadFile(line=7, path="a.txt"),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: Lines 3-5 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'a.txt' from line 8 on is shown under Requested File Contents",
        "[OK] READ_FILE: Lines 1-2 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: Line 4 of 'a.txt' is shown under Requested File Contents",
        "[FAILED] READ_FILE: Invalid line range 5-4 for 'a.txt'",
        "[FAILED] READ_FILE: Invalid line range 0-end for 'a.txt'",
        "[OK] READ_FILE: Lines 3-5 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'a.txt' is shown under Requested File Contents",
    ]
    assert outcome.read_requests == [
        FileRange(path="a.txt", start_line=3, end_line=5),
        FileRange(path="a.txt", start_line=8),
        FileRange(path="a.txt", end_line=2),
        FileRange(path="a.txt", start_line=4, end_line=4),
        "a.txt",
    ]


def test_read_file_requests_are_one_per_file_whatever_the_spelling(ws):
    put(ws, "big.txt", TEN)
    (ws.root / "sub").mkdir()
    spellings = ["x1/../big.txt", "big.txt", "./big.txt", "sub/../big.txt", "sub//..//big.txt"]
    if sys.platform != "win32":
        (ws.root / "link.txt").symlink_to("big.txt")
        spellings.append("link.txt")
    outcome = run(
        ws,
        *(ReadFile(line=i, path=p) for i, p in enumerate(spellings, 1)),
        ReadFile(line=10, path="sub/../big.txt", start_line=2, end_line=3),
        ReadFile(line=11, path="big.txt", start_line=2, end_line=3),
        ReadFile(line=12, path="big.txt", start_line=2),
    )
    assert headlines(outcome) == [
        *(f"[OK] READ_FILE: '{p}' is shown under Requested File Contents" for p in spellings),
        "[OK] READ_FILE: Lines 2-3 of 'sub/../big.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: Lines 2-3 of 'big.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'big.txt' from line 2 on is shown under Requested File Contents",
    ]
    assert outcome.read_requests == [
        "x1/../big.txt",  # the first spelling is the one shown
        FileRange(path="sub/../big.txt", start_line=2, end_line=3),
        FileRange(path="big.txt", start_line=2),
    ]


MODULE = '''\
import os


def helper():
    return 1


class Parser:
    """Parses."""

    @staticmethod
    def parse(text):
        return text.split()

    async def close(self):
        pass


def parse(text):
    return Parser.parse(text)
'''


def test_read_file_symbol_shows_a_function_class_or_method_by_name(ws):
    put(ws, "mod.py", MODULE)
    outcome = run(
        ws,
        ReadFile(line=1, path="mod.py", symbol="helper"),
        ReadFile(line=2, path="mod.py", symbol="Parser.parse"),
        ReadFile(line=3, path="mod.py", symbol="parse"),
        ReadFile(line=4, path="mod.py", symbol="close"),
        ReadFile(line=5, path="mod.py", symbol="Parser"),
        ReadFile(line=6, path="mod.py", symbol="missing"),
        ReadFile(line=7, path="mod.py", symbol="helper", start_line=1),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: 'helper' (lines 4-5 of 'mod.py') is shown under Requested File Contents",
        "[OK] READ_FILE: 'Parser.parse' (lines 11-13 of 'mod.py') is shown under Requested "
        "File Contents",
        "[OK] READ_FILE: 'parse' (lines 19-20 of 'mod.py') is shown under Requested File Contents",
        "[OK] READ_FILE: 'close' (lines 15-16 of 'mod.py') is shown under Requested File Contents",
        "[OK] READ_FILE: 'Parser' (lines 8-16 of 'mod.py') is shown under Requested File Contents",
        "[FAILED] READ_FILE: No function, class or method 'missing' found in 'mod.py'; SEARCH "
        "for it, or READ_FILE with start_line and end_line",
        "[FAILED] READ_FILE: Give either symbol or start_line/end_line, not both",
    ]
    assert outcome.read_requests[:2] == [
        FileRange(path="mod.py", start_line=4, end_line=5),
        FileRange(path="mod.py", start_line=11, end_line=13),
    ]


def test_a_bare_name_finds_every_method_of_that_name():
    from codingagent.execute.symbols import find_symbol

    method = "    def run(self):\n        pass\n"
    text = f"class A:\n{method}\nclass B:\n{method}"
    assert find_symbol(text, "run", "m.py") == [(2, 3), (6, 7)]
    assert find_symbol(text, "B.run", "m.py") == [(6, 7)]
    assert find_symbol(text, "", "m.py") == []


def test_other_languages_are_parsed_with_tree_sitter_or_the_text_fallback():
    from codingagent.execute.symbols import find_symbol

    js = (
        "import x from 'x';\n"
        "export async function load(path) {\n"
        "  if (path) {\n"
        "    return read(path);\n"
        "  }\n"
        "}\n"
        "const save = (data) => {\n"
        "  write(data);\n"
        "};\n"
        "load('a');\n"
    )
    assert find_symbol(js, "load", "a.js") == [(2, 6)]
    assert find_symbol(js, "save", "a.js") == [(7, 9)]
    go = "package main\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n"
    assert find_symbol(go, "Server.Start", "a.go") == [(3, 5)]
    c = "static int\nadd(int a, int b);\nint add(int a, int b)\n{\n    return a + b;\n}\n"
    assert find_symbol(c, "add", "a.c") == [(3, 6)]
    ruby = "class Greeter\n  def hello\n    puts 'hi'\n  end\nend\n"
    assert find_symbol(ruby, "hello", "a.rb") == [(2, 4)]
    assert find_symbol(ruby, "Greeter.hello", "a.rb") == [(2, 4)]  # tree-sitter: by its place
    lua = "local function hello()\n  print('hi')\nend\n"  # no grammar: the text fallback
    assert find_symbol(lua, "hello", "a.lua") == [(1, 3)]
    broken = "def ok():\n    return 1\n\ndef broken(:\n"
    assert find_symbol(broken, "ok", "b.py") == [(1, 2)]
