"""Faults of the machine, not the reply: a full disk, no permission, a read-only filesystem, a
folder that vanishes, a damaged session file.  Each is one clear line and exit 1 (a watcher
waits out a deleted inbox), never a traceback; a turn one of them stops is rolled back, and is
applied exactly once when the user retries as the message says.

Every case runs the real ``codingagent`` in a subprocess, so a traceback would show (the disk
sweep's runs after a fault, once space is freed, run in this process: each costs a start-up
otherwise, four a level).  The disk
cases mount a 2 MB tmpfs (root only); the permission cases run the CLI as root without
CAP_DAC_OVERRIDE (``setpriv``), so permission bits bind it as they bind a user.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codingagent.faults import TurnNotApplied, is_fault, message
from codingagent.frontends.cli import main
from codingagent.records.store import SessionStore
from codingagent.session.lifecycle import start_session

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="mounting a filesystem needs root")
# Root without the capabilities that bypass permission bits; a user needs nothing.
UNPRIVILEGED = (
    ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-linux_immutable"]
    if IS_ROOT
    else []
)
NO_SANDBOX = ("--sandbox", "none", "--commands", "allow")

# Overwrites a file saved as a blob pre-image (over 64 KiB), edits, creates, deletes: a turn
# that writes every kind of file the transaction knows.
BIG_OLD = "old line of big\n" * 4500
BIG_NEW = "new line of big\n" * 4500
REPLY = (
    '[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\nALPHA\n[/EDIT_FILE]\n'
    f'[CREATE_FILE path="big.txt"]\n{BIG_NEW}[/CREATE_FILE]\n'
    '[CREATE_FILE path="new/dir/c.txt"]\nsee\n[/CREATE_FILE]\n'
    '[DELETE_FILE path="old.txt"]\n'
    '[READ_FILE path="a.txt"]\n'
)


# --- helpers ---------------------------------------------------------------------------------


def cli(root: Path, *args: str, unprivileged: bool = False) -> subprocess.CompletedProcess:
    """``codingagent ARGS --root ROOT`` in a real process; its output as text."""
    prefix = UNPRIVILEGED if unprivileged else []
    command = [*prefix, sys.executable, "-m", "codingagent", *args, "--root", str(root)]
    return subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)


def cli_here(root: Path, *args: str) -> subprocess.CompletedProcess:
    """:func:`cli` in this process (click's CliRunner), for the runs of the disk sweep that
    follow a fault, once space is freed: the run that meets the fault stays a real process."""
    result = CliRunner().invoke(main, [*args, "--root", str(root)])
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def failed_cleanly(result: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a run that must fail with exit 1 and name ``words``."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word.lower() in errors[0].lower(), errors[0]
    return errors[0]


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``folder`` (a session's lock file aside, and the caches in
    ``sessions/.cache``: kept to be faster next time, never a session's data)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if not p.name.endswith(".lock") and ".cache" not in p.relative_to(folder).parts
    }


def new_session(root: Path) -> str:
    store = SessionStore(root)
    store.ensure_dirs()
    (store.workspace / "a.txt").write_text("alpha\n" * 300)
    (store.workspace / "big.txt").write_text(BIG_OLD)
    (store.workspace / "old.txt").write_text("old\n" * 1000)
    state, _ = start_session(store, "faults")
    (store.inbox / "r.txt").write_text(REPLY)
    return state.session_id


def sequence(root: Path, sid: str) -> int:
    return json.loads((root / "sessions" / f"{sid}.json").read_text())["sequenceNumber"]


def applied_once(
    root: Path, sid: str, reply: Path, expected: dict, run: Callable[..., Any] = cli
) -> None:
    """The turn is applied, once: the workspace is as expected, and the same reply is skipped
    (``run``: how the CLI is run)."""
    assert snapshot(root / "workspace") == expected
    assert sequence(root, sid) == 2
    assert [p.name for p in SessionStore(root).turns(sid)] == ["0001"]
    if not reply.exists():
        return
    again = run(root, "step", sid, str(reply))
    assert again.returncode == 0 and "skipped" in again.stderr, again.stderr
    assert sequence(root, sid) == 2


def mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode:
        pytest.skip(f"mount {' '.join(args)} failed: {result.stderr.strip()}")


def unmount(point: Path) -> None:
    subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs, mounted for the test."""
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "disk"
    point.mkdir()
    mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(point))
    try:
        yield point
    finally:
        unmount(point)


