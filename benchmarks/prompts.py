"""What a scripted six-turn session costs in prompt characters, and in endpoint requests.

    python benchmarks/prompts.py

A library shaped like more-itertools (27 files; one 150 KB module, its tests, docs, packaging)
is written to a temporary folder, and ``codingagent start --model`` drives a session on it
through the real command line (a subprocess), answered by a scripted model: a real HTTP server
on 127.0.0.1 speaking the chat-completions format, which records every request. The model
searches for ``windowed``, reads it by symbol, adds ``window_sums`` with a bug and a test,
runs the test (it fails), reads the new function, fixes it, runs the test again, and sends
DONE: six prompts, six requests.

Printed, one markdown table per configuration: the characters of each prompt (``outbox/``),
the share of each prompt whose lines were already in the previous prompt, and the characters
of each request (the text of all its messages); then a summary table: prompts 2-6 together as
a share of five first prompts (one first prompt for each, what a prompt that repeats
everything costs). Deterministic: no timing. Run it with ``PYTHONPATH`` pointing at an older
checkout to measure that one (docs/prompts.md has the figures).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from scripted_model import Say, ScriptedModel  # the tests' own scripted model

TASK = (
    "Add window_sums(iterable, n) to pkg/more.py: the sums of each window of n items, as "
    "windowed() gives them. Add a test and make it pass."
)
WINDOWED = '''\
def windowed(seq, n, fillvalue=None, step=1):
    """Return a sliding window of width *n* over the given iterable."""
    if n < 0:
        raise ValueError("n must be >= 0")
    window = []
    for item in seq:
        window.append(item)
        if len(window) == n:
            yield tuple(window)
            window = window[step:]
'''
BUGGY = "    return [sum(w) for w in windowed(iterable, n + 1)]\n"
FIXED = "    return [sum(w) for w in windowed(iterable, n)]\n"
REPLIES = [
    '[SEARCH query="def windowed" glob="*.py"]\n',
    '[READ_FILE path="pkg/more.py" symbol="windowed"]\n',
    "I add window_sums after windowed, with a test.\n"
    '[REPLACE path="pkg/more.py"]\n<<<<<<< SEARCH\n'
    "            window = window[step:]\n=======\n"
    "            window = window[step:]\n\n\n"
    "def window_sums(iterable, n):\n"
    '    """The sums of each window of *n* items."""\n'
    f"{BUGGY}>>>>>>> REPLACE\n[/REPLACE]\n"
    '[CREATE_FILE path="tests/test_window_sums.py"]\n'
    "from pkg.more import window_sums\n\n"
    "assert window_sums([1, 2, 3, 4], 2) == [3, 5, 7], window_sums([1, 2, 3, 4], 2)\n"
    'print("ok")\n[/CREATE_FILE]\n'
    "[RUN_COMMAND]\npython3 -m tests.test_window_sums\n[/RUN_COMMAND]\n",
    '[READ_FILE path="pkg/more.py" symbol="window_sums"]\n',
    f'[REPLACE path="pkg/more.py"]\n<<<<<<< SEARCH\n{BUGGY}=======\n{FIXED}'
    ">>>>>>> REPLACE\n[/REPLACE]\n"
    "[RUN_COMMAND]\npython3 -m tests.test_window_sums\n[/RUN_COMMAND]\n",
    "[DONE]\nwindow_sums added to pkg/more.py, with a passing test.\n[/DONE]\n",
]
CONFIGURATIONS = [
    ("protocol = every, stateless requests", {"protocol": "every"}),
    ("protocol = first (default), stateless requests", {"protocol": "first"}),
    ("protocol = first, model_history_turns = 6", {"protocol": "first", "history": 6}),
]


def library(root: Path) -> None:
    """27 files: a package with a 150 KB module, stubs, tests, docs and packaging."""
    files: dict[str, str] = {
        "README.rst": "pkg\n===\n\nMore routines for operating on iterables.\n" * 20,
        "LICENSE": "Copyright (c) 2026\n\nPermission is hereby granted, free of charge.\n" * 8,
        "pyproject.toml": '[project]\nname = "pkg"\nversion = "1.0"\n',
        "tox.ini": "[tox]\nenvlist = py3\n",
        "setup.cfg": "[flake8]\nmax-line-length = 100\n",
        "Makefile": "test:\n\tpython3 -m unittest\n",
        ".gitignore": "__pycache__/\n*.pyc\n",
        "pkg/__init__.py": "from .more import *  # noqa\nfrom .recipes import *  # noqa\n",
        "pkg/py.typed": "",
        "docs/conf.py": 'project = "pkg"\n',
        "docs/index.rst": "Welcome\n=======\n\n.. toctree::\n   api\n",
        "docs/api.rst": "".join(f".. autofunction:: func_{i}\n" for i in range(400)),
        "docs/versions.rst": "".join(f"{i}.0\n---\n\n* Changes.\n\n" for i in range(60)),
        "docs/license.rst": "License\n=======\n",
        "docs/testing.rst": "Testing\n=======\n\nRun make test.\n",
        "docs/Makefile": "html:\n\tsphinx-build . _build\n",
        "docs/make.bat": "sphinx-build . _build\n",
        ".github/workflows/python-app.yml": "name: tests\non: [push]\n",
        ".github/dependabot.yml": "version: 2\n",
        ".readthedocs.yaml": "version: 2\n",
        "tests/__init__.py": "",
        "tests/test_recipes.py": _tests("recipes", 120),
        "tests/test_more.py": _tests("more", 400),
        "pkg/recipes.py": _module(120, "recipe"),
        "pkg/recipes.pyi": "".join(
            f"def recipe_{i}(iterable: object) -> object: ...\n" for i in range(120)
        ),
        "pkg/more.pyi": "".join(
            f"def func_{i}(iterable: object) -> object: ...\n" for i in range(400)
        ),
        "pkg/more.py": _module(200, "func")
        + "\n\n"
        + WINDOWED
        + "\n\n"
        + _module(200, "func", 200),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _module(count: int, name: str, first: int = 0) -> str:
    return "\n\n".join(
        f'def {name}_{i}(iterable, n=2):\n    """Return the {name} {i} of *iterable*.\n\n'
        f'    >>> list({name}_{i}([1, 2, 3]))\n    [1, 2, 3]\n    """\n'
        f"    it = iter(iterable)\n    for item in it:\n        yield item\n"
        for i in range(first, first + count)
    )


