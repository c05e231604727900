"""Hostile LLM replies, end to end: real files in ``tmp_path``, a real ``Shell``, the real CLI.

Every test feeds one nasty reply through :func:`codingagent.session.turn.apply_reply` (or
``codingagent step``) and checks what a user would notice:

* the agent does not crash (the CLI exits 0 for a bad reply);
* nothing beside the workspace changes, and no secret from beside it reaches an outbox
  (checked for every test by the fixtures' teardown);
* the LLM gets a clear result line, asserted word for word;
* the session state still loads and the next outbox exists.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from codingagent.frontends.cli import main
from codingagent.prompt.render import FILE_VIEW_CAP
from codingagent.protocol.replies import REPLY_SIZE_CAP
from codingagent.records.store import SessionStore
from codingagent.sandbox.process import SHELL
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="uses /bin/sh, symlinks and FIFOs"),
    pytest.mark.timeout(20),
]

SECRET = "TOP-SECRET-5d0c1e77"
OUTSIDE = "REJECTED: Path is outside workspace"
PROTECTED_GIT = "REJECTED: Path is protected ('.git/')"
PROTECTED_AGENT = "REJECTED: Path is protected (agent folder)"
SYMLINK = "REJECTED: Path is a symlink"
NO_COMMANDS = (
    "(no commands were found in your last reply; write them as tags at the start of a line, "
    "as the PROTOCOL section shows)"
)
RESULTS_HEADING = "## Previous Command Results\n"
SECTION_ENDS = ("\n\n## Requested File Contents\n", "\n\n=== PROMPT ===\n")
# Folders next to the workspace that no reply may touch; "ws2" catches string-prefix checks.
GUARDED = ("outside", "ws2")


# --- harness ---------------------------------------------------------------------------


Snapshots = dict[str, dict[str, tuple[object, ...]]]  # a snapshot of each guarded folder


def snapshot(folder: Path) -> dict[str, tuple[object, ...]]:
    """Everything observable about a folder tree: kinds, bytes, link targets, modes, mtimes."""
    seen: dict[str, tuple[object, ...]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            content: object = ("link", os.readlink(path))
        elif path.is_dir():
            content = ("dir",)
        else:
            content = ("file", path.read_bytes())
        seen[path.relative_to(folder).as_posix()] = (content, info.st_mode, info.st_mtime_ns)
    return seen


def results_section(outbox_text: str) -> list[str]:
    """The lines of ``## Previous Command Results`` in an outbox."""
    start = outbox_text.index(RESULTS_HEADING) + len(RESULTS_HEADING)
    end = min(i for i in (outbox_text.find(m, start) for m in SECTION_ENDS) if i >= 0)
    return outbox_text[start:end].split("\n")


@dataclass
class Agent:
    """One session on a workspace, with guarded folders beside it."""

    store: SessionStore
    session_id: str
    ws: Path
    tmp: Path

    def apply(self, reply: bytes | str, shell: Shell | None = None) -> str:
        """Apply a reply through the turn engine; return the next outbox after checking it."""
        data = reply.encode() if isinstance(reply, str) else reply
        sequence = self.store.load(self.session_id).sequence_number
        report = apply_reply(
            self.store,
            self.session_id,
            Reply(data, "hostile.txt"),
            TurnOptions(shell=shell or Shell(timeout=10)),
        )
        assert report.outbox == self.store.outbox_path(self.session_id, sequence + 1)
        return self.outbox(sequence + 1)

    def results(self, reply: bytes | str, shell: Shell | None = None) -> list[str]:
        return results_section(self.apply(reply, shell))

    def outbox(self, sequence: int) -> str:
        """The outbox ``sequence``, after checking that the stored state points at it."""
        state = self.store.load(self.session_id)
        assert state.sequence_number == sequence
        assert not state.is_complete
        return self.store.outbox_path(self.session_id, sequence).read_text(encoding="utf-8")

    def step(self, reply: bytes | str) -> Result:
        """``codingagent step SESSION FILE``, the reply saved outside inbox/ and the workspace."""
        data = reply.encode() if isinstance(reply, str) else reply
        folder = self.tmp / "replies"
        folder.mkdir(exist_ok=True)
        path = folder / f"reply{len(list(folder.iterdir()))}.txt"
        path.write_bytes(data)
        return self.cli("step", self.session_id, str(path))

    def cli(self, *args: str, stdin: bytes | None = None) -> Result:
        return CliRunner().invoke(main, [*args, "--root", str(self.store.root)], input=stdin)


def _make_agent(tmp_path: Path, workspace_is_root: bool) -> tuple[Agent, Snapshots]:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "sub" / "deep.txt").write_text(SECRET + " deep\n")
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "secret.txt").write_text(SECRET + " prefix\n")
    store = SessionStore(tmp_path / "run")
    if workspace_is_root:
        store.ensure_dirs()
        ws = store.root
    else:
        ws = tmp_path / "ws"
        ws.mkdir()
    state, _ = start_session(store, "Survive hostile replies", ws)
    before = {name: snapshot(tmp_path / name) for name in GUARDED}
    return Agent(store, state.session_id, ws, tmp_path), before


