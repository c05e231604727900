"""One folder of JSON files kept by id: the one base the session store and the queue store
stand on.

Each file is ``{id}.json`` (an id is 8 hex digits), one pydantic model, written atomically
(:func:`codingagent.fsio.atomic_write`) and read back validated; the ids are listed most
recently written first (:func:`.summaries.id_files`), a unique prefix or ``latest`` names one,
and each has a lock file beside it (``.{id}.lock``) that one process holds at a time."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel

from codingagent.fsio import atomic_write
from codingagent.records.summaries import id_files
from codingagent.state import SessionError, read_json_model

if TYPE_CHECKING:
    from filelock import FileLock

_Model = TypeVar("_Model", bound=BaseModel)


class Shelf(Generic[_Model]):
    """The ``{id}.json`` files of ``folder``, each a ``model``; ``noun`` names one for people
    ("session"), ``first`` says how to make the first one, ``busy`` what a process holding one's
    lock does with it ("run")."""

    def __init__(self, folder: Path, model: type[_Model], noun: str, first: str, busy: str) -> None:
        self.folder = folder
        self._model = model
        self._noun = noun
        self._first = first
        self._busy = busy

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def new_id(self) -> str:
        """An id no file has yet."""
        while True:
            key = secrets.token_hex(4)
            if not self.path(key).exists():
                return key

    def _write(self, key: str, text: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)  # the user may have removed it
        atomic_write(self.path(key), text)

    def _read(self, key: str) -> _Model:
        missing = f"No {self._noun} '{key}' in {self.folder}"
        return read_json_model(self.path(key), self._model, missing, f"a valid {self._noun} file")

    def ids(self) -> list[str]:
        """Every id, most recently written first."""
        return [path.stem for path in id_files(self.folder)]

    def resolve(self, ref: str | None) -> str:
        """``latest``, ``None`` or a unique prefix of an id: the id."""
        ids = self.ids()
        if not ids:
            raise SessionError(f"No {self._noun}s yet in {self.folder}; run {self._first}")
        if ref in (None, "", "latest"):
            return ids[0]
        matches = [i for i in ids if i.startswith(ref.lower())]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionError(f"No {self._noun} matches '{ref}'")
        raise SessionError(f"'{ref}' matches several {self._noun}s: {', '.join(sorted(matches))}")

    def lock(self, key: str) -> FileLock:
        """The lock of ``key``'s file; take it with :meth:`hold`, one process at a time."""
        from filelock import FileLock  # imported here: `sessions` and `--help` never lock

        return FileLock(self.folder / f".{key}.lock")

    def hold(self, key: str) -> FileLock:
        """The lock of ``key``, held; a SessionError when another process holds it."""
        import filelock

        lock = self.lock(key)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            raise SessionError(
                f"{self._noun.capitalize()} {key} is already being {self._busy} by another "
                f"codingagent process (lock file {lock.lock_file}); stop that one first"
            ) from None
        return lock

    @contextmanager
    def held_if_free(self, key: str) -> Iterator[bool]:
        """Hold ``key``'s lock for the block if no one else does; says whether it does."""
        try:
            lock = self.hold(key)
        except SessionError:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()
