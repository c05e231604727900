"""The general rules the held-out tasks of issue 52 showed were missing (codingagent/prompt/
pointing/, docs/prompts.md, "The code the task points at"), each on a small tree in a real
workspace: a bare call is no method's, building a class runs its constructor, a function
handed on by name is called, what made the values a failing line reads is one frame below
it, a word the report says besides the names it uses stays a word, a name's part that runs
the task's words together is read as them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from codingagent.codemap.lexical import Doc, query, scores
from codingagent.prompt.pointing.calls import called
from codingagent.prompt.pointing.comments import uncommented
from codingagent.prompt.pointing.definitions import Tree
from codingagent.prompt.pointing.evidence import Evidence, gather, rank
from codingagent.workspace import Workspace

FILLERS = "".join(f"\n\ndef filler_{n}(x):\n    return x + {n}\n" for n in range(20))


def evidence(tmp_path: Path, files: dict[str, str], task: str) -> tuple[Evidence, list[str]]:
    """The evidence ``task`` gives in a tree of ``files``, and the qualified names of the
    definitions it ranks, best first."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    ws = Workspace(tmp_path)
    found = gather(Tree(ws, ws.list_files(limit=100), None), task, None)
    return found, [found.defs[key][1] for _, key in rank(found)]


PY_UTIL = (
    "def col(loc, text):\n"
    '    """Where ``loc`` falls on its line, from 1."""\n'
    '    return loc - text.rfind("\\n", 0, loc)\n' + FILLERS
)
PY_ERRORS = (
    "from .util import col\n\n\n"
    "class ParseError(Exception):\n"
    "    def __init__(self, text, loc):\n"
    "        self.text, self.loc = text, loc\n\n"
    "    @property\n"
    "    def col(self):\n"
    "        return col(self.loc, self.text)\n\n"
    "    @property\n"
    "    def column(self):\n"
    "        return col(self.loc, self.text)\n"
)
JS_UTIL = "function col(loc, text) {\n  return loc - text.lastIndexOf('\\n', loc);\n}\n"
JS_ERRORS = (
    "const { col } = require('./util');\n\n"
    "class ParseError extends Error {\n"
    "  col() {\n    return col(this.loc, this.text);\n  }\n\n"
    "  column() {\n    return col(this.loc, this.text);\n  }\n"
    "}\n"
)


@pytest.mark.parametrize(
    "files",
    [
        {"pkg/__init__.py": "", "pkg/util.py": PY_UTIL, "pkg/errors.py": PY_ERRORS},
        {"pkg/util.js": JS_UTIL + "\nmodule.exports = { col };\n", "pkg/errors.js": JS_ERRORS},
    ],
    ids=["python", "javascript"],
)
def test_a_bare_call_is_the_function_the_file_imports_not_the_method_beside_it(
    tmp_path: Path, files: dict[str, str]
) -> None:
    """``col(self.loc, self.text)`` in the method ``column`` calls the module's ``col``
    (a method is called on its object: ``self.col``), not the method ``col`` beside it."""
    task = "ParseError's column is off by one: e.column gives 5 for an error at the first character"
    found, ranked = evidence(tmp_path, files, task)
    assert ranked[0] == "ParseError.column"  # named
    assert "col" in ranked[:3]  # what it calls: the module's function
    util = next(rel for rel in files if "util" in rel)
    assert any(key[0] == util for key in found.calls[next(iter(found.strength["named"]))])


DELTA = (
    "from .carry import carried\n\n\n"
    "def add_months(years, months):\n"
    "    return Delta(years, months)\n\n\n"
    "class Delta:\n"
    "    def __init__(self, y, m):\n"
    "        self.y, self.m = y, m\n"
    "        self._fix()\n\n"
    "    def _fix(self):\n"
    "        self.y, self.m = carried(self.y, self.m)\n"
    + "".join(f"\n    def step_{n}(self):\n        return self.m + {n}\n" for n in range(30))
)
CARRY = "def carried(y, m):\n    return y + m // 13, m % 13\n" + FILLERS


def test_building_a_class_calls_its_constructor(tmp_path: Path) -> None:
    """``add_months`` builds a ``Delta``: what runs is ``Delta.__init__``, and what it calls
    (``_fix``), though a class is too long to follow."""
    files = {"cal/__init__.py": "", "cal/delta.py": DELTA, "cal/carry.py": CARRY}
    task = "add_months(1, 14) keeps 1 year and 14 months; it should make 2 years and 2 months"
    _, ranked = evidence(tmp_path, files, task)
    assert ranked[:3] == ["add_months", "Delta.__init__", "Delta._fix"]


PARSE_JS = (
    "const { parse } = require('./regex');\n\n"
    "const dateRegex = /(\\d+)-(\\d+)/;\n\n"
    "function extractDate(match) {\n"
    "  const [, y, m] = match;\n"
    "  return { y: Number(y), m: Number(m) - 2 };\n"
    "}\n\n"
    "function parseDate(s) {\n"
    "  return parse(s, [dateRegex, extractDate]);\n"
    "}\n\n"
    "module.exports = { parseDate };\n"
)
REGEX_JS = (
    "function parse(s, [regex, extractor]) {\n"
    "  const m = regex.exec(s);\n"
    "  return m ? extractor(m) : null;\n"
    "}\n\nmodule.exports = { parse };\n"
)


