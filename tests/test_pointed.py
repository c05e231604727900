"""The code the task points at (docs/prompts.md): a first prompt shows, whole and numbered,
the definitions the task names, its traceback's frames, the failing tests of the check and
what they call, then those its words point at, within a budget that follows the window; what
did not fit is named with the READ_FILE that shows it. Driven through the real command line
on real code in a workspace."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from test_codemap_budget import FIRST_LOOK, many_files
from test_project_context import make_run, start

from codingagent.prompt.fitting import estimate, fit_prompt, prompt_budget
from codingagent.prompt.pointing.definitions import Tree
from codingagent.prompt.pointing.frames import Frame, frames
from codingagent.prompt.pointing.pointed import HEADING, PASTED_TOKENS, pointed_tokens
from codingagent.protocol.commands import numbered
from codingagent.workspace import Workspace

FILLERS = "".join(f"\n\ndef filler_{n}(x):\n    return x + {n}\n" for n in range(12))
HEADERS = (
    '"""Reading headers."""\n\n\n'
    "def parse_header(line):\n"
    '    name, _, rest = line.partition(":")\n'
    "    return name.strip().lower(), _split_params(rest)\n\n\n"
    "def _split_params(rest):\n"
    "    params = {}\n"
    '    for part in rest.split(";")[:-1]:\n'
    '        key, _, value = part.partition("=")\n'
    "        params[key.strip()] = value.strip()\n"
    "    return params\n" + FILLERS
)


def section(prompt: str) -> str:
    assert HEADING in prompt
    return prompt.split(f"{HEADING}\n", 1)[1].split("\n\n", 1)[0]


def whole(text: str, name: str, path: str, prompt: str) -> bool:
    """Whether ``prompt`` shows the definition ``name`` of ``text`` (the file ``path``)
    whole, numbered as READ_FILE numbers it, in one view of ``path``."""
    lines = text.split("\n")
    start = next(
        n for n, line in enumerate(lines, 1) if re.match(rf"\s*(def|class) {name}\b", line)
    )
    indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    end = start
    for n in range(start + 1, len(lines) + 1):
        line = lines[n - 1]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        if line.strip():
            end = n
    block = "\n".join(numbered(lines[start - 1 : end], start))
    views = re.findall(
        rf"^--- {re.escape(path)} ---\n(.*?)^--- end {re.escape(path)} ---$", prompt, re.M | re.S
    )
    return any(block in view for view in views)


def test_the_definition_a_task_names_is_shown_whole_with_what_it_calls(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"mail/headers.py": HEADERS, "mail/__init__.py": ""})
    start(run, "parse_header('a: x=1; y=2') drops y: the last parameter is lost")
    prompt = run.prompt()
    shown = section(prompt)
    assert whole(HEADERS, "parse_header", "mail/headers.py", shown)
    assert whole(HEADERS, "_split_params", "mail/headers.py", shown)  # what it calls
    assert "filler_3" not in shown  # the rest of the file is not what the task points at
    assert shown.index("def parse_header") < shown.index("def _split_params")
    # the section comes after the code map, in the CONTEXT
    assert prompt.index("## Code Map") < prompt.index(HEADING) < prompt.index("=== PROMPT ===")


SHOP = (
    "def price(item):\n    return item['price']\n" + FILLERS + "\n\ndef run(order):\n"
    "    total = 0\n    for item in order:\n        total += price(item)\n    return total\n"
)


def test_the_code_is_shown_with_the_map_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGAGENT_MAP_TOKENS", "0")  # no map: its tags are not made
    run = make_run(tmp_path, {"mail/headers.py": HEADERS})
    start(run, "parse_header drops the last parameter")
    prompt = run.prompt()
    assert "## Code Map" not in prompt
    assert whole(HEADERS, "parse_header", "mail/headers.py", section(prompt))


def test_a_secret_in_the_code_shown_is_masked(tmp_path: Path) -> None:
    token = "gh" + "p_" + "Zq3" * 12  # made here: secret scanners read repositories
    client = (
        "def connect_client(url):\n"
        f'    headers = {{"Authorization": "token {token}"}}\n'
        "    return open_session(url, headers)\n" + FILLERS
    )
    run = make_run(tmp_path, {"app/client.py": client})
    start(run, "connect_client fails with a 401 since the token was rotated")
    prompt = run.prompt()
    shown = section(prompt)
    assert "def connect_client(url):" in shown and "[masked: " in shown
    assert token not in prompt and token[4:20] not in prompt


def test_a_traceback_in_the_task_pulls_in_its_frames(tmp_path: Path) -> None:
    # six copies of one module: only the traceback's path and line say which one failed
    files = {f"jobs/v{n}/shop.py": SHOP for n in range(6)}
    run = make_run(tmp_path, files)
    line = SHOP.split("\n").index("        total += price(item)") + 1
    task = (
        "Running an order crashes:\n\nTraceback (most recent call last):\n"
        '  File "/home/me/app/main.py", line 3, in <module>\n'
        f'  File "/home/me/.venv/lib/python3.12/site-packages/jobs/v4/shop.py", line {line}, '
        "in run\n        total += price(item)\n"
        "TypeError: string indices must be integers, not 'str'\n"
    )
    start(run, task)
    shown = section(run.prompt())
    first_view = shown.split("\n", 2)[1]
    assert first_view == "--- jobs/v4/shop.py ---"  # the frame's copy before the others
    assert whole(SHOP, "run", "jobs/v4/shop.py", shown)
    assert whole(SHOP, "price", "jobs/v4/shop.py", shown)  # what the frame's definition calls


def test_a_nameless_javascript_frame_points_at_the_function_around_its_line(
    tmp_path: Path,
) -> None:
    body = "".join(f"function helper{n}(a) {{\n  return a + {n};\n}}\n\n" for n in range(15))
    cart = body + (
        "module.exports = function (items) {\n"
        "  return items.reduce((sum, i) => sum + i.cost.x, 0);\n};\n"
    )
    run = make_run(tmp_path, {f"lib/v{n}/cart.js": cart for n in range(4)})
    line = cart.split("\n").index("  return items.reduce((sum, i) => sum + i.cost.x, 0);") + 1
    task = (
        "Totals throw since 2.0:\nTypeError: Cannot read properties of undefined (reading 'x')\n"
        f"    at /home/me/app/node_modules/cart/lib/v2/cart.js:{line}:40\n"
    )
    start(run, task)
    shown = section(run.prompt())
    assert shown.split("\n", 2)[1] == "--- lib/v2/cart.js ---"  # the frame's copy first
    assert f"{line:>4} |   return items.reduce((sum, i) => sum + i.cost.x, 0);" in shown
    assert f"{line - 1:>4} | module.exports = function (items) {{" in shown
    assert f"{line + 1:>4} | }};" in shown


BODIES = (
    "def parse_body(text):\n    return _split_lines(text)\n\n\n"
    "def _split_lines(text):\n    return text.split('\\n')\n"
)


@pytest.mark.slow
def test_the_failing_tests_of_the_check_and_what_they_call_are_shown(tmp_path: Path) -> None:
    failing = (
        "from mail.headers import parse_header\n\n\n"
        "def test_two_params():\n"
        "    assert parse_header('a: x=1; y=2') == ('a', {'x': '1', 'y': '2'})\n"
    )
    passing = (
        "from mail.bodies import parse_body\n\n\n"
        "def test_two_lines():\n"
        "    assert parse_body('a\\nb') == ['a', 'b']\n"
    )
    files = {
        "mail/headers.py": HEADERS,
        "mail/bodies.py": BODIES,
        "mail/__init__.py": "",
        "tests/test_bodies.py": passing,
        "tests/test_headers.py": failing,
    }
    run = make_run(tmp_path, files)
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    start(run, "The test suite fails, please fix it", "--check", check)
    shown = section(run.prompt())
    # what the failing test calls first (a test is evidence of where the bug is, rarely where
    # it is), with what that calls, then the failing test
    assert shown.split("\n", 2)[1] == "--- mail/headers.py ---"
    assert whole(HEADERS, "parse_header", "mail/headers.py", shown)
    assert whole(HEADERS, "_split_params", "mail/headers.py", shown)
    assert whole(failing, "test_two_params", "tests/test_headers.py", shown)
    assert shown.index("def parse_header") < shown.index("def test_two_params")


def test_a_small_window_gets_the_map_alone_within_the_window(tmp_path: Path) -> None:
    for window in (4096, 8192):
        run = make_run(tmp_path / str(window), {"mail/headers.py": HEADERS})
        start(run, "parse_header drops the last parameter", "--context-tokens", str(window))
        prompt = run.prompt()
        assert HEADING not in prompt and "| params = {}" not in prompt.replace("    ", "")
        assert estimate(prompt) <= prompt_budget(window)
    assert "## Code Map" in prompt  # 8,192 tokens: the map, as before
    big = make_run(tmp_path / "big", {"mail/headers.py": HEADERS})
    start(big, "parse_header drops the last parameter", "--context-tokens", "131072")
    assert "params = {}" in section(big.prompt())
    assert pointed_tokens(None) == PASTED_TOKENS
    assert pointed_tokens(8192) == 0 < pointed_tokens(32_768) < pointed_tokens(131_072)


def test_what_did_not_fit_is_named_with_the_read_file_that_shows_it(tmp_path: Path) -> None:
    body = "".join(f"    header_{n} = line.split(':')[{n}]\n" for n in range(60))
    files = {
        f"mail/part{n}.py": f"def read_header_{n}(line):\n{body}    return line\n"
        for n in range(12)
    }
    run = make_run(tmp_path, files)
    start(run, "Reading a header fails when the header line has no colon")
    prompt = run.prompt()
    shown = section(prompt)
    assert len(prompt) < 12_000 * 4
    assert len(shown) <= PASTED_TOKENS * 4
    left = re.findall(
        r'^  READ_FILE path="(mail/part\d+\.py)" symbol="(read_header_\d+)"', shown, re.M
    )
    assert (
        "(left out to keep this prompt short, most likely first; each READ_FILE shows one:" in shown
    )
    assert left
    for path, name in left:
        assert f"def {name}(line):" not in shown
        assert f"--- {path} ---" not in shown
    taken = re.findall(r"^\s*1 \| def (read_header_\d+)\(line\):$", shown, re.M)
    assert taken and len(taken) + len(left) <= 12
    for name in taken:  # each one shown is shown whole
        n = name.rpartition("_")[2]
        assert whole(files[f"mail/part{n}.py"], name, f"mail/part{n}.py", shown)


@pytest.mark.slow
def test_a_big_tree_read_in_part_shows_what_the_task_names(tmp_path: Path) -> None:
    run = make_run(tmp_path, {})
    many_files(run.ws, 1500)  # more than a first map parses, and than the section reads
    start(run, "work_0042 returns the wrong value for negative numbers")
    prompt = run.prompt()
    assert FIRST_LOOK in prompt  # the map is partial
    shown = section(prompt)
    text = (run.ws / "pkg2/mod_0042.py").read_text()
    assert shown.split("\n", 2)[1] == "--- pkg2/mod_0042.py ---"
    assert whole(text, "work_0042", "pkg2/mod_0042.py", shown)
    called = (run.ws / "pkg3/mod_0043.py").read_text()
    assert whole(called, "work_0043", "pkg3/mod_0043.py", shown)  # what it calls


def test_a_window_too_small_leaves_out_the_map_then_the_code(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"mail/headers.py": HEADERS})
    start(run, "parse_header drops the last parameter")
    prompt = run.prompt()
    code = section(prompt)
    fitted, cuts = fit_prompt(prompt, estimate(prompt) - 10)
    assert cuts == ("the code map left out",) and code in fitted
    fitted, cuts = fit_prompt(prompt, estimate(prompt) - estimate(code))
    assert cuts == ("the code map left out", "the code the task points at left out")
    assert "params = {}" not in fitted
    assert f"{HEADING}\n(the code the task points at is left out here" in fitted
    assert 'READ_FILE path="FILE" symbol="NAME" shows a definition)' in fitted


def test_frames_are_read_from_tracebacks_test_runs_and_stacks() -> None:
    text = (
        '  File "/venv/site-packages/pkg/core.py", line 44, in load\n'
        '  File "<stdin>", line 1, in <module>\n'
        "tests/test_core.py:12: in test_load\n"
        "pkg/core.py:30: AssertionError\n"
        "FAILED tests/test_core.py::TestLoad::test_empty[1-2] - assert 1 == 2\n"
        "FAIL: test_name (tests.test_app.TestParse.test_name)\n"
        "    at parse (/app/node_modules/semver/functions/parse.js:9:12)\n"
        "    at /app/index.js:5:5\n"
        "    at async Loader.load [as run] (file:///app/src/load.mjs:3:9)\n"
        "see lib/x.js:99 for more\n"
    )
    assert frames(text) == [
        Frame("/venv/site-packages/pkg/core.py", 44, "load"),
        Frame("<stdin>", 1, None),
        Frame("tests/test_core.py", 12, "test_load"),
        Frame("pkg/core.py", 30, None),
        Frame("tests/test_core.py", None, "TestLoad.test_empty"),
        Frame("tests/test_app.py", None, "TestParse.test_name"),
        Frame("/app/node_modules/semver/functions/parse.js", 9, "parse", True),
        Frame("/app/index.js", 5, None, True),
        Frame("/app/src/load.mjs", 3, "Loader.load", True),
        Frame("lib/x.js", 99, None),
    ]
    assert frames(None) == [] and frames("no frames here: 3:4") == []


def test_a_frame_s_path_names_the_file_that_shares_the_longest_tail(tmp_path: Path) -> None:
    for path in ("a/utils.py", "b/utils.py", "c/core.py", ".hidden/core.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("def f():\n    return 1\n")
    ws = Workspace(tmp_path)
    tree = Tree(ws, ws.list_files(limit=100), None)
    assert tree.resolve("utils.py") is None  # two files share it: no guess
    assert tree.resolve("/home/me/.venv/lib/site-packages/b/utils.py") == "b/utils.py"
    assert tree.resolve(f"{tmp_path}/a/utils.py") == "a/utils.py"
    assert tree.resolve("./c/core.py") == "c/core.py"
    assert tree.resolve("./.hidden/core.py") == ".hidden/core.py"
    assert tree.resolve("lib/missing.py") is None


SOURCES = Path(__file__).resolve().parent / "pointed_sources"


def benchmark() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "pointed.py"
    spec = importlib.util.spec_from_file_location("pointed_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["inflection ordinalize", "ms long format plural"])
def test_benchmark_tasks_on_vendored_sources(tmp_path: Path, name: str) -> None:
    bench = benchmark()
    (task,) = [t for t in bench.TASKS if t.name == name]
    tree = SOURCES / task.package.replace("==", "@").split("@")[0]
    text, ws = bench.first_prompt(task, tmp_path, None, tree)
    held, where = bench.holds(text, task, ws)
    assert held and where.startswith("section"), where
    assert estimate(text) < 12_000
    shutil.rmtree(ws)


def test_a_pasted_chat_s_first_prompt_stays_under_12000_tokens(tmp_path: Path) -> None:
    """A big tree (its listing fills ``listing_chars``, its map its budget) and a task
    pointing at more code than the section holds: the listing gives up some of its room,
    the section takes what the rest leaves, and the prompt stays under 12,000 tokens by the
    window fitting's bound (three bytes a token)."""
    files = {
        f"plugins/group_{n % 40:02d}/handler_for_event_{n:04d}.py": (
            f"def handle_event_{n}(event):\n    return event.get('kind_{n}')\n"
        )
        for n in range(600)
    }
    body = "".join(f"    header_{n} = line.split(':')[{n % 7}].strip()\n" for n in range(60))
    for n in range(12):
        calls = "".join(f"    read_header_{m}(line)\n" for m in range(12) if m != n)
        files[f"mail/part{n}.py"] = f"def read_header_{n}(line):\n{body}{calls}    return line\n"
    run = make_run(tmp_path, files)
    start(run, "Reading a header fails when the header line has no colon: read_header_3")
    prompt = run.prompt()
    assert estimate(prompt) <= 12_000 and len(prompt) <= 12_000 * 4
    assert whole(files["mail/part3.py"], "read_header_3", "mail/part3.py", section(prompt))
    listing = prompt.split("## Workspace Files\n", 1)[1].split("\n\n## ", 1)[0]
    assert 3000 < len(listing) <= 4000  # it gave up half of listing_chars, no more