def _check_containment(agent: Agent, before: Snapshots) -> None:
    """Nothing beside the workspace changed, and no secret reached an outbox."""
    assert {name: snapshot(agent.tmp / name) for name in GUARDED} == before
    for path in agent.store.outbox.glob("*.txt") if agent.store.outbox.is_dir() else ():
        assert SECRET.encode() not in path.read_bytes(), f"secret leaked into {path}"


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    """Workspace ``tmp/ws``; run directory ``tmp/run``; guarded ``tmp/outside``, ``tmp/ws2``."""
    made, before = _make_agent(tmp_path, workspace_is_root=False)
    yield made
    _check_containment(made, before)


@pytest.fixture
def root_agent(tmp_path: Path) -> Iterator[Agent]:
    """The workspace is the run directory itself, so the agent's own folders are inside it."""
    made, before = _make_agent(tmp_path, workspace_is_root=True)
    yield made
    _check_containment(made, before)


def _file_command(command: str, path: str) -> str:
    """A reply with one file command on ``path``, in the syntax the command takes."""
    if command in ("READ_FILE", "DELETE_FILE"):
        return f'[{command} path="{path}"]\n'
    if command == "EDIT_FILE":
        return f'[EDIT_FILE path="{path}" start_line="1" end_line="1"]\npwned\n[/EDIT_FILE]\n'
    return f'[CREATE_FILE path="{path}"]\npwned\n[/CREATE_FILE]\n'


FILE_COMMANDS = ("READ_FILE", "CREATE_FILE", "EDIT_FILE", "DELETE_FILE")


# --- paths that leave the workspace ----------------------------------------------------


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "{outside}/secret.txt",
        "../ws/../outside/secret.txt",
        "./../outside/sub/deep.txt",
        "nope/../../outside/secret.txt",
        "../outside/new.txt",
        "../ws2/secret.txt",
        "..",
    ],
)
def test_every_file_command_rejects_a_path_outside_the_workspace(agent, command, path):
    path = path.format(outside=agent.tmp / "outside")
    assert agent.results(_file_command(command, path)) == [f"[FAILED] {command}: {OUTSIDE}"]


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("..\\outside\\secret.txt", "Path contains a backslash; use forward slashes (/)"),
        ("\\\\server\\share\\x", "Path contains a backslash; use forward slashes (/)"),
        ("C:/Windows/win.ini", "Path is outside workspace"),
        ("", "Path is empty"),
    ],
)
def test_paths_that_are_not_posix_relative_are_rejected_with_a_reason(agent, command, path, reason):
    assert agent.results(_file_command(command, path)) == [
        f"[FAILED] {command}: REJECTED: {reason}"
    ]


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(
    "path",
    ["out_file", "out_rel", "out_chain", "out_dir/secret.txt", "out_dir/new.txt", "dangling"],
)
def test_symlinks_inside_the_workspace_do_not_lead_outside(agent, command, path):
    outside = agent.tmp / "outside"
    (agent.ws / "out_file").symlink_to(outside / "secret.txt")
    (agent.ws / "out_rel").symlink_to("../outside/secret.txt")
    (agent.ws / "out_chain").symlink_to("out_rel")
    (agent.ws / "out_dir").symlink_to(outside, target_is_directory=True)
    (agent.ws / "dangling").symlink_to(outside / "created-by-llm.txt")
    links = {p.name: os.readlink(p) for p in agent.ws.iterdir()}

    assert agent.results(_file_command(command, path)) == [f"[FAILED] {command}: {OUTSIDE}"]
    assert {p.name: os.readlink(p) for p in agent.ws.iterdir()} == links


def test_a_symlink_to_a_workspace_file_is_never_written_or_deleted_through(agent):
    (agent.ws / "real.txt").write_text("keep\n")
    (agent.ws / "alias").symlink_to("real.txt")
    reply = (
        _file_command("CREATE_FILE", "alias")
        + _file_command("EDIT_FILE", "./alias")
        + _file_command("DELETE_FILE", "alias")
        + _file_command("CREATE_FILE", "alias/")
        + _file_command("READ_FILE", "alias")
    )
    text = agent.apply(reply)
    assert results_section(text) == [
        f"[FAILED] CREATE_FILE: {SYMLINK}",
        f"[FAILED] EDIT_FILE: {SYMLINK}",
        f"[FAILED] DELETE_FILE: {SYMLINK}",
        "[FAILED] CREATE_FILE: REJECTED: Path ends with '/'; name a file",
        "[OK] READ_FILE: 'alias' is shown under Requested File Contents",
    ]
    assert "--- alias ---\n   1 | keep\n--- end alias ---" in text
    assert (agent.ws / "real.txt").read_text() == "keep\n"
    assert (agent.ws / "alias").is_symlink()


