"""The ``make_store`` fixture: one parameter per backend, each a factory of stores that share
storage, so a test can build a second store (or one per forked process) on the same data."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.services import REDIS_URL, postgres_unreachable, redis_keys, redis_unreachable
from warlock_sessions.stores import FileStore, MemoryStore, SqliteStore, Store

StoreFactory = Callable[[], Store]

django_db = pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
needs_postgres = pytest.mark.skipif(
    postgres_unreachable() is not None, reason=postgres_unreachable() or ""
)
needs_redis = pytest.mark.skipif(redis_unreachable() is not None, reason=redis_unreachable() or "")

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("file", id="file"),
    pytest.param("redis", id="redis", marks=[needs_redis]),
    pytest.param(
        "django-sqlite", id="django-sqlite", marks=[pytest.mark.django_db(transaction=True)]
    ),
    pytest.param("django-postgres", id="django-postgres", marks=[needs_postgres, django_db]),
]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path) -> Iterator[StoreFactory]:  # type: ignore[no-untyped-def]
    backend = request.param
    if backend == "memory":
        shared = MemoryStore()
        yield lambda: shared
    elif backend == "sqlite":
        yield lambda: SqliteStore(tmp_path / "sessions.sqlite3")
    elif backend == "file":
        yield lambda: FileStore(tmp_path / "sessions")
    elif backend == "redis":
        from warlock_sessions.stores import RedisStore

        with redis_keys() as (_, prefix):
            yield lambda: RedisStore(url=REDIS_URL, prefix=prefix)
    else:
        from warlock_sessions.stores import DjangoStore

        alias = "postgres" if backend == "django-postgres" else "default"
        yield lambda: DjangoStore(using=alias)
