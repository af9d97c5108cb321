"""What the backends that write their own SQL share: a table name checked before it is written
into a statement, and a private SQLite file."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from .files import create_private_file

SQL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_sql_name(name: str, what: str = "table name") -> str:
    if not isinstance(name, str) or not SQL_NAME.match(name):
        raise ValueError(f"invalid {what} {name!r}. Allowed: [A-Za-z_][A-Za-z0-9_]*.")
    return name


def connect_private(path: str, timeout: float) -> sqlite3.Connection:
    """A connection (autocommit, shareable across threads) to the SQLite file at ``path``,
    created 0600 in directories created 0700 before SQLite opens it; journal sidecars already
    there are made 0600 too (new ones take the file's mode). ``":memory:"`` creates nothing."""
    if path != ":memory:":
        create_private_file(Path(path))
        for suffix in ("-journal", "-wal", "-shm"):
            sidecar = Path(path + suffix)
            if sidecar.exists() and not sidecar.is_symlink():
                os.chmod(sidecar, 0o600)
    connection = sqlite3.connect(
        path, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    connection.execute(f"PRAGMA busy_timeout = {round(timeout * 1000)}")
    return connection
