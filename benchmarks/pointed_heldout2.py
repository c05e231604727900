"""A second set of held-out bug tasks for ``benchmarks/pointed.py`` (issue 52).

Written by a task writer who had not read the code that chooses what a first prompt shows
(nor seen how any task scores), as users report bugs: what they called, what they saw and what
they expected, a pasted traceback, or a failing test suite run as the session's check. Each bug
is one small edit inside one definition of a released package none of the other tasks use,
checked by running the package before and after the edit. Where a package ships its code twice
(a bundle beside its sources, CommonJS beside ES modules) the bug is in the copy its ``main``
loads. ``pointed.py`` runs them with its own tasks; they are not to be changed once their
results are known.

    python benchmarks/pointed.py --only moment,xmltodict   # some of them
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pointed import Task

COMMANDER_TEST = """\
const test = require("node:test");
const assert = require("node:assert/strict");
const { Command } = require("../");

function opts(args, define) {
  const program = new Command();
  program.exitOverride();
  define(program);
  program.parse(args, { from: "user" });
  return program.opts();
}

test("a boolean flag", () => {
  assert.deepEqual(opts(["-v"], (p) => p.option("-v, --verbose")), { verbose: true });
});

test("a value after the option", () => {
  const got = opts(["--port", "8080"], (p) => p.option("-p, --port <number>"));
  assert.deepEqual(got, { port: "8080" });
});

test("a value after an equals sign", () => {
  const got = opts(["--port=8080"], (p) => p.option("-p, --port <number>"));
  assert.deepEqual(got, { port: "8080" });
});

test("an optional value after an equals sign", () => {
  const got = opts(["--cheese=brie"], (p) => p.option("-c, --cheese [type]"));
  assert.deepEqual(got, { cheese: "brie" });
});

test("a short option with its value attached", () => {
  const got = opts(["-p8080"], (p) => p.option("-p, --port <number>"));
  assert.deepEqual(got, { port: "8080" });
});

test("short flags combined", () => {
  const got = opts(["-vd"], (p) => p.option("-v, --verbose").option("-d, --debug"));
  assert.deepEqual(got, { verbose: true, debug: true });
});

test("a negated option", () => {
  assert.deepEqual(opts(["--no-color"], (p) => p.option("--no-color")), { color: false });
});

test("kebab-case options become camelCase", () => {
  assert.deepEqual(opts(["--dry-run"], (p) => p.option("--dry-run")), { dryRun: true });
});

