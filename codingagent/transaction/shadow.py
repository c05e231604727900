"""The session's shadow copy of the workspace: what a RUN_COMMAND's changes are undone from.

A command may change any file, and a file's old content must be kept before it changes; so the
session keeps ``sessions/{id}/snapshot/``: ``index.json`` (each tracked file's stat data and the
sha256 of its content, its folders, the untracked folders) and ``objects/`` (each content once,
by sha256).  Before a command, a stat scan finds what moved since the index was taken and only
those files are read and stored (the first command of a session reads them all, once); the
objects are synced and the index written durably before the command runs.  Files larger than
the turn's cap (``max_preimage_bytes``) are never read: no turn could keep them.  Objects no
file in the index holds any more are removed once the index no longer names them.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from codingagent.fsio import atomic_write, fsync_folder
from codingagent.workspace import PathRejected, PreImage, Workspace, snapshot
from codingagent.workspace.snapshot import RACY_NS, Key, Scan, key_of

SHADOW = "snapshot"  # the folder's name in the session's folder
_CHUNK = 1024 * 1024
_FSYNCS = 64  # new objects synced one by one; more: one syncfs of their file system


@dataclass
class Index:
    """A scan with each file's content digest (None: not kept, e.g. larger than the cap)."""

    scan: Scan = field(default_factory=Scan)
    digests: dict[str, str | None] = field(default_factory=dict)

    def racy_since(self) -> int:
        return self.scan.started_ns - RACY_NS

    def same_as(self, other: Index) -> bool:
        """Whether both name the same files, contents, folders (the scan time aside)."""
        mine, theirs = self.scan, other.scan
        return (mine.files, self.digests, mine.dirs, mine.untracked) == (
            theirs.files,
            other.digests,
            theirs.dirs,
            theirs.untracked,
        )

    def to_bytes(self) -> bytes:
        """A JSON line (time, folders), then each file as seven NUL-separated fields (digest
        or '-', the five stat numbers, the path): ten times quicker than JSON for 10k files."""
        head = {
            "scannedNs": self.scan.started_ns,
            "dirs": sorted(self.scan.dirs),
            "untracked": self.scan.untracked,
        }
        digests = self.digests
        files = "\0".join(
            f"{digests.get(p) or '-'}\0{k[0]}\0{k[1]}\0{k[2]}\0{k[3]}\0{k[4]}\0{p}"
            for p, k in self.scan.files.items()
        )
        text = json.dumps(head, separators=(",", ":")) + "\n" + files
        return text.encode("utf-8", "surrogateescape")

    @staticmethod
    def from_bytes(data: bytes) -> Index:
        head_text, _, body = data.decode("utf-8", "surrogateescape").partition("\n")
        head = json.loads(head_text)
        fields = body.split("\0") if body else []
        if len(fields) % 7:
            raise ValueError("a cut index")
        files: dict[str, Key] = {}
        digests: dict[str, str | None] = {}
        for at in range(0, len(fields), 7):
            digest, ino, size, mtime, ctime, mode, path = fields[at : at + 7]
            files[path] = (int(ino), int(size), int(mtime), int(ctime), int(mode))
            digests[path] = None if digest == "-" else digest
        untracked = {p: tuple(k) for p, k in head["untracked"].items()}
        scan = Scan(files, set(head["dirs"]), untracked, head["scannedNs"])
        return Index(scan, digests)


# The index this process last read or wrote, by path: (the file's stat data, it, its digest).
# A session's next command then needs no parse of 10k entries.
_last: dict[Path, tuple[tuple[int, int, int], Index, str]] = {}


