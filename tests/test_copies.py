"""One copy of duplicated code (codingagent/prompt/pointing/copies.py, docs/prompts.md): a
package that ships its code twice (``es/lib/x.js`` beside ``lib/x.js``, ``x.js`` beside ``x.cjs``, a
``dist/`` bundle beside its sources, ``x.py`` beside ``x/__init__.py``) has one copy of a
definition shown: the one the evidence reaches, else the one the package's entry imports,
else the source. Driven through the real command line on real files in a workspace; the
failing suite run by a real ``node --test`` as the check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_codemap_budget import FIRST_LOOK, many_files
from test_pointed import section
from test_project_context import make_run, start

from codingagent.prompt.pointing.copies import Copies, imports, made, module_key
from codingagent.prompt.pointing.definitions import Tree
from codingagent.workspace import Workspace

CHECK_HOST = (
    "function isRegExp(obj) {\n"
    "  return Object.prototype.toString.call(obj) === '[object Regexp]';\n"
    "}\n\n"
    "{export}function checkHost(host, matches) {\n"
    "  for (let i = 0; i < matches.length; i++) {\n"
    "    const match = matches[i];\n"
    "    if (host === match || (isRegExp(match) && match.test(host))) {\n"
    "      return true;\n"
    "    }\n"
    "  }\n"
    "  return false;\n"
    "}\n"
)
URL_BODY = (
    "  GUARD(url);\n"
    "  const host = url.split('/')[2];\n"
    "  if (options.host_whitelist && !CHECK(host, options.host_whitelist)) {\n"
    "    return false;\n"
    "  }\n"
    "  if (options.host_blacklist && CHECK(host, options.host_blacklist)) {\n"
    "    return false;\n"
    "  }\n"
    "  return true;\n"
    "}\n"
)
ES_URL = (
    "import assertString from './util/assertString';\n"
    "import checkHost from './util/checkHost';\n\n"
    "export default function isURL(url, options) {\n"
    + URL_BODY.replace("GUARD", "assertString").replace("CHECK", "checkHost")
)
CJS_URL = (
    '"use strict";\n\n'
    "exports.default = isURL;\n"
    'var _assertString = _interopRequireDefault(require("./util/assertString"));\n'
    'var _checkHost = _interopRequireDefault(require("./util/checkHost"));\n'
    "function _interopRequireDefault(e) { return e && e.__esModule ? e : { default: e }; }\n"
    "function isURL(url, options) {\n"
    + URL_BODY.replace("GUARD", "(0, _assertString.default)").replace(
        "CHECK", "(0, _checkHost.default)"
    )
)
ASSERT = "{export}function assertString(input) {\n  if (typeof input !== 'string') throw 1;\n}\n"
VALIDATOR = {
    "index.js": 'var _isURL = _interopRequireDefault(require("./lib/isURL"));\n',
    "es/lib/isURL.js": ES_URL,
    "es/lib/util/checkHost.js": CHECK_HOST.replace("{export}", "export default "),
    "es/lib/util/assertString.js": ASSERT.replace("{export}", "export default "),
    "lib/isURL.js": CJS_URL,
    "lib/util/checkHost.js": CHECK_HOST.replace("{export}", ""),
    "lib/util/assertString.js": ASSERT.replace("{export}", ""),
}
HOSTS = (
    "validator.isURL('https://api.example.com/v1', { host_whitelist: [/\\.example\\.com$/] }) "
    "returns false: regular expressions in host_whitelist are ignored."
)


def test_of_an_es_and_a_lib_copy_the_one_not_under_a_build_folder_is_shown(
    tmp_path: Path,
) -> None:
    """Babel's ES-module copy under ``es/`` beside the CommonJS one under ``lib/``: the
    CommonJS copy only, with what it calls through Babel's ``(0, _checkHost.default)(``."""
    run = make_run(tmp_path, VALIDATOR)
    start(run, HOSTS)
    shown = section(run.prompt())
    assert shown.split("\n", 2)[1] == "--- lib/isURL.js ---"
    assert "--- lib/util/checkHost.js ---" in shown  # a small file, whole: isRegExp too
    assert "[object Regexp]" in shown and "isRegExp(match) && match.test(host)" in shown
    assert "--- es/" not in shown  # never a second copy
    assert shown.count("function isURL(url, options) {") == 1


