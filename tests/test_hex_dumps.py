"""Issue 47: a key hardcoded in a workspace file reaches no prompt through a hex dump (``xxd``,
``hexdump -C``, ``od -x``...): its hex is read across lines in both byte orders, and its
ASCII column too. Through the real CLI with the real tools; the dumps' decoding on its own,
on random secrets in random bytes, dumped by the real tools and by formatters checked
against them (docs/secrets.md)."""

from __future__ import annotations

import random
import re
import string
import subprocess
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invoking import Run
from sampling import examples
from test_secrets_in_code import library_files, needs_bwrap

from codingagent.sandbox.process import Capture
from codingagent.secrecy import hexdumps, matcher
from codingagent.secrecy.hexdumps import PIECE
from codingagent.secrecy.masking import Masker

FRAGMENT = 12  # no piece of a key this long may be read back, in text or in hex
MASK = re.compile(r"\[masked: [a-z0-9-]+ [0-9a-f]{8}\]")
GAP = "#"  # what a reader of the dump sees where a mask stands: nothing of what it hid
CUT = re.compile(r"\[\.\.\. [\d,]+ characters cut \.\.\.\]")  # the runner's mark


@pytest.fixture(autouse=True)
def own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's own settings folder, empty, away from the real one."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def three_keys(seed: int = 47) -> dict[str, str]:
    """A Stripe key, a GitHub token and a plain password, made now (none is written in this
    file: secret scanners read repositories)."""
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits

    def pick(n: int) -> str:
        return "".join(rng.choices(alnum, k=n))

    return {
        "stripe-key": "sk_" + "live_" + pick(24),
        "github-token": "gh" + "p_" + pick(36),
        "password": pick(10) + "7" + pick(9),
    }


def keys_py(keys: dict[str, str]) -> str:
    return (
        '"""Keys of the app."""\n\n'
        f'STRIPE_KEY = "{keys["stripe-key"]}"\n'
        f'GITHUB_TOKEN = "{keys["github-token"]}"\n'
        f'DB_PASSWORD = "{keys["password"]}"\n'
        "DEBUG = True\n"
    )


# --- reading a dump back, as the model could ------------------------------------------------


def hex_area(tool: str, line: str) -> str:
    """The hex digits a line of ``tool``'s dump shows (masks as :data:`GAP`), without its
    offset and ASCII columns."""
    if line.strip() == "*":  # od and hexdump: the line before repeated
        return GAP
    if tool == "xxd -i":  # a C array: "  0x22, 0x22,"
        return re.sub(r"0x|[,\s]", "", line) if line.strip().startswith(("0x", GAP)) else ""
    if "-An" not in tool and "-p" not in tool:
        line = line.split(None, 1)[1] if len(line.split()) > 1 else ""  # the offset
    if tool.startswith("xxd") and "-p" not in tool:
        line = line.split("  ", 1)[0]
    for opening in ("|", ">"):
        if tool in ("hexdump -C", "od -tx1z"):
            line = line.split(opening, 1)[0]
    return "".join(line.split())


def ascii_column(tool: str, line: str) -> str:
    if tool in ("xxd", "xxd -e", "xxd -g1 -c 10", "xxd -u -g4") and len(line.split("  ", 1)) == 2:
        return line.split("  ", 1)[1].lstrip(" ")
    for opening, closing in ("||", "><"):
        if tool in ("hexdump -C", "od -tx1z") and opening in line:
            return line.split(opening, 1)[1].rsplit(closing, 1)[0]
    return ""


