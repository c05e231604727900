"""The code the task points at, chosen by evidence (codingagent/prompt/pointing/evidence.py, docs/
prompts.md): what the failing tests call into the code under test, on the class the test
builds; names resolved to the file a caller imports or the file named after them; a long
definition shown as its outline and the part the evidence points at; lines of a test run
that are not frames never read as frames. Driven through the real command line on real code
in a workspace; the failing suites run by a real pytest as the check."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_pointed import benchmark, section, whole
from test_project_context import make_run, start

from codingagent.prompt.pointing.definitions import Tree
from codingagent.prompt.pointing.evidence import WEIGHTS, Evidence, gather, rank
from codingagent.prompt.pointing.frames import Frame, frames, raises
from codingagent.prompt.pointing.pointed import CHECK_TOKENS, PASTED_TOKENS, pointed_tokens
from codingagent.protocol.commands import numbered
from codingagent.workspace import Workspace

PYTEST_RUN = """\
=================================== FAILURES ===================================
___________________________ TestSquare.test_area _____________________________

self = <tests.test_shapes.TestSquare testMethod=test_area>

    def test_area(self):
>       self.assertEqual(self.make(3).area(), 9)
E       AssertionError: 6 != 9

tests/test_shapes.py:12: AssertionError
----------------------------- Captured stdout call -----------------------------
see shapes/legacy.py:40 for the old formula
------------------------------ Captured log call -------------------------------
WARNING  shapes.cache:cache.py:17 cache cold
=============================== warnings summary ===============================
tests/__init__.py:9
  /home/me/proj/tests/__init__.py:9: DeprecationWarning: helpers move to tests.support
    warnings.warn(

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
=========================== short test summary info ============================
FAILED tests/test_shapes.py::TestSquare::test_area - AssertionError: 6 != 9
/home/me/proj/shapes/core.py:3: UserWarning: float areas are rounded
"""


def test_lines_of_a_test_run_that_are_not_frames_are_never_frames() -> None:
    assert frames(PYTEST_RUN) == [
        Frame("tests/test_shapes.py", 12, None),
        Frame("tests/test_shapes.py", None, "TestSquare.test_area"),
    ]
    # a warning as Python prints it, and a log line, are no frames anywhere
    assert frames("src/app.py:3: DeprecationWarning: old\nINFO     app:app.py:9 hi\n") == []
    assert frames('  File "src/app.py", line 3, in load\n') == [Frame("src/app.py", 3, "load")]


SHAPES = (
    "class Circle:\n"
    "    def __init__(self, r):\n        self.r = r\n\n"
    "    def area(self):\n        return 3 * self.r * self.r\n\n\n"
    "class Square:\n"
    "    def __init__(self, side):\n        self.side = side\n\n"
    "    def area(self):\n        return self.side * 2\n"
    + "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(40))
)
TESTS_INIT = (
    '"""Helpers of the tests."""\n'
    "import warnings\n\n\n"
    "class Legacy:\n"
    "    def old(self):\n"
    "        warnings.warn(\n"
    "            'helpers move to tests.support', DeprecationWarning, stacklevel=1\n"
    "        )\n"
    + "".join(f"\n    def legacy_{n}(self):\n        return {n}\n" for n in range(30))
    + "\n\nLegacy().old()\n"
)
TESTS = (
    "import unittest\n\n"
    "from shapes.core import Square\n\n\n"
    "class AreaTests:\n"
    "    def test_area(self):\n"
    "        self.assertEqual(self.make(3).area(), 9)\n\n\n"
    "class TestSquare(AreaTests, unittest.TestCase):\n"
    "    def make(self, n):\n"
    "        return Square(n)\n"
)


@pytest.mark.slow
def test_a_failing_unittest_suite_points_at_the_method_its_tests_call(tmp_path: Path) -> None:
    """All frames are in test code, and pytest's warnings summary names a line of the tests'
    helpers: the section shows what the failing test calls, on the class the test builds."""
    files = {
        "shapes/__init__.py": "",
        "shapes/core.py": SHAPES,
        "tests/__init__.py": TESTS_INIT,
        "tests/test_shapes.py": TESTS,
    }
    run = make_run(tmp_path, files)
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider -W default tests"
    start(run, "The tests fail. Please fix the library, not the tests.", "--check", check)
    prompt = run.prompt()
    assert "warnings summary" in prompt and "tests/__init__.py:7" in prompt  # pytest said so
    shown = section(prompt)
    first = shown.split("\n", 2)[1]
    assert first == "--- shapes/core.py ---"
    assert "  13 |     def area(self):\n  14 |         return self.side * 2" in shown
    assert shown.index("return self.side * 2") < shown.index("def test_area")
    assert "def old(self)" not in shown and "legacy_" not in shown  # the warning's line


DISPATCH = (
    "from .pad import pad\n\n\n"
    "def convert(kind, value):\n"
    '    """Convert ``value`` to text as ``kind`` says."""\n'
    + "".join(
        f"    {'if' if n == 0 else 'elif'} kind == 'kind{n}':\n"
        f"        text = str(value) + '{n}'\n"
        f"        text = text.strip()\n"
        f"        return text.upper()\n"
        for n in range(40)
    )
    + "    elif kind == 'number':\n"
    "        return pad(str(value), 2)\n"
    + "".join(f"    elif kind == 'late{n}':\n        return str(value) * {n}\n" for n in range(30))
    + "    raise ValueError(kind)\n\n\n"
    "def render(value):\n"
    "    return '[' + pad(str(value), 2) + ']'\n"
)
PAD = "def pad(text, width):\n    return text.rjust(width - 1, '0')\n"


def test_a_long_definition_is_its_outline_and_the_part_the_evidence_points_at(
    tmp_path: Path,
) -> None:
    run = make_run(tmp_path, {"fmt/__init__.py": "", "fmt/core.py": DISPATCH, "fmt/pad.py": PAD})
    start(run, "convert('number', 5) gives '5' and render(5) gives '[5]': expected '05', '[05]'")
    shown = section(run.prompt())
    lines = DISPATCH.split("\n")
    calling = lines.index("        return pad(str(value), 2)") + 1
    assert whole(PAD, "pad", "fmt/pad.py", shown)  # the helper both named functions call
    assert whole(DISPATCH, "render", "fmt/core.py", shown)
    assert "   4 | def convert(kind, value):" in shown  # its first line, numbered
    assert f"{calling:>4} |         return pad(str(value), 2)" in shown  # the part pointed at
    assert f"{calling - 1:>4} |     elif kind == 'number':" in shown  # and the lines around it
    gaps = re.findall(r"^     \.\.\. \(lines (\d+)-(\d+) not shown\)$", shown, re.M)
    assert gaps and all(int(a) <= int(b) for a, b in gaps)
    assert "kind == 'kind20'" not in shown  # the rest of it is left out
    numbered = [int(n) for n in re.findall(r"^\s*(\d+) \| ", shown, re.M)]
    assert len(numbered) < len(lines) // 2
    assert len(shown) <= PASTED_TOKENS * 4


def test_a_name_is_the_definition_of_the_file_its_caller_imports(tmp_path: Path) -> None:
    """A tree of one function a file, each also as an ``.mjs`` copy and a ``.d.ts``
    declaration, and a name many files define: the one the caller requires is shown."""
    iso = (
        '"use strict";\nvar _pad = require("./_lib/pad.js");\n\n'
        "function formatISO(date) {\n"
        "  return [(0, _pad.pad)(date.year, 4), (0, _pad.pad)(date.month, 2)].join('-');\n}\n"
    )
    files = {
        "formatISO.js": iso,
        "formatISO.mjs": iso.replace('var _pad = require("./_lib/pad.js");', ""),
        "formatISO.d.ts": "export declare function formatISO(date: Date): string;\n",
        "_lib/pad.js": (
            "function pad(n, width) {\n  return String(n).padStart(width - 1, '0');\n}\n"
        ),
        "_lib/pad.mjs": "export function pad(n, width) {\n  return String(n);\n}\n",
        **{
            f"locale/l{n}/pad.js": f"function pad(n) {{\n  return '{n}' + n;\n}}\n"
            for n in range(6)
        },
    }
    run = make_run(tmp_path, files)
    start(run, "formatISO({ year: 2024, month: 3 }) gives '2024-3': the month lost its zero")
    shown = section(run.prompt())
    assert shown.split("\n", 2)[1] == "--- formatISO.js ---"
    assert "--- _lib/pad.js ---" in shown and "padStart(width - 1" in shown
    assert ".mjs ---" not in shown and ".d.ts ---" not in shown and "locale/" not in shown


def test_the_check_s_output_takes_its_share_of_a_pasted_chat_s_budget() -> None:
    assert pointed_tokens(None, failing=True) == PASTED_TOKENS - CHECK_TOKENS
    assert pointed_tokens(32_768, failing=True) == pointed_tokens(32_768) == 4096


def test_a_test_counts_a_share_of_its_score_and_callers_hand_on_a_share() -> None:
    found = Evidence()
    code, test = ("lib.py", 1, 5), ("tests/test_lib.py", 1, 5)
    callee = ("lib.py", 7, 9)
    for key in (code, test, callee):
        found.defs[key] = ("f", "f", "function", key[1], key[2], "def f():")
    found.strength = {"named": {code: 1.0}, "test_frame": {test: 1.0}}
    found.calls = {code: [callee]}
    scores = dict((key, score) for score, key in rank(found))
    assert scores[code] == WEIGHTS.named
    assert scores[callee] == WEIGHTS.callee * WEIGHTS.named
    assert scores[test] == WEIGHTS.test_frame * WEIGHTS.test_share


def test_leave_one_out_chooses_the_weights_without_the_task_it_scores() -> None:
    bench = benchmark()
    held = {"a": [True, False], "b": [True, True], "c": [False, True]}
    # left out, "a" is scored with the second weights (they hold b and c), which miss it
    assert bench.loo_choice(held, default=0) == {"a": 1, "b": 0, "c": 0}


LOADER_HEAD = (
    "'use strict';\n\n"
    "class LoaderError extends Error {}\n\n"
    "function generateError(state, message) {\n"
    "  const mark = { position: state.position, line: state.line };\n"
    "  return new LoaderError(message + ' at ' + mark.line);\n"
    "}\n\n"
    "function throwError(state, message) {\n"
    "  throw generateError(state, message);\n"
    "}\n\n"
)
READ_BLOCK = (
    "function readBlock(state, indicator) {\n"
    "  let chomping = 'clip';\n"
    + "".join(
        f"  const step{n} = state.input.charCodeAt(state.position + {n}) + indentOf(state, {n});\n"
        for n in range(70)
    )
    + "  if (indicator === '-' || indicator === '+') {\n"
    "    if (chomping !== 'clip') {\n"
    "      throwError(state, 'repeat of a chomping mode identifier');\n"
    "    }\n"
    "    chomping = indicator === '+' ? 'keep' : 'strip';\n"
    "  }\n"
    + "".join(f"  state.position += step{n} > 0 ? 1 : 0;\n" for n in range(70))
    + "  return chomping;\n"
    "}\n\n"
)
LOADER_TAIL = (
    "function indentOf(state, n) {\n  return state.indent + n;\n}\n\n"
    "function compose(state, indicator) {\n  return readBlock(state, indicator);\n}\n\n"
    "function load(input) {\n"
    "  return compose({ input, position: 0, line: 0, indent: 0 }, input[0]);\n"
    "}\n\n"
    "module.exports = { load };\n"
)


def test_the_function_calling_an_error_helper_is_the_deepest_frame_and_shown_whole(
    tmp_path: Path,
) -> None:
    """A traceback whose deepest frames are error helpers (``generateError``, built by
    ``throwError``): the function that called them is where the trace points, and, the
    evidence clearly leading to it, it is shown whole though it takes more than half of the
    section."""
    text = LOADER_HEAD + READ_BLOCK + LOADER_TAIL
    lines = text.split("\n")

    def line(code: str) -> int:
        return next(n for n, line in enumerate(lines, 1) if code in line)

    where = "/home/me/app/node_modules/pkg/lib/loader.js"
    trace = "\n".join(
        f"    at {name} ({where}:{line(code)}:9)"
        for name, code in (
            ("generateError", "return new LoaderError"),
            ("throwError", "throw generateError"),
            ("readBlock", "throwError(state, 'repeat"),
            ("compose", "return readBlock(state"),
            ("Object.load", "return compose({"),
        )
    )
    run = make_run(tmp_path, {"lib/loader.js": text, "index.js": "require('./lib/loader');\n"})
    start(run, f"load('|-') throws since the update:\nLoaderError: repeat of a chomping\n{trace}")
    shown = section(run.prompt())
    block = READ_BLOCK.rstrip("\n").split("\n")
    first = line("function readBlock(")
    assert "\n".join(numbered(block, first)) in shown  # every line of it, numbered
    assert len(READ_BLOCK) > (PASTED_TOKENS * 4) // 2  # more than half the section
    assert "throw generateError(state, message);" in shown  # the helpers, small, too


def test_a_definition_the_evidence_clearly_leads_to_is_shown_whole(tmp_path: Path) -> None:
    """The one definition the task names, scoring more than twice the next: whole, though
    it takes more than half of the section."""
    body = "".join(
        f"        value_{n} = line.partition('=')[2].strip().removesuffix(';') + '{n}'\n"
        for n in range(110)
    )
    parse = (
        "def parse_config(text):\n"
        "    found = {}\n"
        "    for line in text.splitlines():\n" + body + "        found[_key(line)] = _rhs(line)\n"
        "    return _checked(_merged(found))\n"
    )
    helpers = "".join(
        f"\n\ndef _{name}(x):\n    return x\n" for name in ("key", "rhs", "checked", "merged")
    )
    run = make_run(tmp_path, {"conf/parse.py": parse + helpers, "conf/__init__.py": ""})
    start(run, "parse_config('a = 1') returns {'a': ''}: the values are lost")
    shown = section(run.prompt())
    assert len(parse) > (PASTED_TOKENS * 4) // 2
    assert whole(parse, "parse_config", "conf/parse.py", shown)


def test_a_line_raises_when_it_throws_or_builds_an_error() -> None:
    raising = (
        "throw generateError(state, message);",
        "return new YAMLException(message, mark);",
        "raise ValueError(kind)",
        "        raise",
        "return makeError('no colon')",
    )
    assert all(raises(line) for line in raising)
    plain = ("total += price(item)", "errors.append(line)", "if (isError) {", "throwing = 1")
    assert not any(raises(line) for line in plain)


STEPS = "".join(
    f"\n\ndef _step_{n}(rows):\n"
    + "".join(
        f"    rows = [list(row) for row in rows if row is not None]  # {m}\n" for m in range(20)
    )
    + "    return rows\n"
    for n in range(30)
)
TABLE = (
    "def _afterpoint(text):\n"
    '    """Digits after the point, -1 without one."""\n'
    '    if "." not in text:\n'
    "        return 0\n"
    '    return len(text) - text.index(".")\n\n\n'
    "def _choose(column, how):\n"
    '    if how == "decimal":\n'
    "        points = [_afterpoint(text) for text in column]\n"
    "        most = max(points)\n"
    '        return [text + " " * (most - point) for text, point in zip(column, points)]\n'
    "    return column\n\n\n"
    'def _align(column, how="decimal"):\n'
    "    padded = _choose(column, how)\n"
    "    width = max(len(text) for text in padded)\n"
    "    return [text.rjust(width) for text in padded]\n"
    + STEPS
    + '\n\ndef render(rows, how="decimal"):\n'
    + "".join(f"    rows = _step_{n}(rows)\n" for n in range(30))
    + "    columns = list(zip(*rows))\n"
    "    aligned = [_align([str(value) for value in column], how) for column in columns]\n"
    '    return "\\n".join(" ".join(cells) for cells in zip(*aligned))\n'
)
CASES = [
    ("[[2, 1.5], [2.5, 10]]", "2      1.5\\n 2.5 10   "),
    ("[[7], [7.25]]", "7    \\n 7.25"),
    ("[['a', 1], ['b', 2.5]]", "a 1   \\nb  2.5"),
]
TABLE_TESTS = "from tab.table import render\n" + "".join(
    f"\n\ndef test_render_{n}():\n    assert render({rows}) == '{text}'\n"
    for n, (rows, text) in enumerate(CASES * 3)
)
ALIGN_TESTS = (
    "from tab.table import _align\n\n\n"
    "def test_align():\n"
    "    assert _align(['2', '2.5']) == ['2   ', ' 2.5']\n"
)


def test_what_every_failing_test_reaches_is_where_one_fault_is(tmp_path: Path) -> None:
    """Nine failing tests call ``render`` (30 steps and ``_align`` below it), one calls
    ``_align`` directly: what they all reach (``_align``, ``_choose`` and the ``_afterpoint``
    it calls, three calls below ``render``) is ``shared`` evidence, what only some reach is
    not: ``_afterpoint`` ranks above ``render``, though nothing names it."""
    files = {
        "tab/__init__.py": "",
        "tab/table.py": TABLE,
        "tests/test_table.py": TABLE_TESTS,
        "tests/test_internal.py": ALIGN_TESTS,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    tests = ["test_internal.py::test_align"]
    tests += [f"test_table.py::test_render_{n}" for n in range(9)]
    failure = "".join(f"FAILED tests/{test} - AssertionError\n" for test in tests)
    ws = Workspace(tmp_path)
    task = "The tests fail since my last change. Please fix the library."
    found = gather(Tree(ws, ws.list_files(limit=100), None), task, failure)
    shared = {found.defs[key][1]: strength for key, strength in found.strength["shared"].items()}
    assert shared.keys() == {"_align", "_choose", "_afterpoint"}
    assert set(shared.values()) == {1 - 3 / 34}  # of the 34 definitions they reach
    ranked = [found.defs[key][1] for _, key in rank(found)]
    assert ranked[:4] == ["_align", "_choose", "_afterpoint", "render"]  # before the steps