ROUND = "function round(x) {\n  return Math.floor(x);\n}\n"


@pytest.mark.parametrize("main", ["index.cjs", None])
def test_of_a_js_and_a_cjs_copy_the_one_the_package_entry_requires_is_shown(
    tmp_path: Path, main: str | None
) -> None:
    """``round.js`` beside ``round.cjs``: the one the package's entry requires (without a
    manifest: the plain ``.js``)."""
    files = {
        "index.cjs": 'exports.round = require("./round.cjs").round;\n',
        "index.js": 'export { round } from "./round.js";\n',
        "round.js": "export " + ROUND,
        "round.cjs": '"use strict";\nexports.round = round;\n\n' + ROUND,
    }
    if main is not None:
        files["package.json"] = json.dumps({"name": "round", "main": main})
    run = make_run(tmp_path, files)
    start(run, "round(-2.5) gives -3, it should round towards zero: -2")
    shown = section(run.prompt())
    wanted, other = ("round.cjs", "round.js") if main else ("round.js", "round.cjs")
    assert f"--- {wanted} ---" in shown and f"--- {other} ---" not in shown


HOURS_TEST = """\
const test = require("node:test");
const assert = require("node:assert/strict");
const { hours } = require("../hours.cjs");

test("hours are counted backwards for an earlier date", () => {
  assert.equal(hours(0, 9000000), -2);
});
"""


@pytest.mark.slow
def test_the_copies_a_failing_test_requires_are_shown(tmp_path: Path) -> None:
    """``x.js`` (ES modules, what the package's ``main`` loads) beside ``x.cjs``: the failing
    test requires the ``.cjs`` copies, so those are shown, and what they require by path."""
    files = {
        "package.json": json.dumps({"name": "hours", "type": "module", "main": "index.js"}),
        "index.js": 'export { hours } from "./hours.js";\n',
        "hours.js": (
            'import { round } from "./_lib/round.js";\n\n'
            "export function hours(later, earlier) {\n"
            "  return round((later - earlier) / 3600000);\n}\n"
        ),
        "hours.cjs": (
            '"use strict";\nexports.hours = hours;\nvar _index = require("./_lib/round.cjs");\n\n'
            "function hours(later, earlier) {\n"
            "  return (0, _index.round)((later - earlier) / 3600000);\n}\n"
        ),
        "_lib/round.js": "export " + ROUND,
        "_lib/round.cjs": '"use strict";\nexports.round = round;\n\n' + ROUND,
        "test/hours.test.cjs": HOURS_TEST,
    }
    run = make_run(tmp_path, files)
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    start(run, "test/hours.test.cjs fails; fix the library", "--check", "node --test test")
    shown = section(run.prompt())
    assert "--- hours.cjs ---" in shown and "--- _lib/round.cjs ---" in shown
    assert "--- hours.js ---" not in shown and "--- _lib/round.js ---" not in shown


LOADER = "".join(
    f"function readPart{n}(state) {{\n"
    f"  state.position += {n};\n"
    f"  return state.input.slice(state.position, state.position + {n});\n"
    "}\n\n"
    for n in range(6)
) + (
    "function readBlock(state, chomping) {\n"
    "  if (chomping !== 'clip') {\n"
    "    throw new Error('repeat of a chomping mode identifier');\n"
    "  }\n"
    "  return readPart1(state) + readPart2(state);\n"
    "}\n"
)


def test_a_bundle_s_copy_of_its_sources_is_not_shown(tmp_path: Path) -> None:
    """``dist/pkg.js`` holds the same functions as ``lib/loader.js`` (a bundle built from
    it): the source's are shown, the bundle's never."""
    bundle = (
        "(function (global, factory) {\n"
        "  typeof exports === 'object' ? factory(exports) : factory((global.pkg = {}));\n"
        "}(this, (function (exports) { 'use strict';\n\n"
        + LOADER
        + "\nexports.readBlock = readBlock;\n})));\n"
    )
    files = {"lib/loader.js": LOADER, "dist/pkg.js": bundle, "index.js": "require('./lib/x');\n"}
    run = make_run(tmp_path, files)
    start(run, "readBlock throws on a block scalar with a chomping indicator ('|-')")
    shown = section(run.prompt())
    assert shown.split("\n", 2)[1] == "--- lib/loader.js ---"
    assert "function readBlock(state, chomping) {" in shown
    assert "dist/" not in shown