@pytest.mark.parametrize("command", ["CREATE_FILE", "DELETE_FILE"])
def test_a_dotdot_detour_does_not_get_a_write_through_a_symlink(agent, command):
    (agent.ws / "real.txt").write_text("keep\n")
    (agent.ws / "alias").symlink_to("real.txt")
    results = agent.results(_file_command(command, "nope/../alias"))
    assert (agent.ws / "real.txt").is_file()
    assert (agent.ws / "real.txt").read_text() == "keep\n"
    assert results == [f"[FAILED] {command}: {SYMLINK}"]


@pytest.mark.parametrize("command", ["CREATE_FILE", "EDIT_FILE", "DELETE_FILE"])
def test_a_hard_link_to_an_outside_file_is_refused(agent, command):
    os.link(agent.tmp / "outside" / "secret.txt", agent.ws / "hard.txt")
    assert agent.results(_file_command(command, "hard.txt")) == [
        f"[FAILED] {command}: REJECTED: Path is a hard link to another file"
    ]
    assert (agent.ws / "hard.txt").samefile(agent.tmp / "outside" / "secret.txt")
    # The fixture's teardown checks that outside/secret.txt kept its bytes and mtime.


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(
    "path",
    [
        ".git/hooks/pre-commit",
        ".GIT/hooks/pre-commit",
        "src/../.git/config",
        "gitlink/hooks/pre-commit",
        ".git",
    ],
)
def test_the_git_folder_is_off_limits(agent, command, path):
    hooks = agent.ws / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (agent.ws / ".git" / "config").write_text("[core]\n")
    (agent.ws / "gitlink").symlink_to(".git", target_is_directory=True)
    before = snapshot(agent.ws / ".git")

    assert agent.results(_file_command(command, path)) == [f"[FAILED] {command}: {PROTECTED_GIT}"]
    assert snapshot(agent.ws / ".git") == before


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize(
    "path",
    [
        "sessions/{sid}.json",
        "sessions/evil.json",
        "outbox/{sid}_seq0002.txt",
        "outbox/../sessions/x.json",
        "inbox/next-reply.txt",
        "agentlink/{sid}.json",
    ],
)
def test_the_agents_own_folders_are_off_limits_when_the_workspace_is_the_root(
    root_agent, command, path
):
    agent = root_agent
    (agent.ws / "agentlink").symlink_to("sessions", target_is_directory=True)
    path = path.format(sid=agent.session_id)

    text = agent.apply(_file_command(command, path))

    assert results_section(text) == [f"[FAILED] {command}: {PROTECTED_AGENT}"]
    assert list(agent.store.inbox.iterdir()) == []
    assert not (agent.store.sessions / "evil.json").exists()
    assert f"Session: {agent.session_id}\nSequence: 2\n" in text
    listing = text[text.index("## Workspace Files\n") :].split("\n\n")[0]
    assert "sessions/" not in listing and "outbox/" not in listing


# --- files the LLM asks to see ---------------------------------------------------------


def test_reading_a_huge_file_shows_a_bounded_head(agent):
    (agent.ws / "big.txt").write_text("a" * 3_000_000)
    text = agent.apply('[READ_FILE path="big.txt"]\n')
    assert results_section(text) == [
        "[OK] READ_FILE: 'big.txt' is shown under Requested File Contents"
    ]
    shown = (
        "   1 | "
        + "a" * FILE_VIEW_CAP
        + "\n(line 1 has 3,000,000 characters; only its first 100,000 are shown)\n"
    )
    assert f"--- big.txt ---\n{shown}--- end big.txt ---" in text
    assert len(text) < FILE_VIEW_CAP + 10_000


def test_one_file_read_under_many_spellings_does_not_multiply_the_outbox(agent):
    (agent.ws / "big.txt").write_text("a" * 3_000_000)
    text = agent.apply("".join(f'[READ_FILE path="x{i}/../big.txt"]\n' for i in range(40)))
    assert len(text) < 3 * FILE_VIEW_CAP


@pytest.mark.parametrize("command", ["READ_FILE", "DELETE_FILE", "CREATE_FILE"])
def test_a_huge_sparse_file_is_never_loaded_into_memory(agent, command):
    reply = "[RUN_COMMAND]\ntruncate -s 128M sparse.bin\n[/RUN_COMMAND]\n" + _file_command(
        command, "sparse.bin"
    )
    tracemalloc.start()
    try:
        text = agent.apply(reply)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    results = results_section(text)
    assert results[0] == (
        "[OK] RUN_COMMAND: Ran 'truncate -s 128M sparse.bin' (exit code 0); "
        "it created 1 file (sparse.bin)"
    )
    assert results[2].startswith("[OK] ")
    if command == "READ_FILE":
        assert "--- sparse.bin ---\n(binary file, 134,217,728 bytes, not shown)\n" in text
    assert peak < 32 * 1024 * 1024