def free_bytes(folder: Path) -> int:
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize


def fill(folder: Path, leave: int) -> Path:
    """A file taking all the free space of ``folder``'s filesystem but ``leave`` bytes."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        size = free_bytes(folder) - leave
        if size > 0:
            os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
    return filler


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The workspace after the turn, applied on a disk with room."""
    root = tmp_path_factory.mktemp("reference")
    sid = new_session(root)
    result = cli(root, "step", sid, str(root / "inbox" / "r.txt"))
    assert result.returncode == 0, result.stderr
    return snapshot(root / "workspace")


# --- a full disk -----------------------------------------------------------------------------

# Free bytes left when the turn starts: every page (4 KiB) from none to room enough.  The turn
# needs about 265 KB (a 72 KB reply and pre-image among it); the last levels let it through.
FILL_LEVELS = range(0, 284 * 1024, 4 * 1024)


def turn_bytes(disk: Path) -> int:
    """What the turn leaves on ``disk`` (net of what it removes), measured on a session there:
    with fewer bytes free, some write of the turn must fail, however the turn grows."""
    root = disk / "run"
    sid = new_session(root)
    free = free_bytes(disk)
    result = cli(root, "step", sid, str(root / "inbox" / "r.txt"))
    assert result.returncode == 0, result.stderr
    used = free - free_bytes(disk)
    shutil.rmtree(root)
    return used


def turns_on_a_full_disk(disk: Path, applied: dict, levels: Iterable[int]) -> list[str | None]:
    """The turn applied with ``leave`` bytes free, for each level: at each, one line naming the
    fault and a file, the workspace as before, no journal left; once space is freed, the retry
    the message names applies it exactly once. The file each fault named (None: no fault)."""
    named: list[str | None] = []
    for leave in levels:
        root = disk / "run"
        sid = new_session(root)
        before = snapshot(root / "workspace")
        reply = root / "inbox" / "r.txt"
        filler = fill(disk, leave)
        result = cli(root, "step", sid, str(reply))
        filler.unlink()
        if result.returncode == 0:
            named.append(None)
        else:
            line = failed_cleanly(result, "the disk is full", f"Turn 1 of session {sid}")
            assert "Nothing was changed: the turn was rolled back" in line
            assert f"then run 'codingagent step {sid} {reply}' again" in line
            assert snapshot(root / "workspace") == before, f"changed at {leave} bytes free"
            assert not (root / "sessions" / sid / "journal.json").exists()
            assert sequence(root, sid) == 1
            named.append(line.split("(", 2)[2].split(")")[0].replace(str(root), "").split(sid)[-1])
            retried = cli_here(root, "step", sid, str(reply))
            assert retried.returncode == 0, retried.stderr
        applied_once(root, sid, reply, applied, cli_here)
        shutil.rmtree(root)
    return named


