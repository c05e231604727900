"""A third set of held-out bug tasks for ``benchmarks/pointed.py``.

Written by a task writer who had not read the code that chooses what a first prompt shows
(nor seen how any task scores), as users report bugs: what they called, what they saw and what
they expected, a pasted traceback, or a failing test suite run as the session's check. Each bug
is one small edit inside one definition of a released package none of the other tasks use,
checked by running the package before and after the edit. Where a package ships its code more
than once (CommonJS beside ES modules, a bundle beside its modules) the bug is in the copy that
Node's ``require`` loads. ``pointed.py`` runs them with its own tasks; they are not to be
changed once their results are known.

    python benchmarks/pointed.py --only natsort,dotenv   # some of them
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pointed import Task

DOTENV_TEST = r"""'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const dotenv = require('../')

test('plain values', () => {
  assert.deepEqual(dotenv.parse('HOST=localhost\nPORT=5432\n'), { HOST: 'localhost', PORT: '5432' })
})

test('spaces around the equals sign and the value are trimmed', () => {
  assert.deepEqual(dotenv.parse('NAME =  my app  \n'), { NAME: 'my app' })
})

test('comments and blank lines are skipped', () => {
  const src = '# database\nDB_USER=admin # the owner\n\n   \nDB_NAME=shop\n'
  assert.deepEqual(dotenv.parse(src), { DB_USER: 'admin', DB_NAME: 'shop' })
})

test('a hash inside quotes is part of the value', () => {
  assert.deepEqual(dotenv.parse('COLOR="#ff8800"\n'), { COLOR: '#ff8800' })
})

test('quotes around a value are removed', () => {
  const src = "A='single'\nB=\"double\"\nC=`backtick`\n"
  assert.deepEqual(dotenv.parse(src), { A: 'single', B: 'double', C: 'backtick' })
})

test('an export prefix is allowed', () => {
  assert.deepEqual(dotenv.parse('export TOKEN=abc123\n'), { TOKEN: 'abc123' })
})

test('an empty value is an empty string', () => {
  assert.deepEqual(dotenv.parse('EMPTY=\nALSO_EMPTY=""\n'), { EMPTY: '', ALSO_EMPTY: '' })
})

test('\\n in a double-quoted value becomes a newline', () => {
  assert.equal(dotenv.parse('GREETING="hello\\nworld"').GREETING, 'hello\nworld')
})

test('\\n in a single-quoted value is kept as written', () => {
  assert.equal(dotenv.parse("RAW='hello\\nworld'").RAW, 'hello\\nworld')
})

test('a double-quoted value can span lines', () => {
  const src = 'KEY="-----BEGIN-----\nabc\n-----END-----"\nNEXT=1\n'
  assert.deepEqual(dotenv.parse(src), { KEY: '-----BEGIN-----\nabc\n-----END-----', NEXT: '1' })
})

test('Windows line endings', () => {
  assert.deepEqual(dotenv.parse('A=1\r\nB=2\r\n'), { A: '1', B: '2' })
})

test('config reads a file into the given object and keeps what is set', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotenv-'))
  const file = path.join(dir, '.env')
  fs.writeFileSync(file, 'MODE=production\nLEVEL=debug\n')
  const env = { LEVEL: 'info' }
  const result = dotenv.config({ path: file, processEnv: env })
  assert.deepEqual(result.parsed, { MODE: 'production', LEVEL: 'debug' })
  assert.deepEqual(env, { MODE: 'production', LEVEL: 'info' })
})