def test_reading_a_binary_file_shows_a_note_not_its_bytes(agent):
    (agent.ws / "blob.bin").write_bytes(bytes(range(256)) * 40)
    text = agent.apply('[READ_FILE path="blob.bin"]\n')
    assert "--- blob.bin ---\n(binary file, 10,240 bytes, not shown)\n--- end blob.bin ---" in text


def test_reading_a_latin1_file_shows_it_decoded_and_says_it_is_not_utf8(agent):
    (agent.ws / "legacy.txt").write_bytes("café\n".encode("latin-1"))
    text = agent.apply('[READ_FILE path="legacy.txt"]\n')
    assert (
        "--- legacy.txt ---\n   1 | café\n(not UTF-8 (from line 1): shown decoded as cp1252, "
        "one character a byte; EDIT_FILE, REPLACE and PATCH refuse it)\n--- end legacy.txt ---"
    ) in text


def test_a_file_deleted_after_being_requested_is_reported_not_shown(agent):
    (agent.ws / "gone.txt").write_text("bye\n")
    text = agent.apply('[READ_FILE path="gone.txt"]\n[DELETE_FILE path="gone.txt"]\n')
    assert "--- gone.txt ---\n(cannot be shown: No such file or directory)\n" in text


def _unblock_fifo(path: Path) -> None:
    """Give a reader stuck on the FIFO its end of file, so a hang becomes a slow turn."""
    with contextlib.suppress(OSError):  # no reader (ENXIO), or no longer a FIFO
        if stat.S_ISFIFO(path.lstat().st_mode):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("READ_FILE", "[FAILED] READ_FILE: File 'pipe' not found"),
        ("EDIT_FILE", "[FAILED] EDIT_FILE: File 'pipe' not found"),
        ("CREATE_FILE", "[OK] CREATE_FILE: Overwrote 'pipe'"),
        ("DELETE_FILE", "[OK] DELETE_FILE: Deleted 'pipe'"),
    ],
)
def test_a_fifo_never_blocks_a_file_command(agent, command, expected):
    reply = "[RUN_COMMAND]\nmkfifo pipe\n[/RUN_COMMAND]\n" + _file_command(command, "pipe")
    unblocker = threading.Timer(3.0, _unblock_fifo, [agent.ws / "pipe"])
    unblocker.start()
    started = time.monotonic()
    try:
        results = agent.results(reply)
    finally:
        unblocker.cancel()
    assert time.monotonic() - started < 2.5, "the turn blocked on the FIFO"
    assert results == [
        "[OK] RUN_COMMAND: Ran 'mkfifo pipe' (exit code 0)",
        "  Output: (no output)",
        expected,
    ]


# --- replies that are not what they should be ------------------------------------------


@pytest.mark.parametrize(
    "reply", [b"", b"   \n\t\r\n  \n", b" \x0c\x0b "], ids=["empty", "blank", "form-feed"]
)
def test_an_empty_reply_is_reported(agent, reply):
    assert agent.results(reply) == ["[FAILED] REPLY: Your reply was empty; nothing was run"]


def test_a_reply_of_prose_only_gets_the_no_commands_note(agent):
    reply = "I think we should refactor the parser first.\n[Not a tag]\n[DONEISH]\nDONE\n"
    assert agent.results(reply) == [
        "[NOTE] reply line 3: [DONEISH] is not a command, so the line was ignored; the "
        "commands are CREATE_FILE, EDIT_FILE, REPLACE, PATCH, DELETE_FILE, READ_FILE, SEARCH, "
        "RUN_COMMAND, MESSAGE, ASK, DONE",
        NO_COMMANDS,
    ]


def test_an_oversized_reply_is_refused_whole(agent):
    head = b'[CREATE_FILE path="should-not-exist.txt"]\nx\n[/CREATE_FILE]\n'
    reply = head + b"x" * (6_000_000 - len(head))
    assert len(reply) > REPLY_SIZE_CAP
    assert agent.results(reply) == [
        "[FAILED] REPLY: Your reply was 6,000,000 bytes, over the 5,242,880-byte limit; "
        "nothing in it was run. Send smaller replies."
    ]
    assert not (agent.ws / "should-not-exist.txt").exists()


def test_a_reply_with_nul_bytes_is_refused_whole(agent):
    reply = b'[CREATE_FILE path="a.txt"]\nx\x00y\n[/CREATE_FILE]\n'
    assert agent.results(reply) == [
        "[FAILED] REPLY: Your reply contained NUL bytes (binary data); nothing in it was run"
    ]
    assert not (agent.ws / "a.txt").exists()


@pytest.mark.parametrize(
    "reply",
    [
        '[CREATE_FILE path="café.txt"]\nnaïve\n[/CREATE_FILE]\n'.encode("latin-1"),
        b'[CREATE_FILE path="caf\xed\xb3\xbf.txt"]\nnaive\n[/CREATE_FILE]\n',  # UTF-8 of U+DCFF
    ],
    ids=["latin-1", "surrogate"],
)
def test_an_invalid_utf8_reply_is_run_with_replacement_characters_and_says_so(agent, reply):
    offset = reply.index(b"caf") + 3
    results = agent.results(reply)
    assert results[0] == (
        f"[FAILED] REPLY: Your reply was not valid UTF-8 (first bad byte at offset {offset}); "
        "it was read with replacement characters"
    )
    assert results[1].startswith("[OK] CREATE_FILE: Created 'caf\ufffd")
    assert len(results) == 2


