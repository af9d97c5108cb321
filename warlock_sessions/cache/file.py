"""FileCacheStore: one JSON file per cached answer, a directory per scope (stdlib, POSIX)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..backends.files import PrivateDirectory, make_directories, read_file, replace_file
from .base import CacheStore, Entry, decoded, hashed, live, rank


class FileCacheStore(PrivateDirectory, CacheStore):
    """``<directory>/<scope hash>/<namespace hash>/<key>.json``, written as the file snapshot
    store writes (a private temp file renamed over the old one; ``dir_mode`` 0700 and
    ``file_mode`` 0600, refused if group or others could write). A similarity lookup reads
    the files of its own scope and namespace only. One host."""

    def _folder(self, namespace: str, scope: str) -> Path:
        return self.directory / hashed(scope) / hashed(namespace)

    def _get(self, namespace: str, scope: str, key: str) -> Entry | None:
        return decoded(read_file(self._folder(namespace, scope) / f"{hashed(key)}.json"))

    def _put(self, entry: Entry) -> None:
        folder = self._folder(entry["namespace"], entry["scope"])
        make_directories(folder, self.dir_mode)
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False).encode()
        replace_file(folder, f"{hashed(entry['key'])}.json", text, self.file_mode)

    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        entries = [entry for _, entry in self._files(self._folder(namespace, scope))]
        return rank(
            vector, ((entry["vector"], entry) for entry in entries if live(entry, at)), top_k
        )

    def _files(self, folder: Path) -> Iterator[tuple[Path, Entry]]:
        if not folder.is_dir():
            return
        for found in os.scandir(folder):
            if found.is_file(follow_symlinks=False) and found.name.endswith(".json"):
                entry = decoded(read_file(Path(found.path)))
                if entry is not None:
                    yield Path(found.path), entry

    def _folders(self) -> Iterator[Path]:
        """Every namespace folder of every scope."""
        if not self.directory.is_dir():
            return
        for scope in os.scandir(self.directory):
            if scope.is_dir(follow_symlinks=False):
                for namespace in os.scandir(scope.path):
                    if namespace.is_dir(follow_symlinks=False):
                        yield Path(namespace.path)

    def _remove_scope(self, scope: str) -> int:
        folder = self.directory / hashed(scope)
        count = sum(1 for namespace in _subfolders(folder) for _ in self._files(namespace))
        shutil.rmtree(folder, ignore_errors=True)
        return count

    def _remove_namespace(self, namespace: str) -> int:
        count = 0
        for folder in self._folders():
            if folder.name == hashed(namespace):
                count += sum(1 for _ in self._files(folder))
                shutil.rmtree(folder, ignore_errors=True)
        return count

    def _remove_expired(self, at: float) -> int:
        count = 0
        for folder in list(self._folders()):
            for path, entry in list(self._files(folder)):
                if not live(entry, at):
                    path.unlink(missing_ok=True)
                    count += 1
        return count


def _subfolders(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        for found in os.scandir(folder):
            if found.is_dir(follow_symlinks=False):
                yield Path(found.path)
