"""FileStore: one JSON file per session in a directory, safe against crashes and other processes."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..backends.files import PrivateDirectory, file_name, make_directories, read_file, replace_file
from ..engine.session import Session
from ..errors import InvalidSessionError
from .base import (
    Store,
    check_stored_version,
)


class FileStore(PrivateDirectory, Store):
    """Each session is ``<directory>/<encoded id>.json``, the blob as JSON.

    * The id is encoded like JavaScript's ``encodeURIComponent`` (``/``, ``\\``, NUL and ``%``
      always escaped), so every name is one component inside ``directory`` and no id can reach
      outside it; ``..`` becomes ``...json``.
    * A save takes an exclusive ``flock`` on a per-session lock file, reads the stored
      version, writes a temp file (``O_EXCL|O_NOFOLLOW``, ``fsync``) and renames it over the
      old one, then ``fsync``\\ s the directory: a crash leaves the old or the new file whole,
      and two processes on one host never both win a version.
    * Directories it creates get ``dir_mode`` (0700), files ``file_mode`` (0600); existing
      directories are never chmod-ed. Lock files (``.<name>.lock``) stay behind on delete.
    """

    def _name(self, session_id: str) -> str:
        return file_name(session_id, "session id")

    @contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        lock_path = self.directory / f".{name}.lock"
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, self.file_mode)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                # Only a lock on the file still at that path excludes the other holders.
                if os.path.exists(lock_path) and os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                    yield
                    return
            finally:
                os.close(fd)

    def _read_file(self, session_id: str, name: str) -> bytes | None:
        try:
            return read_file(self.directory / name)
        except OSError as error:
            raise InvalidSessionError(
                session_id,
                f"its file cannot be opened ({error.strerror})",  # no path
            ) from None

    #: The version is inside the blob: a sealed blob is bound to its session alone.
    binds_version = False

    def _read(self, session_id: str) -> tuple[bytes, None] | None:
        content = self._read_file(session_id, self._name(session_id))
        return None if content is None else (content, None)  # the blob carries its version

    def _write(self, session: Session, expected: int, text: str) -> None:
        session_id = session["id"]
        name = self._name(session_id)
        make_directories(self.directory, self.dir_mode)
        with self._locked(name):
            stored = self._read_file(session_id, name)
            version = None if stored is None else self.decoded(stored, session_id, None)["version"]
            check_stored_version(session_id, expected, version)
            replace_file(self.directory, name, text.encode(), self.file_mode)

    def _remove(self, session_id: str) -> bool:
        name = self._name(session_id)
        if not self.directory.exists():
            return False
        with self._locked(name):
            try:
                os.unlink(self.directory / name)
            except FileNotFoundError:
                return False
        return True