def test_two_thousand_commands_are_all_answered(agent):
    reply = "".join(
        f'[READ_FILE path="missing{i}.txt"]\n[MESSAGE]\nnote {i}\n[/MESSAGE]\n' for i in range(1000)
    )
    started = time.monotonic()
    results = agent.results(reply)
    assert len(results) == 2000
    assert results[-2:] == [
        "[FAILED] READ_FILE: File 'missing999.txt' not found",
        "[OK] MESSAGE: Shown to the user",
    ]
    assert time.monotonic() - started < 10


def test_an_unclosed_body_command_stops_the_rest_of_the_reply(agent):
    (agent.ws / "keep.txt").write_text("keep\n")
    reply = '[CREATE_FILE path="half.txt"]\nx\n[DELETE_FILE path="keep.txt"]\n'
    assert agent.results(reply) == [
        "[FAILED] CREATE_FILE: reply line 1: no closing [/CREATE_FILE] tag; "
        "this command and the rest of the reply were ignored"
    ]
    assert (agent.ws / "keep.txt").exists()
    assert not (agent.ws / "half.txt").exists()


def test_tags_with_broken_attributes_are_reported_by_line(agent):
    (agent.ws / "keep.txt").write_text("keep\n")
    reply = (
        '[READ_FILE path="a\nb"]\n'
        '[CREATE_FILE path="c\nd.txt"]\nbody\n[/CREATE_FILE]\n'
        "[CREATE_FILE path='say \"hi\".txt']\nq\n[/CREATE_FILE]\n"
        '[DELETE_FILE path="keep.txt" path="other.txt"]\n'
        '[READ_FILE path="a]b"]\n'
        '[READ_FILE path="unterminated]\n'
    )
    assert agent.results(reply) == [
        '[FAILED] READ_FILE: reply line 1: malformed attributes: path="a',
        '[FAILED] CREATE_FILE: reply line 3: malformed attributes: path="c',
        "[OK] CREATE_FILE: Created 'say \"hi\".txt'",
        "[FAILED] DELETE_FILE: reply line 10: attribute 'path' is given twice",
        "[FAILED] READ_FILE: File 'a]b' not found",
        '[FAILED] READ_FILE: reply line 12: malformed attributes: path="unterminated',
    ]
    assert (agent.ws / "keep.txt").exists()
    assert sorted(p.name for p in agent.ws.iterdir()) == ["keep.txt", 'say "hi".txt']


# --- EDIT_FILE with line numbers from nowhere ------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("0", "0", "Invalid line range 0-0 for 'f.txt' (the file has 3 lines)"),
        ("-2", "1", "Invalid line range -2-1 for 'f.txt' (the file has 3 lines)"),
        ("0", "-1", "Invalid line range 0--1 for 'f.txt' (the file has 3 lines)"),
        (
            str(10**30),
            str(10**30),
            f"Invalid line range {10**30}-{10**30} for 'f.txt' (the file has 3 lines)",
        ),
        ("3", "1", "Invalid line range 3-1 for 'f.txt' (the file has 3 lines)"),
        ("5", "4", "Invalid line range 5-4 for 'f.txt' (the file has 3 lines)"),
        (
            "9" * 5000,
            "1",
            "reply line 1: attribute 'start_line' must be a whole number, got '"
            + "9" * 57
            + "...'",
        ),
        ("1.5", "2", "reply line 1: attribute 'start_line' must be a whole number, got '1.5'"),
    ],
)
def test_edit_with_an_impossible_range_fails_and_leaves_the_file(agent, start, end, expected):
    (agent.ws / "f.txt").write_text("one\ntwo\nthree\n")
    reply = f'[EDIT_FILE path="f.txt" start_line="{start}" end_line="{end}"]\nX\n[/EDIT_FILE]\n'
    assert agent.results(reply) == [f"[FAILED] EDIT_FILE: {expected}"]
    assert (agent.ws / "f.txt").read_text() == "one\ntwo\nthree\n"


def test_edit_on_a_directory_or_a_binary_file_fails_and_changes_nothing(agent):
    (agent.ws / "d").mkdir()
    (agent.ws / "blob.bin").write_bytes(b"\xff\xfe\x00\x01\n")
    reply = _file_command("EDIT_FILE", "d") + _file_command("EDIT_FILE", "blob.bin")
    assert agent.results(reply) == [
        "[FAILED] EDIT_FILE: 'd' is a directory",
        "[FAILED] EDIT_FILE: 'blob.bin' is not a UTF-8 text file",
    ]
    assert (agent.ws / "blob.bin").read_bytes() == b"\xff\xfe\x00\x01\n"
    assert (agent.ws / "d").is_dir()