def test_a_pasted_first_prompt_of_text_beyond_ascii_stays_under_12000_tokens(
    tmp_path: Path,
) -> None:
    """The section is filled by characters, the limit is in bytes (three a token): code whose
    strings and comments are not ASCII (three bytes a character here) gets a smaller
    section, so the prompt stays under the limit."""
    words = "日本語の数字を言葉に変える" * 4
    files = {
        f"lang/lang_{n:02d}.py": "".join(
            f"def to_words_{n}_{m}(number):\n"
            + "".join(f"    # {words}\n" for _ in range(6))
            + f"    return '{words}' + str(number)\n\n"
            for m in range(12)
        )
        for n in range(40)
    }
    run = make_run(tmp_path, files)
    start(run, "to_words_3_4 gives the wrong words for 2024, and so does to_words_3_5")
    prompt = run.prompt()
    assert estimate(prompt) <= 12_000, estimate(prompt)
    assert "to_words_3_4" in section(prompt)


def test_a_source_with_one_long_data_line_is_not_taken_for_a_minified_bundle(
    tmp_path: Path,
) -> None:
    """A parser's source holds a table of Unicode ranges on one long line; its functions
    are still the code to fix when a traceback points into them (a minified bundle, most of
    it in long lines, is not)."""
    table = "var astral = [" + ", ".join(str(n) for n in range(1500)) + "];\n"
    helpers = "".join(f"function helper{n}(x) {{\n  return x + {n};\n}}\n\n" for n in range(300))
    source = (
        table
        + helpers
        + "function pushComment(options, comment) {\n"
        + "  options.onComment.push(comment);\n}\n"
    )
    line = source.split("\n").index("  options.onComment.push(comment);") + 1
    run = make_run(tmp_path, {"dist/acorn.js": source, "package.json": '{"main": "dist/acorn.js"}'})
    start(
        run,
        "parse throws on a comment:\n"
        f"TypeError: options.onComment.push is not a function\n"
        f"    at pushComment (/home/me/app/node_modules/acorn/dist/acorn.js:{line}:21)\n",
    )
    shown = section(run.prompt())
    for number in (line - 1, line, line + 1):  # the function, whole, as READ_FILE numbers it
        assert numbered([source.split("\n")[number - 1]], number)[0] in shown