class Shadow:
    """``sessions/{id}/snapshot/``: the index and the objects it names."""

    def __init__(self, folder: Path, cap: int) -> None:
        self.folder = folder
        self.objects = folder / "objects"
        self.index_path = folder / "index.json"
        self.cap = cap  # files larger than this are not kept
        self._unsynced: list[str] = []  # objects written since the last save

    def load(self) -> Index:
        """The index as last saved (empty when there is none yet, or it is unreadable: then
        every file counts as moved and is read again)."""
        loaded = self._read()
        return loaded[0] if loaded is not None else Index()

    def load_exact(self, digest: str) -> Index | None:
        """The index saved with ``digest`` (:meth:`save`), or None if it is no longer that."""
        loaded = self._read()
        return loaded[0] if loaded is not None and loaded[1] == digest else None

    def digest(self) -> str | None:
        """The digest of the index as saved, None when there is none (or it is unreadable)."""
        loaded = self._read()
        return loaded[1] if loaded is not None else None

    def _read(self) -> tuple[Index, str] | None:
        try:
            with open(self.index_path, "rb") as f:
                info = os.fstat(f.fileno())
                seen = (info.st_ino, info.st_size, info.st_mtime_ns)
                cached = _last.get(self.index_path)
                if cached is not None and cached[0] == seen:
                    return cached[1], cached[2]
                data = f.read()
            index = Index.from_bytes(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        digest = hashlib.sha256(data).hexdigest()
        _last[self.index_path] = (seen, index, digest)
        return index, digest

    def refresh(self, ws: Workspace, old: Index, now: Scan, paths: list[str]) -> Index:
        """``now`` with digests: ``old``'s for unmoved files, fresh ones (content stored) for
        ``paths``.  A file that cannot be read as a single regular file gets no digest."""
        new = Index(now, {p: old.digests.get(p) for p in now.files})
        for path in paths:
            new.digests[path] = self._keep(ws, path, new.scan)
        return new

    def _keep(self, ws: Workspace, path: str, scan: Scan) -> str | None:
        if scan.files[path][1] > self.cap:
            return None
        try:
            with ws.open_bytes(path) as f:
                info = os.fstat(f.fileno())
                if info.st_size > self.cap or not stat.S_ISREG(info.st_mode):
                    return None
                scan.files[path] = key_of(info)  # the content is the file as it was opened
                return self._store(f)
        except (OSError, PathRejected):
            return None

    def _store(self, f: BinaryIO) -> str:
        self.objects.mkdir(parents=True, exist_ok=True)
        temp = self.objects / f".tmp-{os.getpid()}"
        digest = hashlib.sha256()
        with open(temp, "wb") as out:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        name = digest.hexdigest()
        if (self.objects / name).exists():
            temp.unlink()
        else:
            os.replace(temp, self.objects / name)
            self._unsynced.append(name)
        return name

    def save(self, index: Index) -> str:
        """Make the new objects durable, then write ``index`` durably; its digest."""
        if len(self._unsynced) > _FSYNCS:
            _sync_file_system(self.objects)
        elif self._unsynced:
            for name in self._unsynced:
                fd = os.open(self.objects / name, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            fsync_folder(self.objects)
        self._unsynced.clear()
        data = index.to_bytes()
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.index_path, data)
        fsync_folder(self.folder)  # durable now, also inside a turn's grouped folder syncs
        digest = hashlib.sha256(data).hexdigest()
        info = os.stat(self.index_path)
        _last[self.index_path] = ((info.st_ino, info.st_size, info.st_mtime_ns), index, digest)
        return digest

    def collect(self, old: Index, new: Index) -> None:
        """Remove the objects ``old`` named that ``new`` does not (``new`` is saved)."""
        keep = set(new.digests.values())
        for digest in set(old.digests.values()) - keep:
            if digest is not None:
                with contextlib.suppress(FileNotFoundError):
                    (self.objects / digest).unlink()

    def open(self, digest: str) -> BinaryIO:
        return open(self.objects / digest, "rb")


def _sync_file_system(folder: Path) -> None:
    """Make every file written in ``folder`` durable: one ``syncfs`` of its file system
        rather than an fsync per object (the first command of a session stores them all).  On a busy
    machine it waits for every file written on that file system, so it is kept for many objects."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def put_back(ws: Workspace, shadow: Shadow, digest: str) -> tuple[list[str], list[str]]:
    """Put the workspace back as the index saved with ``digest`` says (a command was stopped
    before its changes were recorded: a Ctrl-C or a kill); the paths put back, the problems."""
    before = shadow.load_exact(digest)
    if before is None:
        return [], [f"what the interrupted command changed (its snapshot {digest[:12]} is gone)"]
    now = ws.scan(skip=frozenset(before.scan.untracked), walk=frozenset(before.scan.dirs))
    moved = snapshot.moved(before.scan, now, before.racy_since())
    done: list[str] = []
    problems: list[str] = []
    for path in moved.created:
        _restore(ws, PreImage(path, None, None), done, problems)
    for path in moved.maybe_changed + moved.deleted:
        kept = before.digests.get(path)
        if kept is None:
            problems.append(f"'{path}' (not kept: larger than the cap or unreadable)")
            continue
        mode = stat.S_IMODE(before.scan.files[path][4])
        with shadow.open(kept) as stream:
            _restore(ws, PreImage(path, None, mode, stream=stream), done, problems)
    problems += ws.restore_dirs(moved.dirs_created, moved.dirs_deleted)
    return done, problems


def _restore(ws: Workspace, pre: PreImage, done: list[str], problems: list[str]) -> None:
    try:
        ws.restore(pre)
    except (OSError, PathRejected) as e:
        problems.append(f"'{pre.path}' ({getattr(e, 'strerror', None) or e})")
        return
    done.append(pre.path)
