"""Every cache store the conformance suite runs on: memory (plain and bounded), file, Redis,
the Django database on SQLite and PostgreSQL, and PostgreSQL with pgvector's index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pgvector import ALIAS as PGVECTOR
from tests.pgvector import needs_pgvector, pgvector_db
from tests.services import redis_keys
from tests.snapshots.conftest import needs_postgres, needs_redis, postgres_db

CacheFactory = Callable[[], Any]

CACHE_BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("lru", id="lru"),
    pytest.param("file", id="file"),
    pytest.param("redis", id="redis", marks=[needs_redis]),
    pytest.param(
        "django-sqlite", id="django-sqlite", marks=[pytest.mark.django_db(transaction=True)]
    ),
    pytest.param("django-postgres", id="django-postgres", marks=[needs_postgres, postgres_db]),
    pytest.param("pgvector", id="pgvector", marks=[needs_pgvector, pgvector_db]),
]


def cache_factory(backend: str, tmp_path: Path) -> Iterator[CacheFactory]:
    from warlock_sessions.cache import FileCacheStore, MemoryCacheStore

    if backend in ("memory", "lru"):
        shared = MemoryCacheStore(max_entries=1000 if backend == "lru" else None)
        yield lambda: shared
    elif backend == "file":
        yield lambda: FileCacheStore(tmp_path / "cache")
    elif backend == "redis":
        from warlock_sessions.cache import RedisCacheStore

        with redis_keys("cache:") as (client, prefix):
            yield lambda: RedisCacheStore(client, prefix=prefix)
    elif backend == "pgvector":
        from warlock_sessions.cache.db import scope_vectors

        scope_vectors.clear()  # a question of another length is ranked from these
        yield lambda: indexed_store(3)
        scope_vectors.clear()
    else:
        from warlock_sessions.cache import DjangoCacheStore
        from warlock_sessions.cache.db import scope_vectors

        scope_vectors.clear()
        alias = "postgres" if backend == "django-postgres" else "default"
        yield lambda: DjangoCacheStore(using=alias)
        scope_vectors.clear()


def indexed_store(dimensions: int, **options: Any) -> Any:
    """A ``PgVectorCacheStore`` of ``dimensions`` on the pgvector database, its column and
    index made for that length (a column of another length, an earlier test's, is dropped)."""
    from django.core.management import call_command
    from django.db import connections

    from warlock_sessions.cache.pgvector import PgVectorCacheStore, column_dimensions

    found = column_dimensions(PGVECTOR)
    if found is not None and found != dimensions:
        with connections[PGVECTOR].cursor() as cursor:
            cursor.execute("ALTER TABLE warlock_cache_entries DROP COLUMN embedding")
    call_command("warlock_cache_index", dimensions=dimensions, database=PGVECTOR, verbosity=0)
    return PgVectorCacheStore(using=PGVECTOR, dimensions=dimensions, **options)


@pytest.fixture(params=CACHE_BACKENDS)
def make_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CacheFactory]:
    yield from cache_factory(request.param, tmp_path)