def test_a_python_package_is_shown_before_a_module_of_its_name_beside_it(tmp_path: Path) -> None:
    """``inflect.py`` and ``inflect/__init__.py`` alike: Python imports the package."""
    code = "def ordinal(number):\n    return 'th' if number % 100 in (11, 12) else 'rd'\n"
    run = make_run(tmp_path, {"inflect.py": code, "inflect/__init__.py": code})
    start(run, "ordinal(113) returns 'rd', it should be 'th'")
    shown = section(run.prompt())
    assert "--- inflect/__init__.py ---" in shown and "--- inflect.py ---" not in shown


def test_a_module_s_builds_share_its_key() -> None:
    same = ["lib/isURL.js", "es/lib/isURL.js", "isURL.cjs", "dist/esm/isURL.mjs", "src/isURL.ts"]
    assert len({module_key(path) for path in same}) == 1
    assert module_key("lib/marked.esm.js") == module_key("lib/marked.cjs")
    assert module_key("lib/marked.umd.js") == module_key("lib/marked.cjs")
    assert module_key("locale/af/x.js") != module_key("locale/ar/x.js")  # not builds
    assert module_key("a/util.py") != module_key("b/util.py")
    assert [made(p) for p in ("src/x.ts", "lib/x.js", "dist/x.js", "x.min.js", "es/x.js")] == [
        0,
        1,
        2,
        2,
        2,
    ]


def test_imports_by_path_are_the_files_they_name() -> None:
    files = {"lib/b.js", "lib/b.cjs", "c.mjs", "lib/d/index.js", "pkg/x.py", "pkg/y/__init__.py"}
    js = (
        'const b = require("./b.cjs");\n'
        'import c from "../c.mjs";\n'
        'import "./d";\n'
        "import fs from 'fs';\n"
    )
    assert imports("lib/a.js", js, files) == {"lib/b.cjs", "c.mjs", "lib/d/index.js"}
    assert imports("lib/a.js", 'require("./b")', files) == {"lib/b.js"}
    python = "from .x import f\nfrom pkg.y import g\nimport os\n"
    assert imports("pkg/z.py", python, files) == {"pkg/x.py", "pkg/y/__init__.py"}


@pytest.mark.parametrize(
    ("manifest", "entry"),
    [
        ({"main": "./main.js"}, "main.js"),
        ({"main": "main.js", "exports": "./index.cjs"}, "index.cjs"),
        ({"exports": {".": {"import": "./e.mjs", "require": {"default": "./e.cjs"}}}}, "e.cjs"),
        ({"exports": {"node": "./n.cjs", "default": "./d.js"}}, "n.cjs"),
        (None, None),
    ],
)
def test_the_package_entry_is_what_require_loads(
    tmp_path: Path, manifest: dict[str, object] | None, entry: str | None
) -> None:
    for name in ("main.js", "index.cjs", "e.cjs", "e.mjs", "n.cjs", "d.js"):
        (tmp_path / name).write_text('require("./dep.cjs");\n')
    (tmp_path / "dep.cjs").write_text("exports.x = 1;\n")
    (tmp_path / "package.json").write_text("{" if manifest is None else json.dumps(manifest))
    ws = Workspace(tmp_path)
    found = Copies(Tree(ws, ws.list_files(limit=100), None)).entry()
    assert found == (set() if entry is None else {entry, "dep.cjs"})


TOKENIZE = (
    "function tokenize(line) {\n"
    "  const args = [];\n"
    "  let quote = null;\n"
    "  let i = 0;\n"
    "  for (const c of line) {\n"
    "    // split on spaces unless we are in quotes\n"
    "    if (c === ' ' && !quote) {\n"
    "      i++;\n"
    "      continue;\n"
    "    }\n"
    "    // a closing quote ends what an opening one began, as the shell reads them\n"
    "    if (c === quote) quote = null;\n"
    "    else if (c === '\"' || c === \"'\") quote = c;\n"
    "    args[i] = (args[i] || '') + c;\n"
    "  }\n"
    "  return args;\n"
    "}\n"
)


