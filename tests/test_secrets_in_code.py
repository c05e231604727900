"""Issue 36: secrets hardcoded in source code stay home too, in any disguise. A hostile
model's command tried through the real CLI (real bubblewrap where it works); real library code
read through READ_FILE; the workspace scan on its own (docs/secrets.md)."""

from __future__ import annotations

import base64
import binascii
import codecs
import os
import random
import re
import string
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invoking import Run
from sampling import examples

from codingagent.sandbox.backends import sandbox_status
from codingagent.secrecy import file_scan, matcher, prefilter, rules
from codingagent.secrecy.masking import Masker
from codingagent.secrecy.secret_files import secret_files

needs_bwrap = pytest.mark.skipif(
    sandbox_status("bwrap")[0] != "bwrap", reason="bubblewrap does not work here"
)
MASK = re.compile(r"\[masked: [a-z0-9-]+ [0-9a-f]{8}\]")
FRAGMENT = 12  # no piece of a key this long may be read back


def fake_keys(seed: int = 36) -> dict[str, str]:
    """Realistic-looking keys, made now (none is written in this file: secret scanners read
    repositories)."""
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits

    def pick(alphabet: str, n: int) -> str:
        return "".join(rng.choices(alphabet, k=n))

    return {
        "aws-secret-key": pick(alnum, 12) + "/" + pick(alnum + "+", 19) + "/" + pick(alnum, 7),
        "github-token": "gh" + "p_" + pick(alnum, 36),
        "slack-token": "xo" + "xb-" + pick(string.digits, 12) + "-" + pick(alnum, 24),
    }


def settings_py(keys: dict[str, str]) -> str:
    return (
        '"""Settings of the app."""\n\nDEBUG = False\n'
        f'AWS_SECRET_ACCESS_KEY = "{keys["aws-secret-key"]}"\n'
        f'GITHUB_TOKEN = "{keys["github-token"]}"\n'
        f'SLACK_BOT_TOKEN = "{keys["slack-token"]}"\n'
    )


# The eight disguises in one command; each part's output starts with a marker line
# (written so that the command itself, shown in the result, does not hold it).
DISGUISES = {
    "base64": "base64 settings.py",
    "rev": "rev settings.py",
    "xxd": "xxd -p settings.py",
    "rot13": "tr 'A-Za-z' 'N-ZA-Mn-za-m' < settings.py",
    "fold": "fold -w 7 settings.py",
    "spaced": "sed 's/./& /g' settings.py",
    "od": "od -c settings.py",
    "upper": "tr a-z A-Z < settings.py",
}
COMMAND = "\n".join(f'echo "@@$((0)){name}"; {line}' for name, line in DISGUISES.items())


def sections(prompt: str) -> dict[str, str]:
    """The output of each part of :data:`COMMAND` in ``prompt``, its indentation taken off."""
    found = re.findall(r"^    @@0(\w+)\n((?:    .*\n|\n)*?)(?=    @@0|\S)", prompt, re.M)
    return {name: re.sub(r"^    ", "", body, flags=re.M) for name, body in found}


def pieces(text: str) -> list[str]:
    """The runs of ``text`` between masks, white space taken out."""
    return ["".join(piece.split()) for piece in MASK.split(text)]