# --- CREATE_FILE and DELETE_FILE on the wrong kind of thing ----------------------------


def test_create_and_delete_refuse_directories(agent):
    (agent.ws / "d").mkdir()
    (agent.ws / "d" / "inside.txt").write_text("keep\n")
    reply = (
        _file_command("DELETE_FILE", "d")
        + _file_command("CREATE_FILE", "d")
        + _file_command("CREATE_FILE", "d/")
        + _file_command("DELETE_FILE", ".")
        + _file_command("CREATE_FILE", ".")
    )
    assert agent.results(reply) == [
        "[FAILED] DELETE_FILE: 'd' is a directory",
        "[FAILED] CREATE_FILE: 'd' is a directory",
        "[FAILED] CREATE_FILE: REJECTED: Path ends with '/'; name a file",
        "[FAILED] DELETE_FILE: '.' is a directory",
        "[FAILED] CREATE_FILE: '.' is a directory",
    ]
    assert (agent.ws / "d" / "inside.txt").read_text() == "keep\n"


def test_create_under_a_path_component_that_is_a_file_says_not_a_directory(agent):
    (agent.ws / "f.txt").write_text("keep\n")
    reply = _file_command("CREATE_FILE", "f.txt/b.txt") + _file_command("CREATE_FILE", "f.txt/c/d")
    assert agent.results(reply) == [
        "[FAILED] CREATE_FILE: Not a directory ('f.txt/b.txt')",
        "[FAILED] CREATE_FILE: Not a directory ('f.txt/c/d')",
    ]
    assert (agent.ws / "f.txt").read_text() == "keep\n"


def test_create_with_a_name_longer_than_the_file_system_allows_fails_cleanly(agent):
    name = "n" * 300
    assert agent.results(_file_command("CREATE_FILE", name)) == [
        "[FAILED] CREATE_FILE: REJECTED: Path has a name longer than 255 bytes"
    ]


def test_create_with_a_long_but_legal_name_succeeds(agent):
    name = "n" * 250
    (agent.ws / ("m" * 250)).write_text("the file system takes 250-byte names\n")
    assert agent.results(_file_command("CREATE_FILE", name)) == [
        f"[OK] CREATE_FILE: Created '{name}'"
    ]


def test_delete_of_a_missing_file_under_a_file_says_not_found(agent):
    (agent.ws / "f.txt").write_text("keep\n")
    assert agent.results(_file_command("DELETE_FILE", "f.txt/b.txt")) == [
        "[FAILED] DELETE_FILE: File 'f.txt/b.txt' not found"
    ]


# --- RUN_COMMAND -----------------------------------------------------------------------


def test_a_command_printing_ten_megabytes_gives_a_bounded_outbox(agent):
    command = "head -c 10000000 /dev/zero | tr '\\0' a"
    text = agent.apply(f"[RUN_COMMAND]\n{command}\n[/RUN_COMMAND]\n")
    results = results_section(text)
    assert results[:2] == [f"[OK] RUN_COMMAND: Ran '{command}' (exit code 0)", "  Output:"]
    assert results[2:] == [
        "    " + "a" * 2000,
        "    [... 9996000 characters cut ...]",
        "    " + "a" * 2000,
    ]
    assert len(text) < 12_000


def test_a_command_waiting_for_stdin_gets_end_of_file_at_once(agent):
    reply = (
        "[RUN_COMMAND]\ncat\n[/RUN_COMMAND]\n"
        '[RUN_COMMAND]\nread line; echo "read=$?"\n[/RUN_COMMAND]\n'
    )
    started = time.monotonic()
    assert agent.results(reply) == [
        "[OK] RUN_COMMAND: Ran 'cat' (exit code 0)",
        "  Output: (no output)",
        "[OK] RUN_COMMAND: Ran 'read line; echo \"read=$?\"' (exit code 0)",
        "  Output: read=1",
    ]
    assert time.monotonic() - started < 5


def test_a_command_killed_by_a_signal_fails(agent):
    assert agent.results("[RUN_COMMAND]\nkill -9 $$\n[/RUN_COMMAND]\n") == [
        "[FAILED] RUN_COMMAND: Ran 'kill -9 $$' (exit code -9)",
        "  Output: (no output)",
    ]


@pytest.mark.slow  # real time: a time limit, a kill or a poll
def test_a_command_that_hangs_times_out(agent):
    started = time.monotonic()
    results = agent.results("[RUN_COMMAND]\nsleep 30\n[/RUN_COMMAND]\n", shell=Shell(timeout=1))
    assert results == [
        "[FAILED] RUN_COMMAND: 'sleep 30' timed out after 1 s",
        "  Output: (no output)",
    ]
    assert time.monotonic() - started < 5


def test_a_background_child_holding_the_pipe_does_not_stall_the_turn(agent):
    started = time.monotonic()
    results = agent.results("[RUN_COMMAND]\nsleep 30 &\necho started\n[/RUN_COMMAND]\n")
    assert results == ["[OK] RUN_COMMAND: Ran 'sleep 30 & ...' (exit code 0)", "  Output: started"]
    assert time.monotonic() - started < 5


