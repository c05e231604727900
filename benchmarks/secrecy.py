"""What keeping secrets home costs, and how often code is masked that holds none.

    python benchmarks/secrecy.py            # the full run (about a minute)
    python benchmarks/secrecy.py --smoke    # seconds: small inputs, one repeat

Prints two markdown tables (docs/secrets.md has the figures):

- times (medians; the ratio is to the baseline measured in the same run): masking a MB of
  command output with no secret known (the baseline) and with known
  secrets looked for in all their disguises, without the hex dumps' pass (what it costs on
  output with no dump in it) and on a MB of ``xxd`` output (the dumps read: issue 47);
  detect-secrets' public scanning API against our
  rule table on the same text (why we keep a table of our own); the secret-file scan a
  command waits for, on a workspace of many files, first and again;
- false masks: the share of the Python standard library's ``.py`` files (of the interpreter
  running this) in which anything is masked, each file as a new session would see it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from codingagent.secrecy import hexdumps, rules
from codingagent.secrecy.masking import Masker
from codingagent.secrecy.secret_files import secret_files


def median_s(action: Callable[[], object], runs: int) -> float:
    return medians({"": action}, runs)[""]


def medians(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """The median seconds of each action, run in turns (so a busy moment of a shared machine
    falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            started = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(each) for name, each in times.items()}


def corpus() -> list[tuple[Path, str]]:
    """The standard library's ``.py`` files that are UTF-8, by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            found.append((path.relative_to(root), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return found


def sample_text(files: list[tuple[Path, str]], size: int) -> str:
    """``size`` characters of real code, as a command's output would carry it."""
    parts, total = [], 0
    for _, text in files:
        parts.append(text)
        total += len(text)
        if total >= size:
            break
    return "".join(parts)[:size]


def known_secrets(count: int) -> list[str]:
    rng = random.Random(27)
    alphabet = string.ascii_letters + string.digits
    return ["ghp_" + "".join(rng.choices(alphabet, k=36)) for _ in range(count)]


def xxd(data: bytes) -> str:
    """``xxd``'s output for ``data``."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        shown = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        lines.append(f"{at:08x}: {groups:<39}  {shown}\n")
    return "".join(lines)


def without_dumps(masker: Masker, text: str) -> object:
    """``masker.mask(text)`` with the hex dumps' pass left out."""
    find = hexdumps.HexDumps.find

    def none(self: hexdumps.HexDumps, text: str) -> list[rules.Found]:
        return []

    hexdumps.HexDumps.find = none  # type: ignore[method-assign]
    try:
        return masker.mask(text)
    finally:
        hexdumps.HexDumps.find = find  # type: ignore[method-assign]


def times(files: list[tuple[Path, str]], mb: float, runs: int) -> list[tuple[str, float, float]]:
    """(measure, seconds, baseline seconds) rows."""
    text = sample_text(files, int(mb * 1e6))
    per_mb = 1e6 / len(text)
    maskers = {"bare": Masker()}
    for count in (10, 100):
        maskers[str(count)] = Masker()
        for secret in known_secrets(count):
            maskers[str(count)].learn(secret, "github-token")
    for masker in maskers.values():
        masker.mask(text)  # learns what the text holds; disguises are made once per secret
    actions: dict[str, Callable[[], object]] = {
        name: (lambda m=masker: m.mask(text)) for name, masker in maskers.items()
    }
    actions["10 without"] = lambda: without_dumps(maskers["10"], text)
    dump = xxd(text.encode()[: len(text) // 4])  # four times as long: about as many characters
    maskers["10"].mask(dump)
    actions["dump"] = lambda: maskers["10"].mask(dump)
    actions["dump without"] = lambda: without_dumps(maskers["10"], dump)
    actions["rules"] = lambda: list(rules.find(text))
    took = {name: seconds * per_mb for name, seconds in medians(actions, runs).items()}
    for name in ("dump", "dump without"):
        took[name] *= len(text) / len(dump)
    bare, ours = took["bare"], took["rules"]
    rows = [("mask 1 MB of output, no secret known", bare, bare)]
    for count in (10, 100):
        measure = f"mask 1 MB of output, {count} known secrets in every disguise"
        rows.append((measure, took[str(count)], bare))
    rows.append(("the same, 10 known, without the hex dumps' pass", took["10 without"], bare))
    rows.append(("mask 1 MB of `xxd` output, 10 known secrets", took["dump"], bare))
    rows.append(("the same, without the hex dumps' pass", took["dump without"], bare))
    theirs = _detect_secrets_public(text[: len(text) // 4]) * 4 * per_mb
    rows.append(("rule table over 1 MB (ours: one pass a pattern)", ours, ours))
    rows.append(("detect-secrets public API over 1 MB (scan_file)", theirs, ours))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for index, (path, content) in enumerate(files[: int(2000 * mb)]):
            # A quarter not source code, looked inside for secrets.
            name = path.name if index % 4 else f"{path.stem}.cfg"
            target = root / f"d{index % 40}" / name
            target.parent.mkdir(exist_ok=True)
            target.write_text(content)
        (root / ".env").write_text("TOKEN=" + known_secrets(1)[0] + "\n")
        first = median_s(lambda: secret_files(root, (), Masker()), 1)
        again = median_s(lambda: secret_files(root, (), Masker()), runs)
    count = min(len(files), int(2000 * mb))
    rows.append((f"secret-file scan, {count} files, first", first, again))
    rows.append((f"secret-file scan, {count} files, again (cached)", again, again))
    return rows


def _detect_secrets_public(text: str) -> float:
    """Seconds detect-secrets' documented API takes to scan ``text`` as one file."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "output.txt"
        path.write_text(text)
        with default_settings():
            started = time.perf_counter()
            SecretsCollection().scan_file(str(path))
            return time.perf_counter() - started


def false_masks(files: list[tuple[Path, str]]) -> tuple[int, Counter[str], list[str]]:
    """How many files have anything masked, by kind, and which."""
    kinds: Counter[str] = Counter()
    masked = []
    for path, text in files:
        found = Masker().mask(text).kinds
        if found:
            kinds.update(found)
            masked.append(str(path))
    return len(masked), kinds, masked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="small inputs, one repeat")
    smoke = parser.parse_args().smoke
    files = corpus()
    print(f"Python {sys.version.split()[0]}, {len(files)} standard library .py files\n")
    print("| measure | median per MB or run | baseline | ratio |")
    print("|---|---|---|---|")
    for measure, seconds, baseline in times(files, 0.05 if smoke else 1.0, 1 if smoke else 5):
        print(
            f"| {measure} | {seconds * 1000:,.1f} ms | {baseline * 1000:,.1f} ms |"
            f" {seconds / baseline:.2f} |"
        )
    count, kinds, masked = false_masks(files[:100] if smoke else files)
    total = 100 if smoke else len(files)
    print("\n| corpus | files | files with any mask | share | kinds |")
    print("|---|---|---|---|---|")
    by_kind = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
    print(f"| stdlib .py | {total} | {count} | {100 * count / total:.2f} % | {by_kind or '-'} |")
    for path in masked:
        print(f"  masked in: {path}")


if __name__ == "__main__":
    main()
