"""What the stores that write files share: private permission modes and directory creation
(stdlib only, any platform)."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


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