def test_an_empty_or_oversized_command_fails_cleanly(agent):
    huge = ": " + "x" * 200_000
    reply = f"[RUN_COMMAND]\n\n  \n[/RUN_COMMAND]\n[RUN_COMMAND]\n{huge}\n[/RUN_COMMAND]\n"
    assert agent.results(reply) == [
        "[FAILED] RUN_COMMAND: No command given",
        f"[FAILED] RUN_COMMAND: Argument list too long ('{SHELL}')",
    ]


NON_UTF8_NAME = "[RUN_COMMAND]\nprintf x > \"$(printf 'bad\\377name')\"\n[/RUN_COMMAND]\n"


def test_a_file_name_that_is_not_utf8_is_listed_escaped(agent):
    text = agent.apply(NON_UTF8_NAME)
    assert results_section(text)[0] == (
        "[OK] RUN_COMMAND: Ran 'printf x > \"$(printf 'bad\\377name')\"' (exit code 0); "
        "it created 1 file (bad\\xffname)"
    )
    assert "## Workspace Files\n(changes since message 1;" in text  # listed once, escaped
    assert "\n  added: bad\\xffname (1 bytes)\n" in text


def test_cli_a_session_goes_on_after_a_reply_made_an_undecodable_file_name(agent):
    first = agent.step(NON_UTF8_NAME)
    second = agent.step("[RUN_COMMAND]\nrm -f bad*\n[/RUN_COMMAND]\n")
    assert (first.exit_code, second.exit_code) == (0, 0), second.stderr
    assert results_section(agent.outbox(3)) == [
        "[OK] RUN_COMMAND: Ran 'rm -f bad*' (exit code 0); it deleted 1 file (bad\\xffname)",
        "  Output: (no output)",
    ]


def test_a_very_deep_folder_tree_is_listed(agent):
    make_deep = (
        'd=.; i=0; while [ "$i" -lt 1000 ]; do d="$d/a"; i=$((i+1)); done; '
        'mkdir -p "$d"; touch "$d/leaf.txt"'
    )
    try:
        text = agent.apply(f"[RUN_COMMAND]\n{make_deep}\n[/RUN_COMMAND]\n")
        assert results_section(text)[0] == (
            f"[OK] RUN_COMMAND: Ran '{make_deep}' (exit code 0); "
            f"it created 1 file ({'a/' * 1000}leaf.txt)"
        )
        assert "\n  added: " + "a/" * 1000 + "leaf.txt (0 bytes)\n" in text
    finally:
        # shutil.rmtree (pytest's cleanup) recurses once per level and would fail on this tree.
        subprocess.run(["rm", "-rf", str(agent.ws / "a")], check=True)


def test_a_command_removing_the_outbox_folder_does_not_lose_the_turn(agent):
    results = agent.results("[RUN_COMMAND]\nrm -rf ../run/outbox\n[/RUN_COMMAND]\n")
    assert results == [
        "[OK] RUN_COMMAND: Ran 'rm -rf ../run/outbox' (exit code 0)",
        "  Output: (no output)",
    ]


# --- DONE ------------------------------------------------------------------------------


def test_done_after_a_failed_command_is_refused(agent):
    reply = '[READ_FILE path="missing.txt"]\n[DONE]\nAll good.\n[/DONE]\n'
    assert agent.results(reply) == [
        "[FAILED] READ_FILE: File 'missing.txt' not found",
        "[FAILED] DONE: Not accepted: 1 command(s) above failed; fix them, then send [DONE] again",
    ]
    assert agent.store.load(agent.session_id).summary is None


def test_done_with_an_empty_summary_completes_the_session(agent):
    result = agent.step("[DONE]\n[/DONE]\n")
    assert result.exit_code == 0, result.output
    assert "[OK] DONE: Task marked complete" in result.stderr
    assert "Session complete: \n" in result.stderr
    state = agent.store.load(agent.session_id)
    assert (state.is_complete, state.summary, state.sequence_number) == (True, "", 2)
    assert not agent.store.outbox_path(agent.session_id, 2).exists()

    again = agent.step("[MESSAGE]\nhello?\n[/MESSAGE]\n")
    assert again.exit_code == 1
    assert (
        f"error: Session {agent.session_id} is complete; it takes no more replies" in again.stderr
    )


def test_done_followed_by_more_commands_is_refused(agent):
    result = agent.step("[DONE]\nShipped.\n[/DONE]\n[RUN_COMMAND]\nexit 3\n[/RUN_COMMAND]\n")
    assert result.exit_code == 0, result.output
    assert results_section(agent.outbox(2)) == [
        "[FAILED] DONE: Not accepted: 1 command came after [DONE]; send [DONE] alone, as the "
        "last command, once the work is finished",
        "[FAILED] RUN_COMMAND: Ran 'exit 3' (exit code 3)",
        "  Output: (no output)",
    ]


