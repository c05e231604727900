"""Whether a first prompt holds the code a bug report points at (issues 44 and 52), on real
libraries.

    python benchmarks/pointed.py                # 27 bug tasks and 24 more, a pasted chat
    python benchmarks/pointed.py --window 8192  # the same with --context-tokens 8192
    python benchmarks/pointed.py --only ms,qs   # some of them
    python benchmarks/pointed.py --loo          # leave-one-out over the ranking's weights
    python benchmarks/pointed.py --cost         # what the section costs on a big tree

Each task is a released pure-Python or JavaScript package, downloaded with ``pip download``
(a wheel; ``sdist:name==version``: the source distribution, its tests and all) or ``npm
pack`` (its dependencies installed beside it) into ``benchmarks/.cache/`` (git-ignored;
once) and unpacked into a fresh workspace; a bug is injected (one edit to one definition,
checked to apply exactly once); the task's ``tests`` are written into it; and a session is
started on it through the real command line (``codingagent start TASK --no-watch``, as a
pasted chat starts; with the task's ``check`` as ``--check``), the task worded as a user
reports the bug: what they called and what they saw, never the line. Two tasks paste a
traceback, made by running the buggy code (Python, or Node.js), its paths rewritten to an
installed copy's, as a user's are; four are failing suites, whose check gives the evidence.
The tasks of ``pointed_heldout.py`` beside this file, when it is there, are run too: written
by an independent writer who had not read the ranking, held out until issue 52's ranking was
measured on them, tuned on since (column ``written``: ``independent``). So are those of
``pointed_heldout2.py``: a second independent writer's, written after that ranking change,
held out from the tuning that followed it, measured, and tuned on by the one after that
(column ``written``: ``independent 2``); and those of ``pointed_heldout3.py``, a third
independent writer's, written before the last tuning and never seen by it: the honest measure
(column ``written``: ``held out``). docs/prompts.md says when each was written and measured.

Printed, one markdown row a task: when it was written, whether the first prompt holds the
whole definition that must change (every line, numbered as READ_FILE numbers it), where (the
Code the Task Points At section, or only its first line in the Code Map), and the first
prompt's size in tokens: by the prompt's own estimate (four characters a token) and by the
bound the window fitting uses (a token per three bytes). Deterministic: no timing.

``--loo`` scores each task with the weights (of ``GRID``) that hold the most of the others,
as the section alone of its first prompt shows it; and says how many tasks each setting
holds. ``--cost`` times the section alone (``prompt.pointing.pointed.pointed_section``, as a first
prompt makes it, a pasted chat's budget) on the generated trees of ``benchmarks/codemap.py``
(1,000 and 10,000 files), already mapped once (the tags and graph cached, as for a new
session on a tree seen before), a new task each run and the word caches cleared (as in a new
process): medians of five runs, wall and CPU, beside the cached map of the same tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from click.testing import CliRunner

from codingagent.codemap import lexical
from codingagent.execute.symbols import find_symbol
from codingagent.frontends.cli import main
from codingagent.prompt.compose import LISTING_FILES, LISTING_SIZES
from codingagent.prompt.fitting import estimate
from codingagent.prompt.mapview import map_section
from codingagent.prompt.outbox import CACHE as KEPT
from codingagent.prompt.pointing.definitions import Tree
from codingagent.prompt.pointing.evidence import WEIGHTS, Weights, gather, rank
from codingagent.prompt.pointing.pointed import (
    CHARS_PER_TOKEN,
    PASTED_TOKENS,
    pointed_section,
    pointed_tokens,
    section,
)
from codingagent.prompt.render import estimate_tokens
from codingagent.state import SessionState
from codingagent.workspace import Workspace

CACHE = Path(__file__).resolve().parent / ".cache"
SITE = "/home/me/.venv/lib/python3.12/site-packages/"
NODE_MODULES = "/home/me/app/node_modules/{package}/"
SECTION = "## Code the Task Points At"


@dataclass(frozen=True)
class Task:
    name: str
    package: str  # pip's "name==version" or npm's "name@version"
    path: str  # the file the bug is in, from the workspace root
    symbol: str  # the definition that must change (READ_FILE symbol=)
    old: str  # the text the bug replaces (exactly once in the file)
    new: str
    report: str  # the task, as a user writes it; {traceback} where the traceback goes
    crash: str = ""  # code that shows the traceback: Python (pip) or Node.js (npm)
    check: str = ""  # a shell command passed as --check ({python}: this Python)
    tests: dict[str, str] = field(default_factory=dict)  # files written into the workspace


TASKS = [
    Task(
        "humanize intcomma",
        "humanize==4.9.0",
        "humanize/number.py",
        "intcomma",
        r'r"^(-?\d+)(\d{3})"',
        r'r"^(-?\d+)(\d{2})"',
        "Thousands separators are wrong: humanize.intcomma(1234567) gives '1,23,45,67' but it "
        "should be '1,234,567'.",
    ),
    Task(
        "python-slugify word boundary",
        "python-slugify==8.0.4",
        "slugify/slugify.py",
        "smart_truncate",
        "                truncated += '{}'.format(word)\n                break",
        "                break",
        "With max_length and word_boundary=True, slugify drops the last word even when it "
        "fits exactly: slugify('one two three', max_length=7, word_boundary=True) returns "
        "'one', I expected 'one-two'.",
    ),
    Task(
        "inflection ordinalize",
        "inflection==0.5.1",
        "inflection/__init__.py",
        "ordinal",
        "if number % 100 in (11, 12, 13):",
        "if number % 100 in (11, 12):",
        "ordinalize(113) returns '113rd'; it should be '113th' (and 13 gives '13rd' too).",
    ),
    Task(
        "more-itertools split_at",
        "more-itertools==10.5.0",
        "more_itertools/more.py",
        "split_at",
        "            if maxsplit == 1:\n                yield list(it)",
        "            if maxsplit == 0:\n                yield list(it)",
        "split_at ignores maxsplit=1 and splits at the second separator as well: "
        "list(split_at('a,b,c,d', lambda c: c == ',', maxsplit=1)) gives "
        "[['a'], ['b'], ['c', ',', 'd']] instead of [['a'], ['b', ',', 'c', ',', 'd']].",
    ),
    Task(
        "more-itertools padding",
        "more-itertools==10.5.0",
        "more_itertools/more.py",
        "padded",
        "                yield islice(iterable_with_repeat, n - 1)",
        "                yield islice(iterable_with_repeat, n)",
        "Padding a sequence up to the next multiple of n makes it too long: padding "
        "[1, 2, 3, 4] with None to the next multiple of 3 gives 8 items instead of 6.",
    ),
    Task(
        "toolz partition_all",
        "toolz==1.0.0",
        "toolz/itertoolz.py",
        "partition_all",
        "            yield prev[:len(seq) % n]",
        "            yield prev[:len(seq) % n - 1]",
        "partition_all loses the last item of a list when the length is not a multiple of "
        "n: list(partition_all(2, [1, 2, 3, 4, 5])) ends with () instead of (5,).",
    ),
    Task(
        "tabulate pipe alignment",
        "tabulate==0.9.0",
        "tabulate/__init__.py",
        "_pipe_segment_with_colons",
        '        return ("-" * (w - 1)) + ":"',
        '        return ":" + ("-" * (w - 1))',
        "In the pipe (Markdown) table format, right-aligned number columns get the colon on "
        "the left of the separator line: tabulate([[1, 2]], headers=['a', 'b'], "
        "tablefmt='pipe') prints ':----' under the numbers, so GitHub shows them aligned "
        "left.",
    ),
    Task(
        "semver (Python) prerelease bump",
        "semver==3.0.2",
        "semver/version.py",
        "Version._increment_string",
        "            next_ = str(int(match.group(1)) + 1)",
        "            next_ = str(int(match.group(1)) + 1)[-1]",
        "Version.parse('1.2.3-rc.9').bump_prerelease() gives 1.2.3-rc.0, going backwards; "
        "after rc.9 I expect rc.10.",
    ),
    Task(
        "boltons pluralize case",
        "boltons==24.1.0",
        "boltons/strutils.py",
        "_match_case",
        "        return disciple.upper()",
        "        return disciple.lower()",
        "pluralize('WORD') returns 'words': an upper-case word should stay upper case "
        "('WORDS'), as a title-case one stays title case.",
    ),
    Task(
        "boltons bytes2human crash",
        "boltons==24.1.0",
        "boltons/strutils.py",
        "bytes2human",
        "    return '{hnbytes:.{ndigits}f}{symbol}'.format(",
        "    return '{hnbytes:.{ndigits}d}{symbol}'.format(",
        "bytes2human crashes on every number since the upgrade:\n\n{traceback}",
        "from boltons.strutils import bytes2human\nbytes2human(128991)",
    ),
    Task(
        "requests text encoding",
        "requests==2.32.3",
        "requests/utils.py",
        "get_encoding_from_headers",
        '    if "text" in content_type:\n        return "ISO-8859-1"',
        '    if "text" == content_type:\n        return "ISO-8859-1"',
        "response.encoding is None for a text/html response without a charset; requests "
        "used to fall back to ISO-8859-1 for text responses, and now r.text guesses the "
        "encoding with charset_normalizer, slowly.",
    ),
    Task(
        "click short help",
        "click==8.1.7",
        "click/utils.py",
        "make_default_short_help",
        '        if word[-1] == ".":  # sentence end, truncate without "..."',
        '        if word[-1] == "!":  # sentence end, truncate without "..."',
        "In mycli --help the list of commands shows more than the first sentence of each "
        "command's help: a command documented 'Sync the files. Slow on big trees, see the "
        "docs.' is listed as 'Sync the files. Slow on big trees, see the...' instead of "
        "'Sync the files.'",
    ),
    Task(
        "semver (npm) prepatch",
        "semver@7.6.3",
        "classes/semver.js",
        "SemVer.inc",
        "        this.prerelease.length = 0\n        this.inc('patch', identifier, "
        "identifierBase)\n        this.inc('pre', identifier, identifierBase)\n        break\n"
        "      // If the input is a non-prerelease version, this acts the same as",
        "        this.prerelease.length = 0\n        this.inc('pre', identifier, "
        "identifierBase)\n        break\n"
        "      // If the input is a non-prerelease version, this acts the same as",
        "semver.inc('1.2.3', 'prepatch') returns '1.2.3-0'; a prepatch should bump the "
        "patch first and give '1.2.4-0'.",
    ),
    Task(
        "qs plus signs",
        "qs@6.13.0",
        "lib/utils.js",
        "decode",
        "var strWithoutPlus = str.replace(/\\+/g, ' ');",
        "var strWithoutPlus = str;",
        "Plus signs in a query string are no longer read as spaces: qs.parse('q=hello+world') "
        "gives { q: 'hello+world' }, expected { q: 'hello world' }.",
    ),
    Task(
        "ms long format plural",
        "ms@2.1.3",
        "index.js",
        "plural",
        "var isPlural = msAbs >= n * 1.5;",
        "var isPlural = msAbs >= n * 15;",
        "ms(3 * 60000, { long: true }) prints '3 minute': the long format forgets the plural 's'.",
    ),
    Task(
        "bytes megabyte",
        "bytes@3.1.2",
        "index.js",
        "format",
        "} else if (mag >= map.mb) {",
        "} else if (mag > map.mb) {",
        "bytes(1048576) returns '1024KB' instead of '1MB': exactly one megabyte should be "
        "shown as 1MB.",
    ),
    Task(
        "cookie last value",
        "cookie@0.7.2",
        "index.js",
        "parse",
        "      endIdx = len;",
        "      endIdx = len - 1;",
        "cookie.parse cuts the last character off the last cookie's value: "
        "cookie.parse('foo=bar; id=12345') gives { foo: 'bar', id: '1234' }.",
    ),
    Task(
        "lodash chunk",
        "lodash@4.17.21",
        "chunk.js",
        "chunk",
        "  while (index < length) {",
        "  while (index + size <= length) {",
        "const chunk = require('lodash/chunk'); chunk(['a', 'b', 'c', 'd'], 3) gives "
        "[['a', 'b', 'c'], <1 empty item>]: the last, shorter chunk is lost.",
    ),
    Task(
        "path-to-regexp crash",
        "path-to-regexp@8.2.0",
        "dist/index.js",
        "escape",
        'return str.replace(/[.+*?^${}()[\\]|/\\\\]/g, "\\\\$&");',
        'return str.replace(/[.+*?^${}()[\\]|/\\\\]/g, "\\\\$&").join("");',
        "match('/users/:id') throws since I upgraded path-to-regexp:\n\n{traceback}",
        "const { match } = require('./dist/index.js');\nmatch('/users/:id')('/users/1');",
    ),
]
WRITTEN_BEFORE = len(TASKS)  # the tasks above came with issue 44; those below with issue 52

SORTED_TESTS_INIT = '''"""Helpers of the sorted containers' tests."""

