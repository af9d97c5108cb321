"""Every cache store the conformance suite runs on: memory (plain and bounded), file, Redis,
and the Django database on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

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
    else:
        from warlock_sessions.cache import DjangoCacheStore
        from warlock_sessions.cache.db import scope_vectors

        scope_vectors.clear()
        alias = "postgres" if backend == "django-postgres" else "default"
        yield lambda: DjangoCacheStore(using=alias)
        scope_vectors.clear()


@pytest.fixture(params=CACHE_BACKENDS)
def make_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CacheFactory]:
    yield from cache_factory(request.param, tmp_path)