def read_back(keys: dict[str, str], tool: str, dump: str, fragment: int = FRAGMENT) -> list[str]:
    """Each piece of a key of ``fragment`` characters that ``dump`` (``tool``'s output,
    masked) shows: in its text, its ASCII column read across lines, or its hex read across
    lines (both digit phases, bytes as written or swapped in words of 2 or 4 bytes)."""
    lines = MASK.sub(GAP, dump).splitlines()
    texts = [dump, "".join(dump.split()), "".join(ascii_column(tool, line) for line in lines)]
    areas = []
    for before, line in zip(["", *lines], lines, strict=False):
        if CUT.fullmatch(line):  # the runner cut the output's middle
            areas.append(GAP)
        elif CUT.fullmatch(before):  # a line's end: its hex tokens
            hex_part = re.split(r"  |\|", line)[0]
            tokens = re.findall(r"(?:^| )([0-9a-fA-F]{2,})(?= |$)", hex_part)
            areas.append(GAP + "".join(t[len(t) % 2 :] for t in tokens) + GAP)
        else:
            areas.append(hex_area(tool, line))
    streams = []  # each run of hex digits (a mask, or what a mask left of a column, ends one)
    for segment in re.split(r"[^0-9a-fA-F]+", "".join(areas)):
        for phase in (0, 1):
            streams.append(bytes.fromhex(segment[phase:][: len(segment[phase:]) // 2 * 2]))
    for data in list(streams):
        for word in (2, 4):
            for start in range(word):
                body = data[start:][: len(data[start:]) // word * word]
                streams.append(
                    b"".join(body[at : at + word][::-1] for at in range(0, len(body), word))
                )
    found = []
    for key in keys.values():
        for at in range(len(key) - fragment + 1):
            piece = key[at : at + fragment]
            found += [piece for text in texts if piece.lower() in text.lower()]
            found += [f"{piece} (hex)" for data in streams if piece.encode() in data]
    return found


# --- through the real CLI -------------------------------------------------------------------

TOOLS = {
    "xxd": "xxd keys.py",
    "xxd -p": "xxd -p keys.py",
    "od -x": "od -x keys.py",
    "od -An -tx1": "od -An -tx1 keys.py",
    "hexdump -C": "hexdump -C keys.py",
}
COMMAND = "\n".join(f'echo "@@$((0)){name}"; {line}' for name, line in TOOLS.items())


def sections(prompt: str) -> dict[str, str]:
    """The output of each part of :data:`COMMAND` in ``prompt``, its indentation taken off."""
    found = re.findall(r"^    @@0([\w -]+)\n((?:    .*\n|\n)*?)(?=    @@0|\S)", prompt, re.M)
    return {name: re.sub(r"^    ", "", body, flags=re.M) for name, body in found}


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_keys_in_a_source_file_reach_no_prompt_through_a_hex_dump(
    tmp_path: Path, layer: str
) -> None:
    keys = three_keys()
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / "keys.py").write_text(keys_py(keys))
    run.start("--sandbox", layer)
    run.step(f"[RUN_COMMAND]\n{COMMAND}\n[/RUN_COMMAND]\n", "--sandbox", layer)
    prompt = run.prompt()
    parts = sections(prompt)
    assert sorted(parts) == sorted(TOOLS), prompt
    for tool, dump in parts.items():
        plain = subprocess.run(TOOLS[tool], shell=True, cwd=run.ws, capture_output=True)
        last = [line for line in plain.stdout.decode().splitlines() if len(line.strip()) > 8][-1]
        assert last[-6:] in dump, (tool, dump)  # the dump is shown to its end
        for kind in keys:
            assert f"[masked: {kind}-hex" in dump, (tool, kind, dump)
        assert read_back(keys, tool, dump) == [], (tool, dump)
    texts = [prompt.lower(), "".join(prompt.split()).lower()]  # the prompt read whole, too
    pieces = [
        key[at : at + FRAGMENT] for key in keys.values() for at in range(len(key) - FRAGMENT + 1)
    ]
    assert [piece for piece in pieces for text in texts if piece.lower() in text] == []
    # The rest of the dumps is shown as it is.
    for tool in ("xxd", "hexdump -C"):
        column = "".join(ascii_column(tool, line) for line in parts[tool].splitlines())
        assert column.startswith('"""Keys of the app."""..STRIPE_'), (tool, column)
        assert column.endswith('".DEBUG = True.'), (tool, column)
    assert parts["od -x"].startswith("0000000 2222 4b22 7965 2073")  # '"""Keys ' byte-swapped


@pytest.mark.slow
def test_real_library_code_read_and_dumped_with_keys_known_carries_no_mask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sixty library files read through READ_FILE in a session that knows three keys, and
    ten of them dumped by ``xxd``, ``od -x`` and ``hexdump -C``: nothing masked."""
    files = library_files()
    assert len(files) == 60
    site = Path(sysconfig.get_paths()["purelib"])
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / "keys.py").write_text(keys_py(three_keys(5)))
    names = []
    for path in files:
        names.append(f"lib/{path.relative_to(site).as_posix()}")
        (run.ws / names[-1]).parent.mkdir(parents=True, exist_ok=True)
        (run.ws / names[-1]).write_bytes(path.read_bytes())
    monkeypatch.setenv("CODINGAGENT_MAX_OUTPUT", "100000")  # the dumps whole
    run.start("--sandbox", "none")
    for batch in range(0, 60, 20):
        reply = "".join(f'[READ_FILE path="{name}"]\n' for name in names[batch : batch + 20])
        run.step(reply, "--sandbox", "none")
        prompt = run.prompt()
        for path in files[batch : batch + 20]:
            assert f"| {path.read_text().rstrip().rsplit(chr(10), 1)[-1]}" in prompt, path
        assert "[masked: " not in prompt, [
            line for line in prompt.splitlines() if "[masked" in line
        ]
    for tool in ("xxd", "od -x", "hexdump -C"):
        command = "; ".join(f"{tool} {name}" for name in names[::6])
        run.step(f"[RUN_COMMAND]\n{command}\n[/RUN_COMMAND]\n", "--sandbox", "none")
        prompt = run.prompt()
        assert prompt.count("\n") > 1000 and "[masked: " not in prompt, tool
    run.step("[RUN_COMMAND]\nxxd keys.py | head -4\n[/RUN_COMMAND]\n", "--sandbox", "none")
    assert "[masked: stripe-key-hexdump " in run.prompt()  # the keys were known all along


# --- the dumps' decoding on its own ---------------------------------------------------------


def shown(chunk: bytes) -> str:
    return "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)


def squeezed(data: bytes, width: int) -> list[tuple[int, bytes] | None]:
    """(offset, bytes) of each line, None for od's and hexdump's ``*`` (a line repeated)."""
    lines: list[tuple[int, bytes] | None] = []
    previous = b""
    for at in range(0, len(data), width):
        chunk = data[at : at + width]
        if chunk == previous and len(chunk) == width:
            if lines[-1] is not None:
                lines.append(None)
            continue
        lines.append((at, chunk))
        previous = chunk
    return lines


def xxd(data: bytes) -> str:
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        lines.append(f"{at:08x}: {groups:<39}  {shown(chunk)}\n")
    return "".join(lines)


def xxd_p(data: bytes) -> str:
    return "".join(data[at : at + 30].hex() + "\n" for at in range(0, len(data), 30))


def hexdump_c(data: bytes) -> str:
    lines = []
    for line in squeezed(data, 16):
        if line is None:
            lines.append("*\n")
            continue
        at, chunk = line
        groups = "".join(f"{byte:02x} " + " " * (i == 7) for i, byte in enumerate(chunk))
        lines.append(f"{at:08x}  {groups:<49} |{shown(chunk)}|\n")
    return "".join(lines) + f"{len(data):08x}\n"


def od_x(data: bytes) -> str:
    padded = data + b"\0" * (len(data) % 2)
    lines = []
    for line in squeezed(padded, 16):
        if line is None:
            lines.append("*\n")
            continue
        at, chunk = line
        words = " ".join(chunk[i : i + 2][::-1].hex() for i in range(0, len(chunk), 2))
        lines.append(f"{at:07o} {words}\n")
    return "".join(lines) + f"{len(data):07o}\n"


def od_an_tx1(data: bytes) -> str:
    lines = []
    for line in squeezed(data, 16):
        lines.append("*\n" if line is None else "".join(f" {b:02x}" for b in line[1]) + "\n")
    return "".join(lines)


FORMATTERS: dict[str, Callable[[bytes], str]] = {
    "xxd": xxd,
    "xxd -p": xxd_p,
    "hexdump -C": hexdump_c,
    "od -x": od_x,
    "od -An -tx1": od_an_tx1,
}
ALPHABET = string.ascii_letters + string.digits + "_-+/"
# Random-looking, as a key is (a run of zeros would be read back from the offsets).
secrets = st.text(ALPHABET, min_size=16, max_size=48).filter(
    lambda s: not s.isalpha() and len(set(s)) >= 8 and not re.search(r"(.)\1\1\1", s)
)
# Bytes around a secret: any bytes, with runs that look like hex or repeat (od's `*`).
around = st.lists(
    st.one_of(st.binary(max_size=40), st.sampled_from([b"cafe babe ", b"0" * 32, b"  "])),
    max_size=4,
).map(b"".join)


def dumped(tool: str, data: bytes) -> str:
    """What the real ``tool`` prints for ``data``."""
    done = subprocess.run(tool.split(), input=data, capture_output=True, check=True)
    return done.stdout.decode("ascii")


@pytest.mark.slow
@given(st.binary(min_size=1, max_size=200), around)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_formatters_print_what_the_tools_print(data: bytes, more: bytes) -> None:
    for tool, formatter in FORMATTERS.items():
        assert formatter(data + more) == dumped(tool, data + more), tool


def masked_dump(secret: str, text: str, indent: str, rstrip: bool = False) -> str:
    """``text`` masked by a masker that knows ``secret``, its lines shifted by ``indent`` (as
    a prompt shows a command's output) and their trailing spaces taken off if ``rstrip``."""
    masker = Masker()
    masker.learn(secret, "api-key")
    lines = text.splitlines(keepends=True)
    if rstrip:
        lines = [line.rstrip(" \n") + "\n" for line in lines]
    shifted = "".join(indent + line for line in lines)
    return re.sub(f"^{indent}", "", masker.mask(shifted).text, flags=re.M)


@pytest.mark.slow
@given(
    secrets,
    around,
    around,
    st.sampled_from(sorted(FORMATTERS)),
    st.sampled_from(["", "    "]),
    st.booleans(),
    st.integers(0, 12),
    st.integers(1, 6),
    st.integers(0, 100),
)
@settings(max_examples=examples(200), deadline=None)
def test_a_known_secret_at_any_offset_in_any_bytes_is_masked_in_a_dump(
    secret: str,
    before: bytes,
    after: bytes,
    tool: str,
    indent: str,
    rstrip: bool,
    first: int,
    count: int,
    cut: int,
) -> None:
    """Dumped whole, a few of its lines only (``head``, ``tail``, ``sed -n``), or from a byte
    within the secret on (``xxd -s``), its lines' trailing spaces kept or not: no piece of
    :data:`FRAGMENT` characters of the secret is left, in text or in hex."""
    data = before + secret.encode() + after
    lines = FORMATTERS[tool](data).splitlines(keepends=True)
    shown = ["".join(lines), "".join(lines[first : first + count])]
    shown += [FORMATTERS[tool](data[len(before) + cut % len(secret) :])]
    for text in shown:
        dump = masked_dump(secret, text, indent, rstrip)
        assert read_back({"key": secret}, tool, dump) == [], (text, dump)


@pytest.mark.slow
@given(secrets, around, around, st.sampled_from(sorted(FORMATTERS)), st.integers(100, 1200))
@settings(max_examples=examples(150), deadline=None)
def test_a_dump_cut_by_the_runner_shows_no_piece_of_a_secret(
    secret: str, before: bytes, after: bytes, tool: str, limit: int
) -> None:
    """A command's output longer than ``max_output`` keeps its head and its tail, cut
    anywhere, within a line, its hex or its ASCII column (the runner's own ``Capture``)."""
    capture = Capture(limit)
    capture.feed(FORMATTERS[tool]((before + secret.encode() + after) * 3).encode())
    dump = masked_dump(secret, capture.text()[0], "    ")
    assert read_back({"key": secret}, tool, dump) == [], dump


@pytest.mark.parametrize("tool", sorted(FORMATTERS))
def test_a_piece_of_a_secret_is_masked_from_its_tenth_byte(tool: str) -> None:
    """A dump that starts or ends within a secret (``xxd -s``, ``head -c``) shows a piece of
    it: one of :data:`PIECE` bytes is masked, one byte shorter is not."""
    secret = "ghp_" + "k2M9xQ7vL4pZ8wR1tY6n"
    for size, masked in ((PIECE, True), (PIECE - 1, False)):
        for data in (b"x = '" + secret[:size].encode(), secret[-size:].encode() + b"'\n"):
            dump = masked_dump(secret, FORMATTERS[tool](data), "")
            assert ("[masked: api-key-hexdump " in dump) is masked, dump
            assert (read_back({"key": secret}, tool, dump, size) == []) is masked, dump


@pytest.mark.parametrize("tail", [b" " * 5, b" " * 5 + b"\n", b" " * 25])
def test_an_ascii_column_whose_trailing_spaces_were_taken_off_is_masked(tail: bytes) -> None:
    """``xxd``'s ASCII column is the end of its line: a prompt or ``sed 's/ *$//'`` may take
    off the spaces it ends with, and what is left of it still shows a piece of the secret."""
    secret = "k2M9xQ7v-L4pZ8wR"  # six characters on the first line, ten on the second
    data = b"password = '"[:10] + secret.encode() + b"'" + tail  # then an odd count of spaces
    for rstrip in (False, True):
        dump = masked_dump(secret, xxd(data), "    ", rstrip)
        assert secret[6:] not in dump, dump
        assert read_back({"key": secret}, "xxd", dump, PIECE) == [], dump


@given(st.binary(min_size=1, max_size=300), secrets, st.sampled_from(sorted(FORMATTERS)))
@settings(max_examples=examples(60), deadline=None)
def test_a_dump_without_a_known_secret_is_left_alone(data: bytes, secret: str, tool: str) -> None:
    text = FORMATTERS[tool](data)
    assert masked_dump(secret, text, "    ") == text


REAL = ["xxd", "xxd -p", "od -x", "od -An -tx1", "hexdump -C", "hexdump", "od -tx4", "xxd -e"]
REAL += ["od -tx1z", "xxd -g1 -c 10", "xxd -u -g4", "od -Ax -tx8", "xxd -i"]


@pytest.mark.slow
@given(secrets, around, around, st.sampled_from(REAL))
@settings(max_examples=examples(60), deadline=None)
def test_a_known_secret_is_masked_in_the_dumps_of_the_real_tools(
    secret: str, before: bytes, after: bytes, tool: str
) -> None:
    """More formats, through the real tools: the hex read across lines in both byte orders
    (``od -tx4`` and ``xxd -e``: words of four bytes), its ASCII column (``>...<`` of ``od
    -tx1z``), offsets in hex, octal or none."""
    dump = masked_dump(secret, dumped(tool, before + secret.encode() + after), "    ")
    assert read_back({"key": secret}, tool, dump) == [], dump
    assert "[masked: api-key-hex" in dump


def test_without_hyperscan_the_dumps_are_masked_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback (Python regexes, ``bytes.find``) finds the same dump lines and pieces."""
    keys = three_keys(3)
    data = keys_py(keys).encode()
    text = "\n".join(["$ cat notes", "12 34 56 78", xxd(data), od_x(data), xxd_p(data[40:90])])

    def masked() -> str:
        masker = Masker()
        for kind, key in keys.items():
            masker.learn(key, kind)
        return masker.mask(text).text

    fast = masked()
    monkeypatch.setattr(matcher, "_hyperscan", None)  # calling it fails: the fallback runs
    hexdumps._starts.cache_clear()
    try:
        assert masked() == fast
    finally:
        hexdumps._starts.cache_clear()
    assert fast.count("-hexdump ") >= 9 and "12 34 56 78" in fast