import warnings


class RangeAssertions:
    """Assertions about the values a range of a container yields (a TestCase mixin)."""

    def assertRange(self, got, expected):
        self.assertEqual(list(got), list(expected))

    def assertEmptyRange(self, got):
        self.assertEqual(list(got), [])


def assertItemsEqual(case, first, second):
    """unittest's old name, kept for the tests that still use it."""
    warnings.warn(
        "assertItemsEqual is deprecated; use assertCountEqual",
        DeprecationWarning,
        stacklevel=2,
    )
    case.assertCountEqual(first, second)


class LoadFactors:
    """Sub-list sizes to run each container's tests with."""

    SMALL = 4
    DEFAULT = 1000


warnings.warn("tests.LoadFactors will move to tests.sizes", DeprecationWarning)
'''

SORTED_TESTS = '''"""irange and bisect of every sorted container: one set of tests, run on
each container by a mixin (make() builds the container under test)."""

import unittest

from sortedcontainers import SortedKeyList, SortedList, SortedSet

from tests import LoadFactors, RangeAssertions


class RangeTests(RangeAssertions):
    """Ranges of a container holding 0..99."""

    def make(self, values):
        raise NotImplementedError

    def test_irange_inclusive(self):
        values = self.make(range(100))
        self.assertRange(values.irange(10, 20), range(10, 21))

    def test_irange_exclusive_max(self):
        values = self.make(range(100))
        self.assertRange(values.irange(10, 20, inclusive=(True, False)), range(10, 20))

    def test_irange_exclusive_min(self):
        values = self.make(range(100))
        self.assertRange(values.irange(10, 20, inclusive=(False, True)), range(11, 21))

    def test_irange_open_ended(self):
        values = self.make(range(100))
        self.assertRange(values.irange(95), range(95, 100))
        self.assertRange(values.irange(maximum=3, inclusive=(True, False)), range(3))

    def test_irange_reverse(self):
        values = self.make(range(100))
        self.assertRange(values.irange(10, 20, reverse=True), range(20, 9, -1))

    def test_irange_outside(self):
        values = self.make(range(100))
        self.assertEmptyRange(values.irange(200, 300))

    def test_bisect(self):
        values = self.make(range(100))
        self.assertEqual(values.bisect_left(10), 10)
        self.assertEqual(values.bisect_right(10), 11)