def test_a_bundle_without_comments_is_a_copy_of_the_code_it_was_built_from(
    tmp_path: Path,
) -> None:
    """A bundler drops comments: ``build/index.cjs``'s ``tokenize`` is the same code as
    ``build/lib/tokenize.js``'s, whose comments make up a third of its words. One copy is
    shown, the one the package's ``main`` loads."""
    bundled = "\n".join(line for line in TOKENIZE.split("\n") if not line.lstrip().startswith("//"))
    files = {
        "package.json": json.dumps({"name": "args", "main": "build/index.cjs"}),
        "build/index.cjs": bundled + "\nmodule.exports = { tokenize };\n",
        "build/lib/tokenize.js": "export " + TOKENIZE,
    }
    run = make_run(tmp_path, files)
    start(run, "tokenize('--name \"John Smith\"') splits the quoted value at its space")
    shown = section(run.prompt())
    assert "--- build/index.cjs ---" in shown
    assert "--- build/lib/tokenize.js ---" not in shown  # never a second copy
    assert shown.count("function tokenize(line) {") == 1


OFFSET = (
    "function offsetOf(zone) {\n"
    "  const table = { EST: -300, EDT: -240, PST: -480, PDT: -420 };\n"
    "  return zone in table ? table[zone] : 0;\n"
    "}\n"
)


@pytest.mark.parametrize("config", [None, "rollup.config.js"])
def test_the_copy_the_entry_loads_before_the_source_unless_the_tree_builds_it_again(
    tmp_path: Path, config: str | None
) -> None:
    """``src/zones.js`` and the ``build/node/zones.js`` the package's ``main`` loads hold
    the same ``offsetOf``. A tree that cannot make its build again (an installed package: no
    bundler's configuration) runs the build's, and an edit there stays: the build's is
    shown; one with ``rollup.config.js`` makes the build from the source: the source's."""
    files = {
        "package.json": json.dumps({"name": "zones", "main": "build/node/zones.js"}),
        "src/zones.js": "export " + OFFSET,
        "build/node/zones.js": '"use strict";\n' + OFFSET + "exports.offsetOf = offsetOf;\n",
    }
    if config is not None:
        files[config] = "export default { input: 'src/zones.js' };\n"
    run = make_run(tmp_path, files)
    start(run, "offsetOf('EST') gives 0 instead of -300")
    shown = section(run.prompt())
    wanted, other = ("src/", "build/") if config else ("build/", "src/")
    assert f"--- {wanted}" in shown and f"--- {other}" not in shown


@pytest.mark.slow
def test_the_entry_is_read_when_the_map_has_not_read_it(tmp_path: Path) -> None:
    """A big tree's first map reads a part, a file over 64 KB last: the package's entry, a
    bundle, is parsed all the same (what runs), so its copy of ``offsetOf`` is shown, not
    the source's the map read."""
    bundle = (
        '"use strict";\n'
        + OFFSET
        + "".join(
            f"function pad{n}(text) {{\n  return String(text).padStart({n % 9 + 1}, '0');\n}}\n"
            for n in range(1200)
        )
    )
    files = {
        "package.json": json.dumps({"name": "zones", "main": "build/node/zones.js"}),
        "src/zones.js": "export " + OFFSET,
        "build/node/zones.js": bundle + "exports.offsetOf = offsetOf;\n",
    }
    assert len(files["build/node/zones.js"]) > 64 * 1024
    run = make_run(tmp_path, files)
    many_files(run.ws, 1500)
    start(run, "offsetOf('EST') gives 0 instead of -300")
    prompt = run.prompt()
    assert (
        FIRST_LOOK in prompt
        and "build/node/zones.js" not in prompt.split("## Code Map")[1].split("##")[0]
    )
    shown = section(prompt)
    assert "--- build/node/zones.js ---" in shown and "--- src/" not in shown