@pytest.mark.slow  # a whole agent process per case
def test_a_full_disk_at_sampled_points_of_a_turn(disk: Path, applied: dict) -> None:
    """The fast tier's sample of the sweep below (each level costs four runs of the CLI): no
    room at all, room for half of what the turn leaves, and room for all of it but two pages.
    The levels follow what the turn needs today, so the sample stays below it as turns grow."""
    needs = turn_bytes(disk)
    assert needs > 64 * 1024, needs  # the reply and a pre-image alone are over 140 KB
    named = turns_on_a_full_disk(disk, applied, (0, needs // 2, needs - 8 * 1024))
    assert all(named), named


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_full_disk_at_every_point_of_a_turn(disk: Path, applied: dict) -> None:
    """Every level, from no room to room enough."""
    named = [name for name in turns_on_a_full_disk(disk, applied, FILL_LEVELS) if name]
    assert len(named) >= len(FILL_LEVELS) // 2
    # The faults met every kind of write of a turn: the history, a pre-image, the workspace,
    # the results, the next prompt and the state (the commit point).
    for kind in ("reply.txt", "preimages.jsonl", "pre/", "big.txt", "results.json", ".json"):
        assert any(kind in name for name in named), (kind, sorted(named))
    assert any(name.startswith("_seq0002.txt") for name in named), sorted(named)


@pytest.mark.slow
def test_a_full_disk_under_a_watcher_stops_it_and_resume_applies_the_reply(disk: Path) -> None:
    root = disk / "run"
    sid = new_session(root)
    os.replace(root / "inbox" / "r.txt", root / "r.txt")
    before = snapshot(root / "workspace")
    filler = fill(disk, 40 * 1024)
    watcher = Watcher(root, "resume", sid)
    watcher.wait_for("Watching")
    os.replace(root / "r.txt", root / "inbox" / "r.txt")  # a rename needs no space
    result = watcher.finish()
    line = failed_cleanly(result, "the disk is full", f"run 'codingagent resume {sid}'")
    assert "the reply waits in" in line
    assert snapshot(root / "workspace") == before
    assert (root / "inbox" / "r.txt").exists()
    filler.unlink()
    watcher = Watcher(root, "resume", sid)
    watcher.wait_for(f"{sid}_seq0002.txt")  # the next prompt: the reply has left the inbox
    watcher.interrupt()
    assert sequence(root, sid) == 2 and not (root / "inbox" / "r.txt").exists()


@pytest.mark.slow  # a whole agent process per case
def test_doctor_warns_when_free_space_is_low(disk: Path) -> None:
    result = cli(disk, "doctor")
    assert result.returncode == 0, result.stderr
    assert "free space" in result.stdout and "warning: low" in result.stdout


# --- a read-only filesystem ------------------------------------------------------------------


@pytest.mark.slow  # a whole agent process per case
def test_a_read_only_run_folder_is_one_line_and_changes_nothing(disk: Path) -> None:
    sid = new_session(disk)
    reply = disk / "inbox" / "r.txt"
    before = snapshot(disk)
    mount("-o", "remount,ro", str(disk))
    try:
        failed_cleanly(cli(disk, "step", sid, str(reply)), "read-only", str(disk))
        failed_cleanly(cli(disk, "resume", sid), "read-only")
        assert snapshot(disk) == before
    finally:
        mount("-o", "remount,rw", str(disk))
    assert cli(disk, "step", sid, str(reply)).returncode == 0
    assert sequence(disk, sid) == 2


@pytest.mark.slow  # a whole agent process per case
@needs_root
def test_a_read_only_workspace_stops_the_turn_and_rolls_it_back(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    workspace = tmp_path / "workspace"
    before = snapshot(workspace)
    mount("--bind", str(workspace), str(workspace))
    try:
        mount("-o", "remount,bind,ro", str(workspace))
        line = failed_cleanly(
            cli(tmp_path, "step", sid, str(tmp_path / "inbox" / "r.txt")),
            "the filesystem is read-only",
            str(workspace / "a.txt"),
        )
        assert "Nothing was changed" in line
        assert snapshot(workspace) == before
        assert not (tmp_path / "sessions" / sid / "journal.json").exists()
        assert list((tmp_path / "sessions" / sid / "aborted").iterdir())
    finally:
        unmount(workspace)
    assert sequence(tmp_path, sid) == 1


# --- permission denied -----------------------------------------------------------------------


@pytest.fixture
def unprivileged_ok(tmp_path: Path) -> None:
    if IS_ROOT and shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to drop root's permission override")
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o555)
    result = subprocess.run([*UNPRIVILEGED, "sh", "-c", f"touch {probe}/x"], capture_output=True)
    probe.rmdir()
    if result.returncode == 0:
        pytest.skip("permission bits do not bind here")


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.usefixtures("unprivileged_ok")
def test_a_workspace_without_write_permission(tmp_path: Path, applied: dict) -> None:
    sid = new_session(tmp_path)
    workspace = tmp_path / "workspace"
    reply = tmp_path / "inbox" / "r.txt"
    before = snapshot(workspace)
    workspace.chmod(0o555)
    try:
        result = cli(tmp_path, "step", sid, str(reply), unprivileged=True)
        line = failed_cleanly(result, "permission denied", str(workspace / "a.txt"), "ls -ld")
        assert "Nothing was changed" in line
        assert snapshot(workspace) == before
    finally:
        workspace.chmod(0o755)
    assert not (tmp_path / "sessions" / sid / "journal.json").exists()
    assert cli(tmp_path, "step", sid, str(reply), unprivileged=True).returncode == 0
    applied_once(tmp_path, sid, reply, applied)


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.usefixtures("unprivileged_ok")
def test_a_file_without_write_permission_rolls_back_the_files_before_it(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    workspace = tmp_path / "workspace"
    locked = workspace / "locked"
    locked.mkdir()
    (locked / "f.txt").write_text("one\n")
    locked.chmod(0o555)
    reply = tmp_path / "r.txt"
    reply.write_text(
        '[CREATE_FILE path="a.txt"]\nchanged first\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="fresh.txt"]\nnew\n[/CREATE_FILE]\n'
        '[EDIT_FILE path="locked/f.txt" start_line="1" end_line="1"]\nONE\n[/EDIT_FILE]\n'
    )
    before = snapshot(workspace)
    try:
        result = cli(tmp_path, "step", sid, str(reply), unprivileged=True)
        failed_cleanly(result, "permission denied", str(locked / "f.txt"))
        assert snapshot(workspace) == before
    finally:
        locked.chmod(0o755)
    assert sequence(tmp_path, sid) == 1


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.usefixtures("unprivileged_ok")
def test_agent_folders_without_write_permission(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    sessions = tmp_path / "sessions"
    before = snapshot(tmp_path)
    folders = [sessions, *(p for p in sessions.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)
    try:
        result = cli(tmp_path, "step", sid, str(tmp_path / "inbox" / "r.txt"), unprivileged=True)
        failed_cleanly(result, "permission denied", str(sessions))
        doctor = cli(tmp_path, "doctor", unprivileged=True)
        assert f"{sessions} is not writable" in doctor.stdout
        assert snapshot(tmp_path) == before
    finally:
        for folder in folders:
            folder.chmod(0o755)


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.usefixtures("unprivileged_ok")
def test_an_inbox_without_write_permission_warns_after_the_turn(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    reply = tmp_path / "inbox" / "r.txt"
    (tmp_path / "inbox").chmod(0o555)
    try:
        result = cli(tmp_path, "step", sid, str(reply), unprivileged=True)
    finally:
        (tmp_path / "inbox").chmod(0o755)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"warning: The reply {reply} was applied, but it could not be taken out" in (
        result.stderr
    )
    assert sequence(tmp_path, sid) == 2 and reply.exists()


@pytest.mark.slow  # a whole agent process per case
@pytest.mark.usefixtures("unprivileged_ok")
def test_where_even_the_rollback_cannot_write_resume_finishes_it(tmp_path: Path) -> None:
    """A command takes the write permission away mid-turn: the next write fails, and putting
    back the file written before it fails too. The journal stays; resume finishes the job."""
    sid = new_session(tmp_path)
    workspace = tmp_path / "workspace"
    before = snapshot(workspace)
    marker = tmp_path / "chmod-done"
    reply = tmp_path / "r.txt"
    reply.write_text(
        '[CREATE_FILE path="a.txt"]\nchanged\n[/CREATE_FILE]\n'
        f"[RUN_COMMAND]\n[ -e {marker} ] || {{ touch {marker}; chmod 555 .; }}\n[/RUN_COMMAND]\n"
        '[CREATE_FILE path="b.txt"]\nbee\n[/CREATE_FILE]\n'
    )
    result = cli(tmp_path, "step", sid, str(reply), *NO_SANDBOX, unprivileged=True)
    workspace.chmod(0o755)
    line = failed_cleanly(result, "permission denied", "Rolling it back failed too", "a.txt")
    assert f"run 'codingagent resume {sid}'" in line
    assert (tmp_path / "sessions" / sid / "journal.json").exists()
    resumed = cli(tmp_path, "resume", sid, "--no-watch", *NO_SANDBOX, unprivileged=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "Recovered turn 1" in resumed.stderr
    assert (workspace / "a.txt").read_text() == "changed\n"
    assert (workspace / "b.txt").read_text() == "bee\n"
    assert {k: v for k, v in snapshot(workspace).items() if k not in ("a.txt", "b.txt")} == {
        k: v for k, v in before.items() if k != "a.txt"
    }
    assert sequence(tmp_path, sid) == 2
    assert [p.name for p in SessionStore(tmp_path).turns(sid)] == ["0001"]


# --- folders that vanish under a watcher ---------------------------------------------------


class Watcher:
    """A real ``codingagent resume`` process; its console lines read as they come."""

    def __init__(self, root: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "codingagent", *args, "--root", str(root), "--no-copy"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 30) -> None:
        while True:
            line = self._queue.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"ended before {text!r}:\n{''.join(self.lines)}")
            self.lines.append(line)
            if text in line:
                return

    def finish(self, timeout: float = 30) -> subprocess.CompletedProcess:
        self.process.wait(timeout)
        while (line := self._queue.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return subprocess.CompletedProcess([], self.process.returncode, "", "".join(self.lines))

    def interrupt(self) -> subprocess.CompletedProcess:
        self.process.send_signal(signal.SIGINT)
        result = self.finish()
        assert result.returncode == 130, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        return result


@pytest.mark.slow
def test_a_workspace_deleted_under_a_running_watcher(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    (tmp_path / "inbox" / "r.txt").unlink()
    watcher = Watcher(tmp_path, "resume", sid)
    try:
        watcher.wait_for("Watching")
        shutil.rmtree(tmp_path / "workspace")
        (tmp_path / "inbox" / "r.txt").write_text(REPLY)
        result = watcher.finish()
    finally:
        watcher.process.kill()
    failed_cleanly(result, "workspace", "is gone", str(tmp_path / "workspace"))
    assert (tmp_path / "inbox" / "r.txt").read_text() == REPLY
    assert sequence(tmp_path, sid) == 1
    assert not (tmp_path / "sessions" / sid / "journal.json").exists()
    assert not (tmp_path / "workspace").exists()


@pytest.mark.slow
def test_an_inbox_deleted_under_a_running_watcher_is_waited_for(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    (tmp_path / "inbox" / "r.txt").unlink()
    watcher = Watcher(tmp_path, "resume", sid)
    try:
        watcher.wait_for("Watching")
        shutil.rmtree(tmp_path / "inbox")
        watcher.wait_for("is gone")
        (tmp_path / "inbox").mkdir()
        (tmp_path / "inbox" / "r.txt").write_text(REPLY)
        watcher.wait_for(f"{sid}_seq0002.txt")
        result = watcher.interrupt()
    finally:
        watcher.process.kill()
    assert "waiting for it to come back" in result.stderr
    assert sequence(tmp_path, sid) == 2


@pytest.mark.slow
def test_an_inbox_replaced_under_a_running_watcher_is_watched_afresh(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    (tmp_path / "inbox" / "r.txt").unlink()
    watcher = Watcher(tmp_path, "resume", sid)
    try:
        watcher.wait_for("Watching")
        (tmp_path / "other").mkdir()
        os.replace(tmp_path / "other", tmp_path / "inbox")  # an empty folder in its place
        (tmp_path / "inbox" / "r.txt").write_text(REPLY)
        watcher.wait_for(f"{sid}_seq0002.txt")
        watcher.interrupt()
    finally:
        watcher.process.kill()
    assert sequence(tmp_path, sid) == 2


# --- damaged session files -------------------------------------------------------------------


@pytest.mark.slow  # a whole agent process per case
def test_a_truncated_session_file_is_named_and_nothing_changes(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    state = tmp_path / "sessions" / f"{sid}.json"
    state.write_bytes(state.read_bytes()[:150])
    before = snapshot(tmp_path)
    reply = str(tmp_path / "inbox" / "r.txt")
    for args in (["step", sid, reply], ["resume", sid], ["show", sid], ["undo", sid]):
        failed_cleanly(cli(tmp_path, *args), str(state), "not a valid session file")
    doctor = cli(tmp_path, "doctor")
    failed_cleanly(doctor, "damaged")
    assert str(state) in doctor.stdout
    assert snapshot(tmp_path) == before


@pytest.mark.slow  # a whole agent process per case
def test_a_damaged_history_file_is_named_and_doctor_checks_a_session(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    assert cli(tmp_path, "step", sid, str(tmp_path / "inbox" / "r.txt")).returncode == 0
    assert cli(tmp_path, "doctor", sid).returncode == 0
    meta = tmp_path / "sessions" / sid / "turns" / "0001" / "meta.json"
    meta.write_text(meta.read_text()[:40])
    (tmp_path / "r2.txt").write_text("[MESSAGE]\nhello\n[/MESSAGE]\n")
    before = snapshot(tmp_path)
    failed_cleanly(cli(tmp_path, "log", sid), str(meta))
    doctor = cli(tmp_path, "doctor", sid)
    failed_cleanly(doctor, "1 damaged")
    assert f"{meta}: " in doctor.stdout
    assert snapshot(tmp_path) == before
    # A turn reads no earlier turn's record (the state keeps the replies' digests): it applies.
    assert cli(tmp_path, "step", sid, str(tmp_path / "r2.txt")).returncode == 0


@pytest.mark.slow  # a whole agent process per case
def test_a_damaged_journal_is_named(tmp_path: Path) -> None:
    sid = new_session(tmp_path)
    journal = tmp_path / "sessions" / sid / "journal.json"
    journal.parent.mkdir()
    journal.write_text('{"sequence": 1, "tu')
    before = snapshot(tmp_path)
    failed_cleanly(cli(tmp_path, "resume", sid, "--no-watch"), str(journal), "valid journal")
    doctor = cli(tmp_path, "doctor", sid)
    failed_cleanly(doctor, "1 damaged")
    assert f"{journal}: " in doctor.stdout
    assert snapshot(tmp_path) == before


# --- the one mapping -------------------------------------------------------------------------


def test_faults_are_named_with_the_file_and_what_to_do() -> None:
    full = OSError(errno.ENOSPC, "No space left on device", "/run/sessions/x.json")
    assert is_fault(full)
    assert not is_fault(FileNotFoundError(errno.ENOENT, "gone", "a.txt"))
    assert message(full) == (
        "The disk is full (/run/sessions/x.json): free some space on it, then run the command again"
    )
    quota = OSError(errno.EDQUOT, "Disk quota exceeded")
    assert is_fault(quota) and message(quota).startswith("The disk quota is used up: free")
    denied = PermissionError(errno.EACCES, "Permission denied", "/w/a.txt")
    fault = TurnNotApplied("abcd1234", 3, "r.txt", denied)
    assert str(fault) == (
        "Turn 3 of session abcd1234 (r.txt) was not applied: permission denied (/w/a.txt). "
        "Nothing was changed: the turn was rolled back. Give your user access to it (see: "
        "ls -ld), then apply the reply again"
    )


@pytest.mark.slow
def test_start_on_a_full_disk_says_what_exists(disk: Path) -> None:
    """Out of space at each point of `start`: nothing, or a session whose first prompt
    `resume` writes."""
    created = 0
    for leave in range(0, 24 * 1024, 4 * 1024):
        root = disk / "run"
        (root / "workspace").mkdir(parents=True)
        filler = fill(disk, leave)
        result = cli(root, "start", "t", "--no-watch")
        filler.unlink()
        if result.returncode != 0:
            line = failed_cleanly(result, "the disk is full")
            if "was created" in line:
                created += 1
                sid = line.split("Session ")[1].split()[0]
                assert cli(root, "resume", sid, "--no-watch").returncode == 0
                assert (root / "outbox" / f"{sid}_seq0001.txt").exists()
        shutil.rmtree(root)
    assert created