class TestSortedList(RangeTests, unittest.TestCase):
    def make(self, values):
        return SortedList(values)


class TestSortedListSmallLoad(RangeTests, unittest.TestCase):
    def make(self, values):
        made = SortedList()
        made._reset(LoadFactors.SMALL)
        made.update(values)
        return made


class TestSortedSet(RangeTests, unittest.TestCase):
    def make(self, values):
        return SortedSet(values)


class TestSortedKeyList(RangeTests, unittest.TestCase):
    def make(self, values):
        return SortedKeyList(values, key=lambda value: value)
'''

QS_TESTS = """'use strict';

const test = require('node:test');
const assert = require('node:assert');

const qs = require('../');

test('a list in one value', () => {
    assert.deepStrictEqual(qs.parse('a=b,c', { comma: true }), { a: ['b', 'c'] });
});

test('one value stays a value', () => {
    assert.deepStrictEqual(qs.parse('a=b', { comma: true }), { a: 'b' });
});

test('a list in one value, with brackets', () => {
    assert.deepStrictEqual(qs.parse('a[]=b,c', { comma: true }), { a: ['b', 'c'] });
});

test('without the option a value is kept whole', () => {
    assert.deepStrictEqual(qs.parse('a=b,c'), { a: 'b,c' });
});

test('stringify and parse agree', () => {
    const text = qs.stringify({ a: ['b', 'c'] }, { arrayFormat: 'comma', encode: false });
    assert.deepStrictEqual(qs.parse(text, { comma: true }), { a: ['b', 'c'] });
});
"""

TASKS += [
    Task(
        "semver (npm) caret range",
        "semver@7.6.3",
        "classes/range.js",
        "replaceCaret",
        "ret = `>=${M}.${m}.0${z} <${+M + 1}.0.0-0`",
        "ret = `>=${M}.${m}.0${z} <${M}.${+m + 1}.0-0`",
        "semver.satisfies('1.5.0', '^1.2') returns false. A caret range should allow minor and "
        "patch updates: ^1.2 means >=1.2.0 <2.0.0, but it only matches 1.2.x now "
        "(semver.satisfies('1.2.9', '^1.2') is true).",
    ),
    Task(
        "packaging compatible release",
        "packaging==24.1",
        "packaging/specifiers.py",
        "Specifier._compare_compatible",
        "list(itertools.takewhile(_is_not_suffix, _version_split(spec)))[:-1]",
        "list(itertools.takewhile(_is_not_suffix, _version_split(spec)))",
        "SpecifierSet('~=2.2').contains('2.5') returns False. A compatible release clause "
        "~=2.2 means >=2.2, ==2.*, so 2.5 should match; only 2.2.x does now.",
    ),
    Task(
        "html2text level-one heading",
        "html2text==2020.1.16",
        "html2text/utils.py",
        "hn",
        'if "0" < n <= "9":',
        'if "1" < n <= "9":',
        "html2text.html2text('<h1>Title</h1>') returns 'Title' without the '# ' in front: a "
        "level-one heading is not converted, while '<h2>Title</h2>' gives '## Title'. "
        "HTML2Text().handle('<h1>Title</h1>') does the same.",
    ),
    Task(
        "date-fns two-digit month",
        "date-fns@3.6.0",
        "_lib/addLeadingZeros.js",
        "addLeadingZeros",
        'padStart(targetLength, "0")',
        'padStart(targetLength - 1, "0")',
        "format(new Date(2024, 2, 5), 'yyyy-MM-dd') gives '2024-3-5' instead of "
        "'2024-03-05', and formatISO(new Date(2024, 2, 5), { representation: 'date' }) gives "
        "'2024-3-5' too. Times the same: format(new Date(2024, 2, 5, 9, 7), 'HH:mm') is "
        "'9:7'.",
    ),
    Task(
        "tabulate failing suite",
        "sdist:tabulate==0.9.0",
        "tabulate/__init__.py",
        "_afterpoint",
        "                return len(string) - pos - 1",
        "                return len(string) - pos",
        "The tests fail since my last change. Please fix the library, not the tests.",
        check="{python} -m pytest -q -p no:cacheprovider test",
    ),
    Task(
        "toolz failing suite",
        "toolz==1.0.0",
        "toolz/itertoolz.py",
        "_merge_sorted_binary",
        "    yield val1\n    for val1 in seq1:\n        yield val1\n\n\n"
        "def _merge_sorted_binary_key",
        "    yield val1\n\n\ndef _merge_sorted_binary_key",
        "The test suite fails; please fix it.",
        check="{python} -m pytest -q -p no:cacheprovider toolz/tests",
    ),
    Task(
        "qs failing suite",
        "qs@6.13.0",
        "lib/parse.js",
        "parseArrayValue",
        "        return val.split(',');",
        "        return val.split(', ');",
        "node --test test/lists.test.js fails; please fix the library.",
        check="node --test test/lists.test.js",
        tests={"test/lists.test.js": QS_TESTS},
    ),
    Task(
        "sortedcontainers unittest mixins",
        "sortedcontainers==2.4.0",
        "sortedcontainers/sortedlist.py",
        "SortedList.irange",
        "max_idx = bisect_left(_lists[max_pos], maximum)",
        "max_idx = bisect_right(_lists[max_pos], maximum)",
        "Some of the range tests fail (python -m pytest tests). Please fix the library, not "
        "the tests.",
        check="{python} -m pytest -q -p no:cacheprovider tests",
        tests={"tests/__init__.py": SORTED_TESTS_INIT, "tests/test_ranges.py": SORTED_TESTS},
    ),
]


def fetch(package: str) -> Path:
    """The package unpacked in the cache (downloaded the first time): a wheel, an npm
    tarball, or (``sdist:name==version``) a source distribution, its tests and all."""
    npm = "@" in package.lstrip("@")
    unpacked = CACHE / package.replace("/", "_").replace(":", "_")
    if unpacked.is_dir():
        return unpacked
    download = CACHE / "downloads"
    download.mkdir(parents=True, exist_ok=True)
    if package.startswith("sdist:"):
        return _sdist(package.removeprefix("sdist:"), download, unpacked)
    if npm:
        name = subprocess.run(
            ["npm", "pack", package, "--silent", "--pack-destination", str(download)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        with tarfile.open(download / name) as tar:
            tar.extractall(unpacked / "unpacked", filter="data")
        (unpacked / "unpacked" / "package").rename(unpacked / "tree")
        shutil.rmtree(unpacked / "unpacked")
        _npm_dependencies(unpacked)
        return unpacked
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-q",
            "-d",
            str(download),
            package,
        ],
        check=True,
        capture_output=True,
    )
    name, version = package.split("==")
    stem = re.sub(r"[-_.]+", "_", name).lower()
    (wheel,) = [
        w for w in download.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")
    ]
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked / "tree")
    for info in (unpacked / "tree").glob("*.dist-info"):
        shutil.rmtree(info)
    return unpacked


def _npm_dependencies(unpacked: Path) -> None:
    """An npm package's own dependencies installed beside its tree (``deps/node_modules``),
    so its code runs (a failing suite's check needs them)."""
    wanted = json.loads((unpacked / "tree" / "package.json").read_text()).get("dependencies")
    if not wanted:
        return
    (unpacked / "deps").mkdir()
    specs = [f"{name}@{version}" for name, version in wanted.items()]
    flags = ["--no-audit", "--no-fund", "--no-package-lock", "--ignore-scripts", "--silent"]
    subprocess.run(["npm", "install", *flags, *specs], cwd=unpacked / "deps", check=True)


def _sdist(package: str, download: Path, unpacked: Path) -> Path:
    """A source distribution unpacked as its tree (its top folder)."""
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q"]
    subprocess.run([*pip, "-d", str(download), package], check=True, capture_output=True)
    name, version = package.split("==")
    (archive,) = [
        a for a in download.glob("*.tar.gz") if a.name.lower() == f"{name}-{version}.tar.gz"
    ]
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked / "unpacked", filter="data")
    (unpacked / "unpacked" / f"{name}-{version}").rename(unpacked / "tree")
    shutil.rmtree(unpacked / "unpacked")
    return unpacked


def workspace(task: Task, root: Path, tree: Path | None = None) -> Path:
    """A fresh copy of the package (``tree``: a copy at hand, its ``.py.txt`` files as
    ``.py``, as the tests vendor them) with the bug injected."""
    ws = root / "ws"
    shutil.copytree(tree or fetch(task.package) / "tree", ws)
    installed = fetch(task.package) / "deps" / "node_modules" if tree is None else None
    if installed is not None and installed.is_dir():
        shutil.copytree(installed, ws / "node_modules")
    for vendored in ws.rglob("*.py.txt"):
        vendored.rename(vendored.with_suffix(""))
    path = ws / task.path
    text = path.read_text()
    assert text.count(task.old) == 1, f"{task.name}: the bug's text is not there once"
    path.write_text(text.replace(task.old, task.new))
    for rel, content in task.tests.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    return ws


def traceback(task: Task, ws: Path) -> str:
    """What the buggy code prints when it fails, its paths as an installed copy's."""
    if task.package.count("@"):
        done = subprocess.run(["node", "-e", task.crash], cwd=ws, capture_output=True, text=True)
        prefix = NODE_MODULES.format(package=task.package.rpartition("@")[0])
    else:
        done = subprocess.run(
            [sys.executable, "-c", task.crash], cwd=ws, capture_output=True, text=True
        )
        prefix = SITE
    assert done.returncode != 0, f"{task.name}: the code did not fail"
    text = done.stderr.replace(f"{ws}/", prefix).strip()
    lines = [line for line in text.splitlines() if "node:internal" not in line]
    return "\n".join(lines)


def first_prompt(
    task: Task, root: Path, window: int | None, tree: Path | None = None
) -> tuple[str, Path]:
    """The first prompt of a session started on the task (as a pasted chat's, or with the
    window ``--context-tokens``), and its workspace."""
    ws = workspace(task, root, tree)
    report = task.report
    if "{traceback}" in report:
        report = report.replace("{traceback}", traceback(task, ws))
    flags = ["--context-tokens", str(window)] if window else []
    if task.check:
        flags += ["--check", task.check.replace("{python}", shlex.quote(sys.executable))]
    result = CliRunner().invoke(
        main,
        [
            "start",
            report,
            "--no-watch",
            "--workspace",
            str(ws),
            "--sandbox",
            "none",
            "--root",
            str(root / "run"),
            *flags,
        ],
        # ``python`` in a check (as the held-out tasks write it) is this interpreter
        env={"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert result.exit_code == 0, result.output
    (prompt,) = (root / "run" / "outbox").glob("*_seq0001.txt")
    return prompt.read_text(), ws


def views(text: str) -> dict[str, dict[int, str]]:
    """Every numbered line the prompt shows, by file: from its file views."""
    shown: dict[str, dict[int, str]] = {}
    path = None
    for line in text.splitlines():
        start = re.match(r"^--- (.+) ---$", line)
        if start and not line.startswith("--- end "):
            path = start.group(1)
            continue
        if line.startswith("--- end "):
            path = None
            continue
        number = re.match(r"^\s*(\d+) \|(?: (.*))?$", line)
        if path is not None and number:
            shown.setdefault(path, {})[int(number.group(1))] = number.group(2) or ""
    return shown


def holds(text: str, task: Task, ws: Path) -> tuple[bool, str]:
    """Whether the prompt shows the definition whole (every line, as the file has it), and
    where."""
    source = (ws / task.path).read_text()
    lines = source.split("\n")
    (start, end), *_ = find_symbol(source, task.symbol, task.path)
    section = text.split(SECTION, 1)[1].split("=== PROMPT ===")[0] if SECTION in text else ""
    for part, where in ((section, "section"), (text, "prompt")):
        shown = views(part).get(task.path, {})
        if all(shown.get(n) == lines[n - 1].rstrip("\r") for n in range(start, end + 1)):
            return True, f"{where}, lines {start}-{end}"
    in_map = re.search(rf"^\s*{start} \| ", text.split("## Code Map", 1)[-1], re.M)
    return False, f"lines {start}-{end}; {'first line in the map' if in_map else 'not in the map'}"


def cost(files: int, runs: int = 5) -> str:
    """The row of ``--cost`` for a generated tree of ``files`` files."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from codemap import make_tree  # the code map benchmark's tree

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        make_tree(root, files)
        cache = Path(tmp) / "cache"
        maps: list[tuple[float, float]] = []
        costs: list[tuple[float, float]] = []
        chars = 0
        for run in range(runs + 1):
            ws = Workspace(root)
            listing = ws.list_files(limit=200_000, sizes=20_000)
            task = f"item_{run * 7} returns the wrong value when x is negative"
            state = SessionState(session_id="abcd1234", task=task, workspace=str(root))
            for cached in (lexical.stem, lexical.name_words, lexical.is_test):
                cached.cache_clear()
            wall, cpu = time.perf_counter(), time.process_time()
            map_section(root, listing, state, 2048, cache)
            mapped = (time.perf_counter() - wall, time.process_time() - cpu)
            wall, cpu = time.perf_counter(), time.process_time()
            made = pointed_section(ws, listing, state, PASTED_TOKENS, cache)
            spent = (time.perf_counter() - wall, time.process_time() - cpu)
            if run:  # the first run maps the tree whole and fills the cache
                maps.append(mapped)
                costs.append(spent)
                chars = len(made.text or "")

    def ms(pairs: list[tuple[float, float]]) -> str:
        wall = statistics.median(p[0] for p in pairs) * 1000
        cpu = statistics.median(p[1] for p in pairs) * 1000
        return f"{wall:.0f} ms | {cpu:.0f} ms"

    return f"| {files:,} files | {ms(maps)} | {ms(costs)} | {chars:,} |"


def held_out() -> list[Task]:
    """The tasks of ``pointed_heldout.py``, ``pointed_heldout2.py`` and ``pointed_heldout3.py``
    beside this file, those that are there: each written by someone who had not read the
    ranking."""
    return [
        *_held_out("pointed_heldout"),
        *_held_out("pointed_heldout2"),
        *_held_out("pointed_heldout3"),
    ]


def _held_out(stem: str) -> list[Task]:
    """The tasks of one held-out file beside this one (none when it is not there)."""
    path = Path(__file__).resolve().parent / f"{stem}.py"
    if not path.is_file():
        return []
    spec = importlib.util.spec_from_file_location(stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.modules.setdefault("pointed", sys.modules[__name__])  # it may import this file
    spec.loader.exec_module(module)
    for name in ("TASKS", "HELDOUT", "HELD_OUT", "HELDOUT_TASKS"):
        found = getattr(module, name, None)
        if isinstance(found, list):
            return list(found)
    return []


def written(task: Task, heldout: list[Task]) -> str:
    """When and by whom a task was written (docs/prompts.md says more)."""
    if task in heldout:
        if task in _held_out("pointed_heldout3"):
            return "held out"
        return "independent 2" if task in _held_out("pointed_heldout2") else "independent"
    return "issue 44" if TASKS.index(task) < WRITTEN_BEFORE else "issue 52"


GRID = {  # the weights leave-one-out chooses among (the defaults are one of each)
    "words": (0.5, 1.0, 2.0),
    "callee": (0.25, 0.5, 1.0),
    "near": (1.0, 2.0, 4.0),
    "tested": (1.0, 2.0, 4.0),
    "shared": (1.0, 2.0, 4.0),
}


def held_by_weights(task: Task, combos: list[Weights]) -> list[bool]:
    """For each of ``combos``, whether the section (as the task's first prompt makes it, a
    pasted chat's) holds the whole definition to change with those weights."""
    with tempfile.TemporaryDirectory() as tmp:
        _, ws = first_prompt(task, Path(tmp), None)
        (saved,) = (Path(tmp) / "run" / "sessions").glob("*.json")
        state = SessionState.model_validate_json(saved.read_text())
        workspace_ = Workspace(ws)
        listing = workspace_.list_files(limit=LISTING_FILES, sizes=LISTING_SIZES)
        words = " ".join([state.task, *state.follow_ups])
        tree = Tree(workspace_, listing, Path(tmp) / "run" / "sessions" / KEPT, words)
        found = gather(tree, words, state.check_failure)
        chars = pointed_tokens(None, state.check_failure is not None) * CHARS_PER_TOKEN
        return [
            holds(section(tree, found, rank(found, weights), chars).text or "", task, ws)[0]
            for weights in combos
        ]


def loo_choice(held: dict[str, list[bool]], default: int) -> dict[str, int]:
    """For each task, the weights (their index) that hold the most of the other tasks; of
    those tied, ``default`` if it is among them, else the first."""
    chosen = {}
    for name in held:
        others = [
            sum(row[i] for other, row in held.items() if other != name)
            for i in range(len(held[name]))
        ]
        best = max(others)
        chosen[name] = default if others[default] == best else others.index(best)
    return chosen


def leave_one_out(tasks: list[Task], heldout: list[Task]) -> None:
    """Each task held with the weights of ``GRID`` that hold the most of the other tasks
    (of those tied, the defaults if they are among them, else the first)."""
    combos = [
        replace(WEIGHTS, **dict(zip(GRID, values, strict=True)))
        for values in itertools.product(*GRID.values())
    ]
    held = {task.name: held_by_weights(task, combos) for task in tasks}
    default = combos.index(WEIGHTS)
    choices = loo_choice(held, default)
    print("| task | written | held (default weights) | weights chosen without it | held (LOO) |")
    print("|---|---|---|---|---|")
    plain = loo = 0
    for task in tasks:
        chosen = choices[task.name]
        weights = ", ".join(f"{k} {getattr(combos[chosen], k)}" for k in GRID)
        plain += held[task.name][default]
        loo += held[task.name][chosen]
        print(
            f"| {task.name} | {written(task, heldout)} | "
            f"{'yes' if held[task.name][default] else 'no'} | {weights} | "
            f"{'yes' if held[task.name][chosen] else 'no'} |"
        )
    print(
        f"\n{plain} of {len(tasks)} with the default weights, {loo} of {len(tasks)} left out "
        f"(the weights chosen on the other {len(tasks) - 1} among {len(combos)})."
    )
    totals = sorted(
        ((sum(held[t.name][i] for t in tasks), i) for i in range(len(combos))), reverse=True
    )
    spread = Counter(total for total, _ in totals)
    print(
        "\nHow many of the weights hold how many tasks: "
        + ", ".join(f"{spread[n]} hold {n}" for n in sorted(spread, reverse=True))
    )
    print("\nThe weights that hold the most (all tasks):")
    for total, i in totals[:5]:
        misses = ", ".join(t.name for t in tasks if not held[t.name][i])
        named = ", ".join(f"{k} {getattr(combos[i], k)}" for k in GRID)
        print(f"- {named}: {total} of {len(tasks)} (not {misses or 'one missed'})")


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--window", type=int, default=None, help="--context-tokens")
    parser.add_argument("--only", default="", help="tasks whose name holds one of these words")
    parser.add_argument("--cost", action="store_true", help="time the section on big trees")
    parser.add_argument("--loo", action="store_true", help="leave-one-out over the weights")
    args = parser.parse_args(argv)
    if args.cost:
        print(
            "| tree | cached map, wall | CPU | the code the task points at, wall | CPU | "
            "section, characters |"
        )
        print("|---|---|---|---|---|---|")
        for files in (1000, 10_000):
            print(cost(files))
        print(f"\n(load average {os.getloadavg()[0]:.1f})")
        return 0
    wanted = [w for w in args.only.split(",") if w]
    heldout = held_out()
    tasks = [t for t in TASKS + heldout if not wanted or any(w in t.name for w in wanted)]
    if args.loo:
        leave_one_out(tasks, heldout)
        return 0
    print(
        "| task | written | definition to change | whole in the first prompt | where | "
        "first prompt, tokens (4 chars) | tokens (3 bytes) | section, tokens |"
    )
    print("|---|---|---|---|---|---|---|---|")
    found: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            text, ws = first_prompt(task, Path(tmp), args.window)
            whole, where = holds(text, task, ws)
        found[written(task, heldout)] += whole
        counted[written(task, heldout)] += 1
        shown = text.split(SECTION, 1)[1].split("=== PROMPT ===")[0] if SECTION in text else ""
        print(
            f"| {task.name} | {written(task, heldout)} | `{task.symbol}` ({task.path}) | "
            f"{'yes' if whole else 'no'} | "
            f"{where} | {estimate_tokens(text):,} | {estimate(text):,} | "
            f"{estimate_tokens(shown):,} |"
        )
    print(
        f"\n{sum(found.values())} of {len(tasks)} first prompts hold the whole definition to "
        "change; by when the tasks were written: "
        + ", ".join(f"{kind} {found[kind]} of {counted[kind]}" for kind in counted)
        + "."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
