"""What the stores that write files share (session and snapshot stores alike): private
permission modes, directory creation, key-to-file-name encoding, crash-safe replacement and
private SQLite files. Stdlib only."""

from __future__ import annotations

import os
import re
import secrets
from contextlib import suppress
from pathlib import Path
from urllib.parse import quote, unquote

#: Longest encoded file name (plus ``.json``): with the temp file's ``.<name>.<pid>.<hex>.tmp``
#: around it, still below every common filesystem's 255 bytes.
MAX_FILE_NAME_BYTES = 220
SQL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def make_directories(directory: Path, mode: int) -> None:
    """Create ``directory`` and its missing parents with ``mode``; directories that exist keep
    theirs, and one another process makes meanwhile is fine."""
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for created in reversed(missing):
        with suppress(FileExistsError):
            os.mkdir(created, mode)


def check_mode(mode: object, name: str, *, owner_needs: int) -> int:
    """A permission mode that keeps sessions private: no group/other write, owner access."""
    if type(mode) is not int or not 0 <= mode <= 0o777:
        raise ValueError(f"{name} must be an int between 0o000 and 0o777, not {mode!r}")
    if mode & 0o022:
        raise ValueError(f"{name} {mode:#o} lets group or others write; use at most 0o755/0o644")
    if mode & owner_needs != owner_needs:
        raise ValueError(f"{name} {mode:#o} must give the owner {owner_needs:#o}")
    return mode


def file_name(key: str, what: str) -> str:
    """``key`` as one file name: encoded like JavaScript's ``encodeURIComponent`` (``/``,
    ``\\``, NUL and ``%`` always escaped), so it can only name a file inside the directory
    and no two keys share a name (``..`` becomes ``...json``)."""
    name = quote(key, safe="!*'()") + ".json"
    if len(name.encode()) > MAX_FILE_NAME_BYTES:
        raise ValueError(
            f"{what} {key[:40]!r}… encodes to a file name over {MAX_FILE_NAME_BYTES} bytes"
        )
    return name


def key_of(name: str) -> str | None:
    """The key a file name encodes, or ``None`` for a file no key would be named (temp and
    lock files end otherwise; a hand-made name does not encode back to itself)."""
    if not name.endswith(".json"):
        return None
    key = unquote(name[: -len(".json")])
    return key if quote(key, safe="!*'()") + ".json" == name else None


def read_file(path: Path) -> bytes | None:
    """The file's bytes (``None`` when it is missing), refusing to follow a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def replace_file(directory: Path, name: str, content: bytes, file_mode: int) -> None:
    """Write ``content`` as ``directory/name`` so a crash leaves the old or the new file whole:
    a temp file (``O_EXCL|O_NOFOLLOW``, exactly ``file_mode``, ``fsync``) renamed over it,
    then the directory ``fsync``-ed. On failure the temp file is removed."""
    temp = directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, file_mode)
    try:
        try:
            os.write(fd, content)
            os.fchmod(fd, file_mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, directory / name)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    directory_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)


def create_private_file(path: Path) -> None:
    """Create missing parent directories 0700 and the file itself 0600 (existing ones keep
    their modes). A symlink at ``path``, dangling or not, is refused: the file would be
    created wherever it points."""
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link; give the database file itself")
    make_directories(path.parent, 0o700)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))


class PrivateDirectory:
    """A store in ``directory``, creating directories with ``dir_mode`` and files with
    ``file_mode`` (checked: never writable by group or others, always usable by the owner)."""

    def __init__(
        self, directory: str | os.PathLike[str], *, dir_mode: int = 0o700, file_mode: int = 0o600
    ) -> None:
        self.directory = Path(directory)
        self.dir_mode = check_mode(dir_mode, "dir_mode", owner_needs=0o700)
        self.file_mode = check_mode(file_mode, "file_mode", owner_needs=0o600)
