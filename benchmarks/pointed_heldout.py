"""Held-out bug tasks for ``benchmarks/pointed.py`` (issue 52).

Written by a task writer who had not read the code that chooses what a first prompt shows
(nor seen how the other tasks score), as users report bugs: what they called, what they saw
and what they expected, a pasted traceback, or a failing test suite run as the session's check.
Each bug is one small edit inside one definition of a released package, checked by running the
package before and after the edit. ``pointed.py`` runs them with its own tasks; they are not to
be changed once their results are known.

    python benchmarks/pointed.py --only webcolors,sortedcontainers   # some of them
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pointed import Task

TOC_TEST = """\
import markdown
import pytest


def toc_tree(text):
    md = markdown.Markdown(extensions=["markdown.extensions.toc"])
    md.convert(text)
    return shape(md.toc_tokens)


def shape(tokens):
    return [(token["name"], shape(token["children"])) for token in tokens]


@pytest.mark.docs
def test_flat_headings():
    assert toc_tree("# One\\n\\n# Two\\n") == [("One", []), ("Two", [])]


@pytest.mark.docs
def test_nested_headings():
    assert toc_tree("# Guide\\n\\n## Install\\n\\n## Usage\\n") == [
        ("Guide", [("Install", []), ("Usage", [])])
    ]


@pytest.mark.docs
def test_back_up_after_a_deeper_heading():
    text = "# Guide\\n\\n## Install\\n\\n### Linux\\n\\n## Usage\\n\\n# Appendix\\n"
    assert toc_tree(text) == [
        ("Guide", [("Install", [("Linux", [])]), ("Usage", [])]),
        ("Appendix", []),
    ]


def test_ids_are_unique():
    md = markdown.Markdown(extensions=["markdown.extensions.toc"])
    html = md.convert("# Notes\\n\\n# Notes\\n")
    assert 'id="notes"' in html and 'id="notes_1"' in html
"""

RELATIVEDELTA_TEST = """\
import unittest
from datetime import date

from dateutil.relativedelta import relativedelta


class RenewalDatesTest(unittest.TestCase):
    def test_monthly_renewal(self):
        self.assertEqual(date(2024, 1, 31) + relativedelta(months=1), date(2024, 2, 29))

    def test_renewal_after_a_year_and_a_half(self):
        self.assertEqual(date(2023, 3, 15) + relativedelta(months=18), date(2024, 9, 15))

    def test_contract_extended_by_a_year_and_fourteen_months(self):
        self.assertEqual(
            date(2020, 6, 1) + relativedelta(years=1, months=14), date(2022, 8, 1)
        )

    def test_adding_two_extensions(self):
        total = relativedelta(years=1, months=6) + relativedelta(months=8)
        self.assertEqual(total, relativedelta(years=2, months=2))


if __name__ == "__main__":
    unittest.main()
"""

DURATIONS_TEST = """\
const test = require("node:test");
const assert = require("node:assert/strict");
const { differenceInHours } = require("../differenceInHours.cjs");
const { differenceInMinutes } = require("../differenceInMinutes.cjs");
const { differenceInDays } = require("../differenceInDays.cjs");

const start = new Date(2024, 4, 10, 9, 0);
const end = new Date(2024, 4, 10, 11, 30);

test("hours between the start and end of a shift", () => {
  assert.equal(differenceInHours(end, start), 2);
});

test("hours are counted backwards for an earlier date", () => {
  assert.equal(differenceInHours(start, end), -2);
});

test("minutes left before a deadline that has passed", () => {
  const deadline = new Date(2024, 4, 10, 9, 0, 0);
  const now = new Date(2024, 4, 10, 9, 2, 30);
  assert.equal(differenceInMinutes(deadline, now), -2);
});

