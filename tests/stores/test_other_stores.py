"""Backend details outside the shared contract: SQLite file modes and table names, Redis TTL."""

from __future__ import annotations

import os
import stat
import uuid

import pytest

from tests.services import REDIS_URL
from warlock_sessions.stores import SqliteStore
from warlock_sessions.testing import session_blob

from .conftest import needs_redis


def test_sqlite_creates_a_private_database_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = SqliteStore(tmp_path / "new" / "db.sqlite3", table="bot_sessions")
    store.save(session_blob("s1"), 0)
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "db.sqlite3").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700


def test_sqlite_refuses_an_unsafe_table_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="invalid table name 'x; DROP'"):
        SqliteStore(tmp_path / "db.sqlite3", table="x; DROP")


def test_sqlite_in_memory_needs_no_file() -> None:
    store = SqliteStore(":memory:")
    store.save(session_blob("s1"), 0)
    assert store.load("s1") is not None


@needs_redis
def test_redis_ttl_is_pushed_out_by_every_save() -> None:
    import redis

    from warlock_sessions.stores import RedisStore

    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"warlock-test:{uuid.uuid4().hex}:"
    store = RedisStore(client, prefix=prefix, ttl=60)
    try:
        store.save(session_blob("s1"), 0)
        client.pexpire(f"{prefix}s1", 1000)
        store.save(session_blob("s1"), 1)
        assert 59_000 < client.pttl(f"{prefix}s1") <= 60_000
    finally:
        client.delete(f"{prefix}s1")


def test_redis_needs_exactly_one_of_client_or_url() -> None:
    from warlock_sessions.stores import RedisStore

    with pytest.raises(ValueError, match="exactly one of client= or url="):
        RedisStore()