def _tests(module: str, count: int) -> str:
    cases = "".join(
        f"\n\nclass Test{i}(TestCase):\n    def test_it(self):\n"
        f"        self.assertEqual(list(range({i})), list(range({i})))\n"
        for i in range(count)
    )
    return f"from unittest import TestCase\n\nimport pkg.{module}\n{cases}"


def session(
    folder: Path, protocol: str, history: int = 0
) -> tuple[list[str], list[tuple[int, int]]]:
    """The six prompts, and the characters of each of the six requests of the scripted session
    with those of its system text."""
    root, workspace = folder / "run", folder / "library"
    root.mkdir(parents=True)
    library(workspace)
    with ScriptedModel(*(Say(reply) for reply in REPLIES)) as model:
        (root / "codingagent.toml").write_text(
            f'protocol = "{protocol}"\nmodel_history_turns = {history}\nclipboard = false\n'
            f'[models.bench]\nbase_url = "{model.url}"\nmodel = "scripted-1"\nstream = false\n'
        )
        env = {**os.environ, "CODINGAGENT_COMMANDS": "allow", "NO_COLOR": "1"}
        command = [sys.executable, "-m", "codingagent", "start", TASK, "--model", "bench"]
        command += ["--workspace", str(workspace), "--root", str(root)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"the session failed:\n{done.stderr}")
        requests = [_characters(body) for body in model.requests]
    prompts = [path.read_text() for path in sorted((root / "outbox").glob("*.txt"))]
    return prompts, requests


def _characters(body: dict[str, Any]) -> tuple[int, int]:
    """All the text of a request's messages, and that of its system message."""
    sizes = [(m.get("role"), len(m.get("content") or "")) for m in body["messages"]]
    return sum(n for _, n in sizes), sum(n for role, n in sizes if role == "system")


def repeated(previous: str, prompt: str) -> float:
    """The share of ``prompt``'s characters on lines ``previous`` also has."""
    old = Counter(previous.splitlines())
    same = 0
    for line in prompt.splitlines():
        if old[line] > 0:
            old[line] -= 1
            same += len(line) + 1
    return same / max(len(prompt), 1)


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="ca-prompts-"))
    summary = []
    try:
        for n, (name, options) in enumerate(CONFIGURATIONS):
            prompts, requests = session(scratch / str(n), **options)
            sizes = [len(p) for p in prompts]
            print(f"\n{name}\n")
            print(
                "| turn | prompt, characters | repeats the previous prompt | request, characters "
                "| of which the system text |"
            )
            print("|---|---|---|---|---|")
            for i, size in enumerate(sizes):
                share = "" if i == 0 else f"{repeated(prompts[i - 1], prompts[i]):.0%}"
                total, system = requests[i] if i < len(requests) else (0, 0)
                print(f"| {i + 1} | {size:,} | {share} | {total:,} | {system:,} |")
            later = sum(sizes[1:])
            totals = [total for total, _ in requests]
            summary.append(
                [
                    name,
                    f"{sizes[0]:,}",
                    f"{later:,}",
                    f"{later / (sizes[0] * (len(sizes) - 1)):.0%}",
                    f"{sum(totals):,}",
                    f"{sum(total - system for total, system in requests):,}",
                    f"{max(totals):,}",
                ]
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        "\n| configuration | first prompt | prompts 2-6 | prompts 2-6 / five first prompts "
        "| requests, all | without the system text | largest request |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in summary:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
