"""What learning the workspace's secrets before each command costs, on 10,000 files.

    python benchmarks/secret_scan.py            # 10,000 files, medians of 5 runs
    python benchmarks/secret_scan.py --smoke    # 500 files, one run

The workspace is made of real text files of the Python running this (its standard library and
site-packages: ``.py``, ``.pyi``, ``.txt``, ``.json``, ``.cfg``, ``.toml``, ``.md``, ``.rst``,
``.html``, ``.js``, ``.css``, ``.yaml``, ``.ini``, by path), copied into a temporary folder,
plus a ``settings.py`` holding three keys. Prints a markdown table (docs/secrets.md has it):

- the walk alone (what listing the tree costs; issue 38 shares one walk a turn);
- the scan fed with the walk's entries, the first time (every file read; the cache emptied
  before each run) and again (nothing changed: no file read);
- ``secret_files`` as a command waits for it (walk + scan), first and again;
- the first scan without hyperscan (the fallback), once, for scale.

"First" means the first scan of the process: the files are in the OS page cache (they were
just written), as they are in a workspace being worked on.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import string
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingagent.secrecy import file_scan, matcher, prefilter
from codingagent.secrecy.masking import Masker
from codingagent.secrecy.secret_files import secret_files

SUFFIXES = {".py", ".pyi", ".txt", ".json", ".cfg", ".toml", ".md", ".rst", ".html", ".js"}
SUFFIXES |= {".css", ".yaml", ".yml", ".ini"}


def real_files(count: int) -> list[Path]:
    """``count`` text files of the installed Python, spread over its folders, by path."""
    found: set[Path] = set()
    for key in ("stdlib", "purelib"):
        root = Path(sysconfig.get_paths()[key])
        for path in root.rglob("*"):
            if path.suffix in SUFFIXES and path.is_file() and not path.is_symlink():
                found.add(path)
    ordered = sorted(found)
    return [ordered[index * len(ordered) // count] for index in range(min(count, len(ordered)))]


def workspace(root: Path, count: int) -> tuple[int, int]:
    """Fill ``root`` with ``count`` files; (files, bytes)."""
    total = 0
    files = real_files(count - 1)
    for index, path in enumerate(files):
        target = root / f"d{index % 97}" / f"s{index % 13}" / f"{index}_{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += target.stat().st_size
    rng = random.Random(36)
    alnum = string.ascii_letters + string.digits
    keys = (
        "AWS_SECRET_ACCESS_KEY = '" + "".join(rng.choices(alnum + "/+", k=40)) + "'\n",
        "GITHUB_TOKEN = 'gh" + "p_" + "".join(rng.choices(alnum, k=36)) + "'\n",
    )
    (root / "settings.py").write_text("".join(keys))
    return len(files) + 1, total + (root / "settings.py").stat().st_size


def medians(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, tuple[float, float]]:
    """The median seconds of each action, wall clock and this process's CPU time, run in
    turns (the CPU time is what a busy machine inflates least)."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            wall, cpu = time.perf_counter(), time.process_time()
            action()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {
        name: (statistics.median(w for w, _ in each), statistics.median(c for _, c in each))
        for name, each in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="500 files, one run")
    smoke = parser.parse_args().smoke
    count, runs = (500, 1) if smoke else (10_000, 5)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files, size = workspace(root, count)
        entries = list(file_scan.walk(root))
        wall, cpu = time.perf_counter(), time.process_time()
        prefilter.regions(b"", True), prefilter.regions(b"", False)  # compiled once a process
        compiled = (time.perf_counter() - wall, time.process_time() - cpu)

        def first_scan() -> None:
            file_scan.forget()
            masker = Masker()
            for _, found in file_scan.scan(entries):
                for secret, label in found.secrets:
                    masker.learn(secret, label)

        def again_scan() -> None:
            for _ in file_scan.scan(entries):
                pass

        def first_files() -> None:
            file_scan.forget()
            secret_files(root, (), Masker())

        took = medians(
            {
                "walk": lambda: list(file_scan.walk(root)),
                "scan first": first_scan,
                "scan again": again_scan,
                "files first": first_files,
                "files again": lambda: secret_files(root, (), Masker()),
            },
            runs,
        )
        learned = Masker()
        file_scan.forget()
        secret_files(root, (), learned)
        prefilter._matcher.cache_clear()
        original = matcher._hyperscan
        matcher._hyperscan = None  # type: ignore[assignment]  # calling it fails: the fallback
        try:
            started, cpu = time.perf_counter(), time.process_time()
            first_files()
            slow, slow_cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            matcher._hyperscan = original
            prefilter._matcher.cache_clear()
    print(f"{files:,} files, {size / 1e6:.1f} MB; medians of {runs} run(s)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| measure | median, wall | median, CPU | target | met (wall) |")
    print("|---|---|---|---|---|")
    rows = [
        ("compile the prefilter's patterns (once a process)", compiled, None),
        ("walk of the tree alone", took["walk"], None),
        ("scan of the walk's entries, first (every file read)", took["scan first"], 0.3),
        ("scan of the walk's entries, again (none changed)", took["scan again"], 0.03),
        ("walk + scan (secret_files), first", took["files first"], 0.3),
        ("walk + scan (secret_files), again", took["files again"], 0.03),
        ("walk + scan, first, without hyperscan (one run)", (slow, slow_cpu), None),
    ]
    for measure, (wall, cpu), target in rows:
        goal = f"< {target * 1000:.0f} ms" if target else "-"
        met = ("yes" if wall < target else "NO") if target else "-"
        print(f"| {measure} | {wall * 1000:,.1f} ms | {cpu * 1000:,.1f} ms | {goal} | {met} |")
    print(f"\nsecrets learned: {len(learned._secrets)} (the two keys of settings.py and others")
    print("that the files hold; the standard library's tests carry sample keys)")


if __name__ == "__main__":
    main()