def decoded(name: str, text: str) -> list[str]:
    """What a reader gets back from one part's output, undoing its disguise."""
    if name == "base64":
        found = []
        for piece in pieces(text):
            for skip in range(4):
                usable = piece[skip:][: len(piece[skip:]) // 4 * 4]
                found.append(base64.b64decode(usable + "", validate=False).decode("latin-1"))
        return found
    if name == "xxd":
        found = []
        for piece in pieces(text):
            for skip in range(2):
                usable = piece[skip:][: len(piece[skip:]) // 2 * 2]
                try:
                    found.append(binascii.unhexlify(usable).decode("latin-1"))
                except binascii.Error:
                    found.append("")
        return found
    if name == "rev":
        return ["\n".join(line[::-1] for line in text.splitlines())]
    if name == "rot13":
        return [codecs.decode(text, "rot13")]
    if name == "fold":
        return [text.replace("\n", "")]
    if name == "spaced":
        lines = text.splitlines()
        return ["".join(line[phase::2] for line in lines) for phase in range(2)]
    if name == "od":
        cells = [line.split()[1:] for line in text.splitlines()]
        return ["".join(cell for line in cells for cell in line)]
    assert name == "upper"
    return [text.lower()]


def read_back(keys: dict[str, str], texts: list[str]) -> list[str]:
    """Each piece of a key (of :data:`FRAGMENT` characters) that ``texts`` spell, any case."""
    found = []
    for key in keys.values():
        for at in range(len(key) - FRAGMENT + 1):
            piece = key[at : at + FRAGMENT].lower()
            found += [piece for text in texts if piece in text.lower()]
    return found


@pytest.mark.parametrize("layer", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_keys_in_a_source_file_never_shown_reach_no_prompt_in_any_disguise(
    tmp_path: Path, layer: str
) -> None:
    keys = fake_keys()
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / "settings.py").write_text(settings_py(keys))
    run.start("--sandbox", layer)
    first = run.prompt()
    assert "settings.py" in first and "Secret files" not in first  # source code: not hidden
    assert read_back(keys, [first]) == []
    run.step(f"[RUN_COMMAND]\n{COMMAND}\n[/RUN_COMMAND]\n", "--sandbox", layer)
    prompt = run.prompt()
    parts = sections(prompt)
    assert sorted(parts) == sorted(DISGUISES), prompt
    for name, text in parts.items():
        assert text.strip(), name  # the command printed it: settings.py is source, not hidden
        assert read_back(keys, decoded(name, text)) == [], (name, text)
        for kind in keys:
            assert f"[masked: {kind}" in text, (name, kind, text)
    assert read_back(keys, [prompt, "".join(prompt.split())]) == []
    assert (run.ws / "settings.py").read_text() == settings_py(keys)  # untouched
    assert "DEBUG = FALSE" in parts["upper"]  # the rest of the file is shown as it is


def library_files() -> list[Path]:
    """Sixty files of real open-source code installed here, of 40 to 400 lines (a READ_FILE
    shows 400): the first twenty
    of each of pydantic, click and hypothesis by path (click has fewer: the next ones of
    the others make up the sixty)."""
    site = Path(sysconfig.get_paths()["purelib"])
    pools = []
    for package in ("pydantic", "click", "hypothesis"):
        files = sorted((site / package).rglob("*.py"))
        pools.append([path for path in files if 40 <= len(path.read_bytes().splitlines()) <= 400])
    chosen = [path for pool in pools for path in pool[:20]]
    rest = [path for pool in pools for path in pool[20:]]
    return chosen + rest[: 60 - len(chosen)]


def test_real_library_code_read_through_read_file_carries_no_mask(tmp_path: Path) -> None:
    files = library_files()
    assert len(files) == 60
    site = Path(sysconfig.get_paths()["purelib"])
    run = Run(tmp_path / "run", tmp_path / "ws")
    for path in files:
        target = run.ws / "lib" / path.relative_to(site)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    run.start("--sandbox", "none")
    lines = 0
    for batch in range(0, len(files), 20):
        reply = "".join(
            f'[READ_FILE path="lib/{path.relative_to(site).as_posix()}"]\n'
            for path in files[batch : batch + 20]
        )
        run.step(reply, "--sandbox", "none")
        prompt = run.prompt()
        for path in files[batch : batch + 20]:
            text = path.read_text()
            lines += text.count("\n")
            last = text.rstrip("\n").rsplit("\n", 1)[-1]
            assert f"| {last}" in prompt, path  # shown whole
        assert "[masked: " not in prompt, [
            line for line in prompt.splitlines() if "[masked" in line
        ]
    assert lines > 3_000


# --- the scan on its own -------------------------------------------------------------------


def test_source_code_is_looked_inside_for_sure_secrets_only(tmp_path: Path) -> None:
    keys = fake_keys(7)
    for name, text in {
        "app/settings.py": settings_py(keys),
        "app/util.py": 'password = "hunter22"\nTOKEN_NAME = "MY_SECRET_KEY_2"\n',
        "notes.txt": "password: s3cr3t-Value\n",
        "web/bundle.js": f'const k = "AI{"za"}{"x" * 10}{"Y1" * 12}{"z" * 1}";\n',
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    masker = Masker()
    found = secret_files(tmp_path, (), masker)
    assert found.hidden == ("notes.txt",)  # source code is never hidden
    for kind, key in keys.items():
        assert masker.mask(key[::-1]).text.startswith(f"[masked: {kind}-reversed "), kind
    # A word-like password in code is masked where it is shown with its name, not learned
    # before (the workspace's code is full of test passwords).
    assert masker.mask("echo hunter22").text == "echo hunter22"
    assert "[masked: password " in masker.mask('password = "hunter22"').text
    learned = {
        label for _, label in file_scan.examine(str(tmp_path / "web/bundle.js"), True).secrets
    }
    assert learned == {"google-api-key"}
    assert file_scan.examine(str(tmp_path / "app/util.py"), True).secrets == ()


def test_the_scan_reads_a_file_again_only_when_it_changed(tmp_path: Path) -> None:
    keys = fake_keys(8)
    path = tmp_path / "config.py"
    path.write_text("X = 1\n")
    file_scan.forget()
    assert Masker().mask(keys["github-token"][::-1]).kinds == {}
    masker = Masker()
    secret_files(tmp_path, (), masker)
    assert masker.mask(keys["github-token"][::-1]).kinds == {}
    path.write_text(f'TOKEN = "{keys["github-token"]}"\n')  # size changes: read again
    secret_files(tmp_path, (), masker)
    assert masker.mask(keys["github-token"][::-1]).kinds == {"github-token-reversed": 1}
    entries = list(file_scan.walk(tmp_path))
    assert [rel for _, rel, _ in entries] == ["config.py"]
    fed = Masker()
    secret_files(tmp_path, (), fed, files=entries)  # fed from another walk of the tree
    assert fed.mask(keys["github-token"].upper()).kinds == {"github-token-case": 1}


def test_no_learned_secret_is_written_under_the_run_folder(tmp_path: Path) -> None:
    """The scan's findings live in memory: learning them writes nothing of them to disk (a
    command that prints a key is another matter: its output is the turn's record; and the
    snapshot kept for undo holds copies of the workspace's files, the keys' own home). The code
    map's cache (``sessions/.cache/codemap-*``) keeps definitions' first lines, redacted."""
    keys = fake_keys(9)
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / "settings.py").write_text(settings_py(keys))
    run.start("--sandbox", "none")
    run.step("[RUN_COMMAND]\nls; wc -c settings.py\n[/RUN_COMMAND]\n", "--sandbox", "none")
    assert "settings.py" in run.prompt()
    written = [
        path
        for path in run.root.rglob("*")
        if path.is_file() and "snapshot" not in path.relative_to(run.root).parts
    ]
    assert any(path.parent.name == "sessions" for path in written)
    assert any(path.name.startswith("codemap-") for path in written)
    for path in written:
        data = path.read_bytes().decode("latin-1")
        for key in keys.values():
            assert key not in data and key[::-1] not in data, path


@pytest.mark.parametrize(
    "line",
    [
        "user = User(username='scolvin', password='password1')",
        "    return '****/**/**'",
        'SECRET = "secret123"',
    ],
)
def test_examples_and_placeholders_are_not_secrets(line: str) -> None:
    assert Masker().mask(line).text == line


def stdlib_texts() -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.glob("*.py"))[:150]:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def flagged_lines(text: str, source: bool, formats: bool) -> set[int]:
    data = text.encode()
    lines: set[int] = set()
    for region in prefilter.regions(data, source):
        if region.formats if formats else region.assignments:
            first = data.count(b"\n", 0, region.start)
            lines.update(range(first, first + data.count(b"\n", region.start, region.end) + 1))
    return lines


def found_lines(text: str, source: bool, formats: bool) -> set[int]:
    found = rules.look(text, source, formats=formats, assignments=not formats)
    return {text.count("\n", 0, each.start) for each in found}


KEYS_TEXT = "\n".join(f"{k} = '{v}'" for k, v in fake_keys(10).items())


@pytest.mark.parametrize("source", [True, False])
def test_the_prefilter_flags_every_line_the_rules_find_something_in(source: bool) -> None:
    """On real code (the standard library) and on every kind of key: a line the prefilter
    does not flag would never be looked at."""
    samples = [*stdlib_texts(), KEYS_TEXT, KEYS_TEXT.upper(), "x = 'postgres://app:Xk9q2mZ7@db'"]
    samples += ["contraseña_db = 'Xk9q2mZ7Lp0Mx7Rk3Wn1'\n", "clave: x\ncontraseña: s3cr3t-Val\n"]
    for text in samples:
        for formats in (True, False):
            assert found_lines(text, source, formats) <= flagged_lines(text, source, formats)


ALPHABET = string.ascii_letters + string.digits + "/+_-"


@given(
    st.text(ALPHABET, min_size=16, max_size=60).filter(
        lambda v: rules.is_value(v) and rules.random_looking(v)
    ),
    st.sampled_from(["API_KEY", "secret", "db_password", "authToken"]),
    st.sampled_from(['{} = "{}"', "{}: '{}'", '"{}": "{}",', "export {}={}"]),
)
@settings(max_examples=examples(200), deadline=None)
def test_a_random_value_of_a_secret_name_is_learned_from_code(value: str, name: str, shape: str):
    text = f"# config\n{shape.format(name, value)}\nprint(1)\n"
    found = [secret for secret, _ in file_scan.secrets_in(text.encode(), True).secrets]
    assert value in found


def test_without_hyperscan_the_same_lines_and_disguises_are_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fallback (Python regexes, ``bytes.find``) answers as hyperscan does."""
    texts = [text.encode() for text in [*stdlib_texts()[:60], KEYS_TEXT, KEYS_TEXT.upper()]]
    keys = fake_keys(11)
    output = "\n".join(
        [
            base64.b64encode(settings_py(keys).encode()).decode(),
            settings_py(keys)[::-1],
            settings_py(keys).upper(),
            " ".join(settings_py(keys)),
            settings_py(keys).encode().hex(),
        ]
    )

    def masked() -> str:
        masker = Masker()
        for kind, key in keys.items():
            masker.learn(key, kind)
        return masker.mask(output).text

    fast = [[prefilter.regions(data, source) for data in texts] for source in (True, False)]
    fast_masked = masked()
    monkeypatch.setattr(matcher, "_hyperscan", None)  # calling it fails: the fallback runs
    prefilter._matcher.cache_clear()
    try:
        slow = [[prefilter.regions(data, source) for data in texts] for source in (True, False)]
        assert slow == fast
        assert masked() == fast_masked
    finally:
        prefilter._matcher.cache_clear()
    assert read_back(keys, [fast_masked]) == []
    assert sum(len(regions) for regions in fast[0]) > 0


def test_the_next_process_starts_from_the_record_of_clean_files(tmp_path: Path) -> None:
    """What ``codingagent step`` relies on: a new process reads again only the files changed
    since, and those that held a secret; the record names no secret."""
    keys = fake_keys(11)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "settings.py").write_text(settings_py(keys))
    (ws / "plain.py").write_text("x = 1\n")
    (ws / "other.py").write_text("y = 2\n")
    old = 1_600_000_000_000_000_000  # long before the record is written: not racy
    for name in ("settings.py", "plain.py", "other.py"):
        os.utime(ws / name, ns=(old, old))
    record = tmp_path / "cache" / "clean-files.marshal"
    try:
        file_scan.forget()
        file_scan.keep_clean_in(record)
        assert sum(f.holds for _, f in file_scan.scan(file_scan.walk(ws))) == 1
        data = record.read_bytes().decode("latin-1")
        assert "plain.py" in data and "settings.py" not in data
        assert all(key not in data for key in keys.values())

        # Another process: a key planted in plain.py keeping its size and time is not read
        # (the record vouches for it), other.py changed is read, settings.py is read again.
        file_scan.forget()
        (ws / "plain.py").write_text("z = 3\n")
        os.utime(ws / "plain.py", ns=(old, old))
        (ws / "other.py").write_text(f'TOKEN = "{keys["github-token"]}"\n')
        file_scan.keep_clean_in(record)
        held = {rel for (_, rel, _), f in file_scan.scan(file_scan.walk(ws)) if f.holds}
        assert held == {"settings.py", "other.py"}
        assert "other.py" not in record.read_bytes().decode("latin-1")
    finally:
        file_scan.forget()


def test_a_file_as_new_as_the_record_is_read_again(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    record = tmp_path / "clean-files.marshal"
    try:
        file_scan.forget()
        file_scan.keep_clean_in(record)
        list(file_scan.scan(file_scan.walk(ws)))
        file_scan.forget()
        file_scan.keep_clean_in(record)  # a.py changed within a clock tick of the record
        assert str(ws / "a.py") not in file_scan._cache
    finally:
        file_scan.forget()