def test_done_in_a_reply_read_with_replacement_characters_is_refused(agent):
    reply = '[CREATE_FILE path="a.txt"]\nnaïve\n[/CREATE_FILE]\n[DONE]\nDone.\n[/DONE]\n'
    result = agent.step(reply.encode("cp1252"))
    assert result.exit_code == 0, result.output
    assert (agent.ws / "a.txt").read_text() == "na\ufffdve\n"
    assert results_section(agent.outbox(2)) == [
        "[FAILED] REPLY: Your reply was not valid UTF-8 (first bad byte at offset 29); "
        "it was read with replacement characters",
        "[OK] CREATE_FILE: Created 'a.txt'",
        "[FAILED] DONE: Not accepted: 1 command(s) above failed; fix them, then send [DONE] again",
    ]


# --- the CLI: bad replies are not the user's error -------------------------------------


MARKUP = "[bold red]x[/] [link=file:///etc/passwd]click[/link] [/bold] :warning: [on red]"


def test_cli_prints_markup_from_the_llm_literally(agent):
    reply = (
        f"[MESSAGE]\n{MARKUP}\n[/MESSAGE]\n"
        '[CREATE_FILE path="[bold red]x[/]"]\ny\n[/CREATE_FILE]\n'
        '[READ_FILE path="[link=https]p[/link]"]\n'
    )
    result = agent.step(reply)
    assert result.exit_code == 0, result.output
    assert f"Message from the LLM: {MARKUP}\n" in result.stderr
    assert "[OK] CREATE_FILE: Created '[bold red]x[/]'\n" in result.stderr
    assert "[FAILED] READ_FILE: File '[link=https]p[/link]' not found\n" in result.stderr
    assert (agent.ws / "[bold red]x[/]").read_text() == "y\n"
    assert "[OK] CREATE_FILE: Created '[bold red]x[/]'" in agent.outbox(2)


def test_cli_prints_a_markup_summary_literally(agent):
    result = agent.step(f"[DONE]\n{MARKUP}\n[/DONE]\n")
    assert result.exit_code == 0, result.output
    assert f"Session complete: {MARKUP}\n" in result.stderr


def test_cli_does_not_pass_terminal_escapes_from_the_llm_to_the_console(agent):
    # An LLM must not clear the screen, hide [FAILED] lines or set the clipboard (OSC 52).
    reply = b"[MESSAGE]\n\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x1b\\fine\n[/MESSAGE]\n"
    result = agent.step(reply + b'[READ_FILE path="\x1b[8mhidden"]\n')
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stderr
    assert "Message from the LLM: \\x1b[2J\\x1b]52;c;ZWNobyBwd25lZA==\\x1b\\fine" in result.stderr


@pytest.mark.parametrize(
    ("reply", "headline"),
    [
        (b"x" * 6_000_000, "[FAILED] REPLY: Your reply was "),
        (b"[MESSAGE]\n\x00\n[/MESSAGE]\n", "[FAILED] REPLY: Your reply contained NUL bytes"),
        (
            b"caf\xe9\n",
            "[FAILED] REPLY: Your reply was not valid UTF-8 (first bad byte at offset 3)",
        ),
        (b" \n\n", "[FAILED] REPLY: Your reply was empty; nothing was run"),
    ],
    ids=["oversized", "nul", "latin-1", "empty"],
)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_cli_step_exits_0_on_a_bad_reply_and_writes_the_next_outbox(agent, reply, headline, via):
    if via == "file":
        result = agent.step(reply)
    else:
        result = agent.cli("step", agent.session_id, "-", stdin=reply)
    assert result.exit_code == 0, result.output
    assert result.exception is None
    outbox = agent.outbox(2)
    assert results_section(outbox)[0].startswith(headline)
    assert headline in result.stderr
    assert not list(agent.ws.iterdir())
    shown = agent.cli("show", agent.session_id)
    assert shown.exit_code == 0
    assert shown.stdout == outbox


def test_cli_an_oversized_reply_file_is_reported_with_its_real_size(agent):
    result = agent.step(b"x" * 6_000_000)
    assert result.exit_code == 0, result.output
    assert results_section(agent.outbox(2)) == [
        "[FAILED] REPLY: Your reply was 6,000,000 bytes, over the 5,242,880-byte limit; "
        "nothing in it was run. Send smaller replies."
    ]


def test_cli_rejected_paths_exit_0_and_reach_the_console(agent):
    result = agent.step(
        '[READ_FILE path="../outside/secret.txt"]\n[CREATE_FILE path=".git/hooks/pre-commit"]\n'
        "#!/bin/sh\n[/CREATE_FILE]\n"
    )
    assert result.exit_code == 0, result.output
    assert f"[FAILED] READ_FILE: {OUTSIDE}\n" in result.stderr
    assert f"[FAILED] CREATE_FILE: {PROTECTED_GIT}\n" in result.stderr
    assert SECRET not in result.output
    assert not (agent.ws / ".git").exists()