test("a variadic option", () => {
  const got = opts(["-n", "1", "2"], (p) => p.option("-n, --numbers <n...>"));
  assert.deepEqual(got, { numbers: ["1", "2"] });
});
"""

HELDOUT_TASKS = [
    # The report names the public function; the bug is in a small helper it calls.
    Task(
        "moment leap year",
        "moment@2.30.1",
        "moment.js",
        "isLeapYear",
        "        return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;",
        "        return year % 4 === 0 && year % 100 !== 0;",
        "moment thinks 2000 was not a leap year: moment('2000-02-29').isValid() returns false, "
        "moment([2000]).isLeapYear() is false, moment('2000-02-10').daysInMonth() is 28, and "
        "moment('2000-01-31').add(1, 'month').format('YYYY-MM-DD') gives '2000-02-28' instead "
        "of '2000-02-29'. 2000 was a leap year (it is divisible by 400). 2024 is handled "
        "right: moment('2024-02-29') is valid.",
    ),
    Task(
        "yargs-parser quoted values",
        "yargs-parser@21.1.1",
        "build/index.cjs",
        "tokenizeArgString",
        "        if (c === ' ' && !opening) {",
        "        if (c === ' ') {",
        "When I give yargs-parser the arguments as one string, quoted values with spaces are "
        "split: yargsParser('--name \"John Smith\" --age 42') returns "
        "{ _: [ 'Smith\"' ], name: '\"John', age: 42 }; I expected "
        "{ _: [], name: 'John Smith', age: 42 }. Passing an array "
        "(['--name', 'John Smith', '--age', '42']) works.",
    ),
    Task(
        "pyparsing error column",
        "pyparsing==3.1.2",
        "pyparsing/util.py",
        "col",
        '    return 1 if 0 < loc < len(s) and s[loc - 1] == "\\n" else loc - s.rfind("\\n", 0, '
        "loc)",
        '    return 1 if 0 < loc < len(s) and s[loc - 1] == "\\n" else loc - s.find("\\n", 0, loc)',
        "ParseException gives the wrong column for errors after the second line. With "
        "assignment = pp.Word(pp.alphas) + pp.Suppress('=') + pp.Word(pp.nums), "
        "(assignment * 3).parse_string('width = 10\\nheight = 20\\ndepth = deep') raises "
        "\"Expected W:(0-9), found 'deep'  (at char 31), (line:3, col:21)\" and e.column is "
        "21, but 'deep' starts at column 9 of line 3 (the line is only 12 characters long), "
        "so explain() puts the caret past the end of the line. Errors on the first two lines "
        "have the right column.",
    ),
    # The report names two public functions that share the buggy helper.
    Task(
        "babel indian grouping",
        "babel==2.15.0",
        "babel/numbers.py",
        "NumberPattern._format_int",
        "            gsize = self.grouping[1]",
        "            gsize = self.grouping[0]",
        "Indian digit grouping is gone: format_decimal(1234567, locale='en_IN') returns "
        "'1,234,567' instead of '12,34,567', and format_currency(1234567.5, 'INR', "
        "locale='en_IN') returns '₹1,234,567.50' instead of '₹12,34,567.50'. en_US and de_DE "
        "numbers are still right.",
    ),
    Task(
        "big.js carry",
        "big.js@6.2.1",
        "big.js",
        "round",
        "          if (sd === 0) {\n            ++x.e;\n            xc.unshift(1);",
        "          if (sd === 0) {\n            xc.unshift(1);",
        "Rounding that carries into a new digit loses a power of ten: "
        "new Big('9.996').toFixed(2) returns '1.00' (expected '10.00') and "
        "new Big('9.996').toPrecision(3) returns '1.00' (expected '10.0'); "
        "new Big('0.0999').toFixed(2) gives '0.01' instead of '0.10'. Values that don't carry, "
        "like new Big('1.005').toFixed(2) = '1.01', are fine.",
    ),
    # The report names a kind of thing; its handler holds the word, among its siblings.
    Task(
        "luxon RFC 2822 zones",
        "luxon@3.4.4",
        "build/node/luxon.js",
        "extractRFC2822",
        "secondStr, obsOffset, milOffset, offHourStr, offMinuteStr] = match,",
        "secondStr, milOffset, obsOffset, offHourStr, offMinuteStr] = match,",
        "DateTime.fromRFC2822 reads the North American zone names of RFC 2822 dates as UTC: "
        "DateTime.fromRFC2822('Tue, 01 Nov 2016 13:23:12 EST', { setZone: true }).toISO() "
        "gives '2016-11-01T13:23:12.000Z' instead of '2016-11-01T13:23:12.000-05:00' (PDT "
        "the same). Numeric offsets such as +0630 are read correctly.",
    ),
    Task(
        "pygments inline line numbers",
        "pygments==2.18.0",
        "pygments/formatters/html.py",
        "HtmlFormatter._wrap_inlinelinenos",
        "        num = self.linenostart\n        mw = len(str(len(inner_lines) + num - 1))",
        "        num = 1\n        mw = len(str(len(inner_lines) + num - 1))",
        "HtmlFormatter ignores linenostart when the line numbers are inline: "
        "highlight(code, PythonLexer(), HtmlFormatter(linenos='inline', linenostart=40)) "
        "numbers the lines 1, 2, 3... instead of 40, 41, 42... With linenos='table' and the "
        "same linenostart the numbers start at 40 as expected.",
    ),
    # A pasted traceback.
    Task(
        "json5 block comment crash",
        "json5@2.2.3",
        "lib/parse.js",
        "multiLineCommentAsterisk",
        "        case '/':\n            read()\n"
        "            lexState = 'default'\n            return\n"
        "\n        case undefined:\n            throw invalidChar(read())\n        }\n\n"
        "        read()\n        lexState = 'multiLineComment'",
        "        case '/':\n            read()\n"
        "            lexState = 'comment'\n            return\n"
        "\n        case undefined:\n            throw invalidChar(read())\n        }\n\n"
        "        read()\n        lexState = 'multiLineComment'",
        "JSON5.parse throws on my config file since I upgraded json5; line comments are fine, "
        "the /* */ comment seems to be what breaks it:\n\n{traceback}",
        "const JSON5 = require('./lib/index.js');\n"
        "JSON5.parse('{\\n  // where the server listens\\n  port: 8080, /* the default */\\n"
        '  host: "localhost",\\n}\\n\');',
    ),
    Task(
        "networkx shortest path crash",
        "networkx==3.3",
        "networkx/algorithms/shortest_paths/unweighted.py",
        "_bidirectional_pred_succ",
        "                    if w in succ:  # path found\n"
        "                        return pred, succ, w",
        "                    if w in succ:  # path found\n"
        "                        return pred, succ, v",
        "nx.shortest_path crashes with a KeyError on a plain chain of five nodes:\n\n"
        "{traceback}\n\nI expected ['home', 'park', 'school', 'library', 'station'].",
        "import networkx as nx\n"
        "G = nx.Graph()\n"
        "G.add_edges_from([('home', 'park'), ('park', 'school'), ('school', 'library'), "
        "('library', 'station')])\n"
        "print(nx.shortest_path(G, 'home', 'station'))",
    ),
    # A failing test suite, run as the session's check.
    Task(
        "xmltodict unittest suite",
        "sdist:xmltodict==0.13.0",
        "xmltodict.py",
        "_DictSAXHandler.push_data",
        "            else:\n                item[key] = [value, data]",
        "            else:\n                item[key] = [data]",
        "The tests fail since my last change (python -m unittest discover -s tests). Please "
        "fix the library, not the tests.",
        check="python -m unittest discover -s tests",
    ),
    Task(
        "commander node test",
        "commander@12.1.0",
        "lib/command.js",
        "Command.parseOptions",
        "          this.emit(`option:${option.name()}`, arg.slice(index + 1));",
        "          this.emit(`option:${option.name()}`, arg.slice(index));",
        "node --test test/options.test.js fails since my last change. Fix the library, not "
        "the tests.",
        check="node --test test/options.test.js",
        tests={"test/options.test.js": COMMANDER_TEST},
    ),
    Task(
        "cachetools ttl suite",
        "sdist:cachetools==5.3.3",
        "src/cachetools/__init__.py",
        "TTLCache.__getlink",
        "        value = self.__links[key]\n        self.__links.move_to_end(key)\n",
        "        value = self.__links[key]\n",
        "Some of the TTLCache tests fail since my last change (PYTHONPATH=src python -m pytest "
        "tests). Fix the library, not the tests.",
        check="PYTHONPATH=src python -m pytest -q -p no:cacheprovider tests",
    ),
]