def test_a_function_handed_on_by_name_is_called(tmp_path: Path) -> None:
    """``parse(s, [dateRegex, extractDate])`` hands ``extractDate`` on: it is called, by
    what it is handed to (a constant handed on is not)."""
    files = {"lib/dates.js": PARSE_JS, "lib/regex.js": REGEX_JS}
    found, ranked = evidence(tmp_path, files, "parseDate('2024-03') gives month 1, not 3")
    assert ranked[0] == "parseDate"
    assert "extractDate" in ranked[1:3] and "parse" in ranked[1:3]
    assert "dateRegex" not in [found.defs[key][1] for keys in found.calls.values() for key in keys]


GRAPH = (
    "def _check(G, source):\n"
    "    if source not in G:\n"
    "        raise KeyError(source)\n\n\n"
    "def _pred_succ(G, source, target):\n"
    "    pred, succ = {source: None}, {target: None}\n"
    "    return pred, succ, source\n\n\n"
    "def _log(message):\n"
    "    return message\n\n\n"
    "def shortest(G, source, target):\n"
    "    _check(G, source)\n"
    "    _log('searching')\n"
    "    results = _pred_succ(G, source, target)\n"
    "    pred, succ, w = results\n"
    "    path = [w]\n"
    "    w = succ[path[-1]]\n"
    "    return path\n" + FILLERS
)


def test_what_made_the_values_a_failing_line_reads_is_a_frame_below_it(tmp_path: Path) -> None:
    """The traceback ends in ``shortest`` at ``w = succ[path[-1]]`` (a KeyError): ``succ`` came
    from ``results``, from ``_pred_succ``: it counts as a frame one below; ``_check`` and
    ``_log``, called before it too, do not."""
    line = GRAPH.split("\n").index("    w = succ[path[-1]]") + 1
    task = (
        "shortest crashes:\n\nTraceback (most recent call last):\n"
        f'  File "/usr/lib/python3/site-packages/graphs/paths.py", line {line}, in shortest\n'
        "    w = succ[path[-1]]\n"
        "KeyError: 'b'\n"
    )
    found, ranked = evidence(tmp_path, {"graphs/__init__.py": "", "graphs/paths.py": GRAPH}, task)
    framed = {found.defs[key][1]: strength for key, strength in found.strength["frame"].items()}
    assert framed == {"shortest": 1.0, "_pred_succ": 0.8}
    assert set(ranked[:2]) == {"shortest", "_pred_succ"}  # before _check and _log


ZONES = (
    "class DateTime:\n"
    "    @staticmethod\n"
    "    def from_rfc2822(text):\n"
    "        return DateTime()\n\n\n"
    "def rfc2822_zone(key):\n"
    "    return OFFSETS.get(key, 0)\n\n\n"
    + "".join(
        f"def zone_{word}(key):\n    return {n}\n\n\n"
        for n, word in enumerate(("local", "system", "fixed", "iana"))
    )
)


def test_a_word_the_report_says_besides_the_names_it_uses_stays_a_word(tmp_path: Path) -> None:
    """``DateTime.from_rfc2822`` is named (its words are evidence of their own, not words),
    but the report also says "RFC 2822" in its own words: ``rfc2822_zone`` holds it, and
    ranks above the other zone functions."""
    task = (
        "DateTime.from_rfc2822 reads the zone names of RFC 2822 dates as UTC: "
        "DateTime.from_rfc2822('1 Nov 2016 13:23') has no zone"
    )
    found, ranked = evidence(tmp_path, {"dates.py": ZONES}, task)
    worded = {found.defs[key][1]: strength for key, strength in found.strength["words"].items()}
    assert worded["rfc2822_zone"] > worded["zone_local"]  # "rfc", not only "zone"
    assert ranked[:2] == ["DateTime.from_rfc2822", "rfc2822_zone"]


def test_a_name_s_part_that_runs_the_task_s_words_together_is_read_as_them() -> None:
    """``_wrap_inlinelinenos`` holds "inline" and "linenos" (its part is both, run together;
    a stem's cut "e" put back); ``tablelinenos`` none, its "table" not the task's: a part is
    read as the task's words only when it is them all through."""
    task = query("linenostart is ignored with inline line numbers: linenos='inline'")
    names = ("_wrap_inlinelinenos", "_wrap_tablelinenos", "_wrap_div", "inlinelineno_style")
    found = scores(task, [Doc("html.py", name, Counter()) for name in names])
    got = dict(zip(names, found, strict=True))
    assert got["_wrap_inlinelinenos"] > 0  # "inline" and "linenos"
    assert got["_wrap_tablelinenos"] == got["_wrap_div"] == 0  # "table" is not the task's
    assert got["inlinelineno_style"] == got["_wrap_inlinelinenos"]  # its "style" is a part


def test_a_comment_is_left_out_and_a_string_is_not_a_comment() -> None:
    """What a build keeps of a source: its comments gone (their lines kept, so lines keep
    their numbers), a comment sign inside a string kept; a call a comment mentions is no
    call."""
    js = (
        "const url = 'http://x.org/#top'; // the home page\n"
        "/* a block\n   of two lines */ run(`a // b\n${c}`);\n"
        "const re = /['\"]/; next(); // a stray quote spoils that line only\n"
    )
    assert uncommented(js, "javascript") == (
        "const url = 'http://x.org/#top'; \n\n run(`a // b\n${c}`);\n"
        "const re = /['\"]/; next(); // a stray quote spoils that line only\n"
    )
    py = 'x = "#1"  # a note: see _fix()\n"""a # doc"""\n'
    assert uncommented(py, "python") == 'x = "#1"  \n"""a # doc"""\n'
    assert uncommented(py, None) == py
    assert called(uncommented(py, "python")) == []
