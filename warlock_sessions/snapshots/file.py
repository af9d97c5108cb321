"""FileSnapshotStore: one JSON file per snapshot in a directory (stdlib, POSIX)."""

from __future__ import annotations

import os

from ..backends.files import (
    PrivateDirectory,
    file_name,
    key_of,
    make_directories,
    read_file,
    replace_file,
)
from ..errors import InvalidSnapshotError, SnapshotCorruptError
from .base import SnapshotStore


class FileSnapshotStore(PrivateDirectory, SnapshotStore):
    """Each snapshot is ``<directory>/<encodeURIComponent(key)>.json``.

    * A key can only name a file directly inside ``directory``: ``/``, ``\\``, NUL and ``%``
      are always escaped, so ``../x`` is ``..%2Fx.json``.
    * A save writes a temp file (``O_EXCL|O_NOFOLLOW``, ``file_mode``, ``fsync``), renames it
      over the old one and ``fsync``\\ s the directory: a crash leaves the old or the new file
      whole. Loads refuse symlinks. Temp files a crash left behind are never listed.
    * New directories get ``dir_mode`` (0700), files ``file_mode`` (0600); existing directories
      keep their modes. Modes that let group or others write are refused.
    * One host; the last rename wins (no conditional saves).
    """

    @staticmethod
    def _name(key: str) -> str:
        try:
            return file_name(key, "snapshot key")
        except ValueError as error:
            raise InvalidSnapshotError(str(error)) from None

    def _read(self, key: str) -> tuple[bytes, int] | None:
        try:
            content = read_file(self.directory / self._name(key))
        except OSError as error:
            raise SnapshotCorruptError(key, f"cannot be opened ({error})") from None
        return None if content is None else (content, 0)

    def _write(self, key: str, text: str, expected: int | None) -> None:
        make_directories(self.directory, self.dir_mode)
        replace_file(self.directory, self._name(key), text.encode(), self.file_mode)

    def _remove(self, key: str) -> bool:
        try:
            (self.directory / self._name(key)).unlink()
        except FileNotFoundError:
            return False
        return True

    def _keys(self, prefix: str) -> list[str]:
        if not self.directory.is_dir():
            return []
        return [
            key
            for entry in os.scandir(self.directory)
            if entry.is_file(follow_symlinks=False) and (key := key_of(entry.name)) is not None
        ]