test('config with override replaces what is set', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dotenv-'))
  const file = path.join(dir, '.env')
  fs.writeFileSync(file, 'LEVEL=debug\n')
  const env = { LEVEL: 'info' }
  dotenv.config({ path: file, processEnv: env, override: true })
  assert.deepEqual(env, { LEVEL: 'debug' })
})
"""

TASKS = [
    # The report names public functions; the bug is in a small helper they call.
    Task(
        "underscore get and pluck",
        "underscore@1.13.6",
        "underscore-node-f.cjs",
        "deepGet",
        "  for (var i = 0; i < length; i++) {\n    if (obj == null) return void 0;",
        "  for (var i = 0; i < length - 1; i++) {\n    if (obj == null) return void 0;",
        "Since I upgraded underscore, _.get returns the parent object instead of the value: "
        "with const _ = require('underscore'), _.get({ address: { city: 'Oslo' } }, "
        "['address', 'city']) gives { city: 'Oslo' } instead of 'Oslo', and "
        "_.get(user, 'name') gives the whole user object. _.pluck([{ name: 'Ann' }, "
        "{ name: 'Bo' }], 'name') returns the objects unchanged instead of ['Ann', 'Bo'].",
    ),
    Task(
        "rich wrap at the edge",
        "rich==13.7.1",
        "rich/_wrap.py",
        "divide_line",
        "        word_length = _cell_len(word.rstrip())",
        "        word_length = _cell_len(word)",
        "Console.print wraps a word onto the next line even when it would end exactly at "
        "the right edge. Console(width=19).print('The quick brown fox jumps over the lazy "
        "dog') prints\n\nThe quick brown\nfox jumps over the\nlazy dog\n\nbut 'The quick "
        "brown fox' is exactly 19 characters and fits; I expected 'The quick brown fox' / "
        "'jumps over the lazy' / 'dog'. Text('...').wrap(console, 19) splits the same way.",
    ),
    # The report names two public functions that share the buggy helper.
    Task(
        "decimal.js small numbers",
        "decimal.js@10.4.3",
        "decimal.js",
        "finiteToString",
        "      str = '0.' + getZeroString(-e - 1) + str;",
        "      str = '0.' + getZeroString(-e) + str;",
        "Since upgrading decimal.js, numbers below 1 print ten times too small: "
        "new Decimal('0.05').toString() gives '0.005', new Decimal('0.125').toFixed(2) gives "
        "'0.013' instead of '0.13', and JSON.stringify({ price: new Decimal('0.5') }) writes "
        '{"price":"0.05"}. The values themselves seem right (new Decimal(\'0.05\').times(100) '
        "prints '5'), and numbers of 1 and more print fine: new Decimal('1.05').toString() "
        "is '1.05'.",
    ),
    Task(
        "pydash apostrophes",
        "pydash==8.0.1",
        "pydash/strings.py",
        "compounder",
        '    return words(deburr(RE_APOS.sub("", pyd.to_string(text))))',
        "    return words(deburr(pyd.to_string(text)))",
        'Apostrophes end up inside identifiers: pydash.snake_case("the user\'s id") returns '
        '"the_user\'s_id" and pydash.camel_case("the user\'s id") returns "theUser\'SId". '
        "They used to give 'the_users_id' and 'theUsersId' (as lodash does), and "
        "kebab_case(\"Don't stop\") now gives \"don't-stop\" instead of 'dont-stop'.",
    ),
    # The report names a kind of thing; its handler holds the word, among its siblings.
    Task(
        "mustache inverted empty list",
        "mustache@4.2.0",
        "mustache.js",
        "Writer.renderInverted",
        "    if (!value || (isArray(value) && value.length === 0))\n",
        "    if (!value)\n",
        "An inverted section is not rendered for an empty list: "
        "Mustache.render('{{#items}}- {{name}}\\n{{/items}}{{^items}}No items yet.{{/items}}', "
        "{ items: [] }) returns '' instead of 'No items yet.'. With items: false, or no items "
        "at all, it prints 'No items yet.' as expected, and the mustache spec treats an empty "
        "list as false.",
    ),
    Task(
        "num2words years",
        "num2words==0.5.13",
        "num2words/lang_EN.py",
        "Num2Word_EN.to_year",
        "                or (high % 10 == 0 and low < 10)\n",
        "                or high % 10 == 0\n",
        "num2words(2024, to='year') returns 'two thousand and twenty-four'; read as a year it "
        "should be 'twenty twenty-four'. num2words(2010, to='year') gives 'two thousand and "
        "ten' instead of 'twenty ten'. Other years are right: num2words(1999, to='year') is "
        "'nineteen ninety-nine' and num2words(2005, to='year') 'two thousand and five'.",
    ),
    # A pasted traceback.
    Task(
        "docutils accented title crash",
        "docutils==0.21.2",
        "docutils/nodes.py",
        "make_id",
        "'NFKD', id).encode('ascii', 'ignore').decode('ascii')",
        "'NFKD', id).encode('ascii').decode('ascii')",
        "Since upgrading docutils, publish_parts (and rst2html) crash on our French "
        "documents; the English ones convert fine:\n\n{traceback}",
        "from docutils.core import publish_parts\n"
        "source = 'Résumé\\n======\\n\\nFive years of experience.\\n'\n"
        "print(publish_parts(source, writer_name='html')['body'])",
    ),
    Task(
        "acorn comments array crash",
        "acorn@8.11.3",
        "dist/acorn.js",
        "pushComment",
        "        { comment.range = [start, end]; }\n      array.push(comment);",
        "        { comment.range = [start, end]; }\n      options.onComment.push(comment);",
        "acorn.parse throws as soon as the code has a comment when I pass an array as "
        "onComment (the README says the comments are pushed to it):\n\n{traceback}",
        "const acorn = require('./dist/acorn.js');\n"
        "const comments = [];\n"
        "acorn.parse('// the answer\\nconst answer = 42; /* done */\\n', "
        "{ ecmaVersion: 2020, onComment: comments });\n"
        "console.log(comments);",
    ),
    Task(
        "natsort leading digits crash",
        "natsort==8.4.0",
        "natsort/utils.py",
        "sep_inserter",
        "        first = next(iterator)\n        if type(first) in types:\n"
        "            yield sep\n        yield first\n",
        "        first = next(iterator)\n        yield first\n",
        "natsorted crashes on my playlist when some names start with a number and others "
        "with a letter:\n\n{traceback}\n\nI expected ['01 intro.mp3', 'track1.mp3', "
        "'track2.mp3', 'track10.mp3']. Lists whose names all start with a letter, or all "
        "with a number, sort fine.",
        "from natsort import natsorted\n"
        "print(natsorted(['track10.mp3', 'track2.mp3', '01 intro.mp3', 'track1.mp3']))",
    ),
    # A failing test suite, run as the session's check.
    Task(
        "isodate unittest suite",
        "sdist:isodate==0.6.1",
        "src/isodate/isotzinfo.py",
        "build_tzinfo",
        "    return FixedOffset(tzsign * tzhour, tzsign * tzmin, tzname)",
        "    return FixedOffset(tzsign * tzhour, tzmin, tzname)",
        "Three of the tests fail since my last change (PYTHONPATH=src python -m unittest "
        "discover -s src). Please fix the library, not the tests.",
        check="PYTHONPATH=src python -m unittest discover -s src",
    ),
    Task(
        "sqlparse suite",
        "sdist:sqlparse==0.5.0",
        "sqlparse/sql.py",
        "NameAliasMixin.get_alias",
        "            return self._get_first_name(kw_idx + 1, keywords=True)",
        "            return self._get_first_name(kw_idx, keywords=True)",
        "The test suite fails since my last change (python -m pytest tests). Fix the code, "
        "not the tests.",
        check="python -m pytest -q -p no:cacheprovider tests",
    ),
    Task(
        "dotenv node test",
        "dotenv@16.4.5",
        "lib/main.js",
        "parse",
        "    if (maybeQuote === '\"') {",
        '    if (maybeQuote === "\'") {',
        "node --test test/dotenv.test.js fails; please fix the library, not the tests.",
        check="node --test test/dotenv.test.js",
        tests={"test/dotenv.test.js": DOTENV_TEST},
    ),
]
