"""The ``make_snapshots`` fixture: one parameter per snapshot backend (PostgreSQL and Redis for
real), each a factory of stores sharing one storage."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.services import POSTGRES_URL, postgres_unreachable, redis_keys, redis_unreachable
from warlock_sessions.snapshots import (
    FileSnapshotStore,
    MemorySnapshotStore,
    SnapshotStore,
    SqliteSnapshotStore,
)

SnapshotFactory = Callable[[], SnapshotStore]

needs_postgres = pytest.mark.skipif(
    postgres_unreachable() is not None, reason=postgres_unreachable() or ""
)
needs_redis = pytest.mark.skipif(redis_unreachable() is not None, reason=redis_unreachable() or "")
postgres_db = pytest.mark.django_db(transaction=True, databases=["default", "postgres"])

SNAPSHOT_BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("file", id="file"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=[needs_postgres]),
    pytest.param("redis", id="redis", marks=[needs_redis]),
    pytest.param(
        "django-sqlite", id="django-sqlite", marks=[pytest.mark.django_db(transaction=True)]
    ),
    pytest.param("django-postgres", id="django-postgres", marks=[needs_postgres, postgres_db]),
]


def snapshot_factory(backend: str, tmp_path: Path) -> Iterator[SnapshotFactory]:
    if backend == "memory":
        shared = MemorySnapshotStore()
        yield lambda: shared
    elif backend == "file":
        yield lambda: FileSnapshotStore(tmp_path / "snapshots")
    elif backend == "sqlite":
        yield lambda: SqliteSnapshotStore(tmp_path / "snapshots.sqlite3")
    elif backend == "postgres":
        yield from _postgres()
    elif backend == "redis":
        yield from _redis()
    else:
        from warlock_sessions.snapshots import DjangoSnapshotStore

        alias = "postgres" if backend == "django-postgres" else "default"
        yield lambda: DjangoSnapshotStore(using=alias)


def _postgres() -> Iterator[SnapshotFactory]:
    from warlock_sessions.snapshots import PostgresSnapshotStore

    table = f"snapshots_{uuid.uuid4().hex[:12]}"
    connection = psycopg.connect(POSTGRES_URL, autocommit=True)
    store = PostgresSnapshotStore(connection, table=table)
    connection.execute(store.schema())
    try:
        yield lambda: PostgresSnapshotStore(connection, table=table)
    finally:
        connection.execute(f"DROP TABLE {table}")
        connection.close()


def _redis() -> Iterator[SnapshotFactory]:
    from warlock_sessions.snapshots import RedisSnapshotStore

    with redis_keys("snap:") as (client, prefix):
        yield lambda: RedisSnapshotStore(client, prefix=prefix)


@pytest.fixture(params=SNAPSHOT_BACKENDS)
def make_snapshots(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SnapshotFactory]:
    yield from snapshot_factory(request.param, tmp_path)
