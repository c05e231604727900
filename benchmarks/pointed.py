"""Whether a first prompt holds the code a bug report points at (issue 44), on real libraries.

    python benchmarks/pointed.py                # 19 bug tasks and 12 held out, a pasted chat
    python benchmarks/pointed.py --window 8192  # the same with --context-tokens 8192
    python benchmarks/pointed.py --only ms,qs   # some of them
    python benchmarks/pointed.py --cost         # what the section costs on a big tree

Each task is a released pure-Python or JavaScript package, downloaded with ``pip download``
or ``npm pack`` into ``benchmarks/.cache/`` (git-ignored; once) and unpacked into a fresh
workspace; a bug is injected (one edit to one definition, checked to apply exactly once); and
a session is started on it through the real command line (``codingagent start TASK
--no-watch``, as a pasted chat starts), the task worded as a user reports the bug: what they
called and what they saw, never the line. Two tasks paste a traceback, made by running the
buggy code (Python, or Node.js), its paths rewritten to an installed copy's, as a user's are.
The held-out tasks (``pointed_heldout.py``, written without the ranking code in view) add
tracebacks and failing test suites: a task's ``tests`` are written into the workspace and its
``check`` is the session's ``--check`` (run before the first prompt, its failure shown there);
``python`` in a check is the interpreter running the benchmark.

Printed, one markdown row a task: whether the first prompt holds the whole definition that
must change (every line, numbered as READ_FILE numbers it), where (the Code the Task Points
At section, or only its first line in the Code Map), and the first prompt's size in tokens:
by the prompt's own estimate (four characters a token) and by the bound the window fitting
uses (a token per three bytes). Deterministic: no timing.

``--cost`` times the section alone (``prompt.pointed.pointed_section``, as a first prompt
makes it, a pasted chat's budget) on the generated trees of ``benchmarks/codemap.py`` (1,000
and 10,000 files), already mapped once (the tags and graph cached, as for a new session on a
tree seen before), a new task each run and the word caches cleared (as in a new process):
medians of five runs, wall and CPU, beside the cached map of the same tree.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

from codingagent.codemap import lexical
from codingagent.execute.symbols import find_symbol
from codingagent.frontends.cli import main
from codingagent.prompt.fitting import estimate
from codingagent.prompt.mapview import map_section
from codingagent.prompt.pointed import PASTED_TOKENS, pointed_section
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
    check: str = ""  # the session's --check: a test command that fails on the bug
    tests: dict[str, str] = field(default_factory=dict)  # test files to write, by path


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


def fetch(package: str) -> Path:
    """The package unpacked in the cache (downloaded the first time)."""
    npm = "@" in package.lstrip("@")
    unpacked = CACHE / package.replace("/", "_")
    if unpacked.is_dir():
        return unpacked
    download = CACHE / "downloads"
    download.mkdir(parents=True, exist_ok=True)
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


def workspace(task: Task, root: Path, tree: Path | None = None) -> Path:
    """A fresh copy of the package (``tree``: a copy at hand, its ``.py.txt`` files as
    ``.py``, as the tests vendor them) with the bug injected."""
    ws = root / "ws"
    shutil.copytree(tree or fetch(task.package) / "tree", ws)
    for vendored in ws.rglob("*.py.txt"):
        vendored.rename(vendored.with_suffix(""))
    path = ws / task.path
    text = path.read_text()
    assert text.count(task.old) == 1, f"{task.name}: the bug's text is not there once"
    path.write_text(text.replace(task.old, task.new))
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
    for name, text in task.tests.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    flags = ["--context-tokens", str(window)] if window else []
    if task.check:
        flags += ["--check", task.check]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
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
        env={"PATH": path},  # the check's python: this one
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


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--window", type=int, default=None, help="--context-tokens")
    parser.add_argument("--only", default="", help="tasks whose name holds one of these words")
    parser.add_argument("--cost", action="store_true", help="time the section on big trees")
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
    from pointed_heldout import HELDOUT_TASKS  # here: it imports this file as ``pointed``

    wanted = [w for w in args.only.split(",") if w]
    every = TASKS + HELDOUT_TASKS
    tasks = [t for t in every if not wanted or any(w in t.name for w in wanted)]
    heldout = {t.name for t in HELDOUT_TASKS}
    print(
        "| task | definition to change | whole in the first prompt | where | "
        "first prompt, tokens (4 chars) | tokens (3 bytes) | section, tokens |"
    )
    print("|---|---|---|---|---|---|---|")
    found = {False: 0, True: 0}  # by whether the task is held out
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            text, ws = first_prompt(task, Path(tmp), args.window)
            whole, where = holds(text, task, ws)
        found[task.name in heldout] += whole
        section = text.split(SECTION, 1)[1].split("=== PROMPT ===")[0] if SECTION in text else ""
        print(
            f"| {task.name} | `{task.symbol}` ({task.path}) | {'yes' if whole else 'no'} | "
            f"{where} | {estimate_tokens(text):,} | {estimate(text):,} | "
            f"{estimate_tokens(section):,} |"
        )
    counts = {out: sum((t.name in heldout) == out for t in tasks) for out in (False, True)}
    print()
    for out, kind in ((False, "tasks"), (True, "held-out tasks")):
        if counts[out]:
            print(
                f"{found[out]} of {counts[out]} first prompts ({kind}) hold the whole "
                "definition to change."
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