test("days between two dates", () => {
  assert.equal(differenceInDays(new Date(2024, 4, 1), new Date(2024, 4, 11)), -10);
});
"""

HELDOUT_TASKS = [
    # The report names the public function; the bug is in the helper it calls.
    Task(
        "webcolors short hex",
        "webcolors==25.10.0",
        "webcolors/_normalization.py",
        "normalize_hex",
        '        hex_digits = "".join(2 * s for s in hex_digits)',
        "        hex_digits = 2 * hex_digits",
        "Three-digit hex colours convert to the wrong colour: webcolors.hex_to_rgb('#f0c') "
        "returns IntegerRGB(red=240, green=207, blue=12), but #f0c is #ff00cc, which gives "
        "IntegerRGB(red=255, green=0, blue=204). Six-digit values are fine.",
    ),
    Task(
        "sortedcontainers add split",
        "sortedcontainers==2.4.0",
        "sortedcontainers/sortedlist.py",
        "SortedList._expand",
        "            del _lists_pos[_load:]\n            _maxes[pos] = _lists_pos[-1]\n",
        "            del _lists_pos[_load:]\n",
        "A SortedList filled with add() breaks once it holds a few thousand values: after "
        "`sl = SortedList()` and `for i in range(3000): sl.add(i)`, `1500 in sl` raises "
        "IndexError: list index out of range, and when I add() random numbers the list comes "
        "out unsorted (list(sl) != sorted(values)). Building it in one go with "
        "SortedList(values) works.",
    ),
    Task(
        "parse dict fields",
        "parse==1.22.4",
        "parse/__init__.py",
        "Parser._expand_named_fields",
        "                    k = subkey[1:-1]",
        "                    k = subkey[1:]",
        "Field names with brackets keep the closing bracket in the result's keys: "
        "parse('{person[name]} is {person[age]:d}', 'Bob is 42').named gives "
        "{'person': {'name]': 'Bob', 'age]': 42}}; I expected "
        "{'person': {'name': 'Bob', 'age': 42}}. Plain field names work.",
    ),
    Task(
        "ini semicolon comment",
        "ini@6.0.0",
        "lib/ini.js",
        "unsafe",
        "      } else if (';#'.indexOf(c) !== -1) {",
        "      } else if ('#'.indexOf(c) !== -1) {",
        "ini.parse no longer strips comments that start with ';' at the end of a line: "
        "ini.parse('port = 8080 ; default port') returns { port: '8080 ; default port' } "
        "instead of { port: '8080' }. End-of-line comments starting with '#' are still "
        "removed.",
    ),
    # The report names a kind of thing; its handler holds the word, among its siblings.
    Task(
        "packaging compatible release",
        "packaging==24.1",
        "packaging/specifiers.py",
        "Specifier._compare_compatible",
        '        return self._get_operator(">=")(prospective, spec) and',
        '        return self._get_operator(">")(prospective, spec) and',
        "A compatible-release specifier rejects the version it names: "
        "SpecifierSet('~=2.31.0').contains('2.31.0') is False (2.31.1 is accepted), so "
        "requests~=2.31.0 is not satisfied by requests 2.31.0. '>=2.31.0,<2.32' accepts "
        "2.31.0 as expected.",
    ),
    Task(
        "marked ordered list start",
        "marked@12.0.2",
        "lib/marked.cjs",
        "_Tokenizer.list",
        "                start: isordered ? +bull.slice(0, -1) : '',",
        "                start: isordered ? +bull.slice(0, 1) : '',",
        "Ordered lists that start at 10 or above lose their number: "
        "marked.parse('10. ten\\n11. eleven') gives '<ol>' (so the browser numbers them from "
        '1) instead of \'<ol start="10">\', and a list starting at 25 gets start="2". Lists '
        "starting at 2 to 9 are right.",
    ),
    # The report names two public functions that share the buggy helper.
    Task(
        "validator host regexps",
        "validator@13.15.35",
        "lib/util/checkHost.js",
        "isRegExp",
        "  return Object.prototype.toString.call(obj) === '[object RegExp]';",
        "  return Object.prototype.toString.call(obj) === '[object Regexp]';",
        "Regular expressions in host_whitelist and host_blacklist are ignored: "
        r"validator.isURL('https://api.example.com/v1', { host_whitelist: [/\.example\.com$/] })"
        " returns false, and validator.isEmail('joe@spam.example.com', { host_blacklist: "
        r"[/^spam\./] }) returns true. Plain host names in those lists still work.",
    ),
    # A pasted traceback.
    Task(
        "tomli offset crash",
        "tomli==2.0.1",
        "tomli/_re.py",
        "cached_tz",
        "            minutes=sign * int(minute_str),",
        "            minutes=sign * minute_str,",
        "tomli.loads fails on every date-time with a UTC offset (ones ending in Z load "
        "fine):\n\n{traceback}",
        "import tomli\ntomli.loads('released = 1979-05-27T07:32:00-08:00')",
    ),
    Task(
        "js-yaml chomping crash",
        "js-yaml@4.1.0",
        "lib/loader.js",
        "readBlockScalar",
        "      if (CHOMPING_CLIP === chomping) {",
        "      if (CHOMPING_CLIP !== chomping) {",
        "Since updating, js-yaml refuses every block scalar with a chomping indicator (|- or "
        ">+); a plain | still loads:\n\n{traceback}",
        "const yaml = require('./index.js');\nyaml.load('script: |-\\n  npm ci\\n  npm test\\n');",
    ),
    # A failing test suite, run as the session's check.
    Task(
        "markdown toc check",
        "markdown==3.11.3",
        "markdown/extensions/toc.py",
        "nest_toc_tokens",
        "                    if current_level <= p['level']:",
        "                    if current_level < p['level']:",
        "Fix the failing test in tests/test_toc.py.",
        check="python -m pytest -q tests/test_toc.py",
        tests={"tests/test_toc.py": TOC_TEST},
    ),
    Task(
        "dateutil relativedelta check",
        "python-dateutil==4.0.0",
        "dateutil/relativedelta.py",
        "relativedelta._fix",
        "            self.years += div * s",
        "            self.years = div * s",
        "tests/test_relativedelta.py fails: a relativedelta of a year plus more than twelve "
        "months comes out a year short.",
        check="python -m unittest tests/test_relativedelta.py",
        tests={"tests/test_relativedelta.py": RELATIVEDELTA_TEST},
    ),
    Task(
        "date-fns rounding check",
        "date-fns@4.4.0",
        "_lib/getRoundingMethod.cjs",
        "getRoundingMethod",
        "    const round = method ? Math[method] : Math.trunc;",
        "    const round = method ? Math[method] : Math.floor;",
        "test/durations.test.cjs fails: when the first date is the earlier one, "
        "differenceInHours and differenceInMinutes come out one lower than they should "
        "(differenceInHours gives -3 for a gap of 2 hours 30 minutes).",
        check="node --test test/durations.test.cjs",
        tests={"test/durations.test.cjs": DURATIONS_TEST},
    ),
]
