"""Where the test PostgreSQL and Redis are, and whether they answer.

Service-backed tests skip with the reason when a service is unreachable, unless
``WARLOCK_REQUIRE_SERVICES=1`` (set by ``.ci/run``), where the run fails instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import psycopg

from example_project.databases import postgres_settings

POSTGRES_URL = os.environ.get(
    "WARLOCK_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("WARLOCK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
REQUIRE_SERVICES = os.environ.get("WARLOCK_REQUIRE_SERVICES") == "1"


@cache
def postgres_unreachable() -> str | None:
    """Why PostgreSQL cannot be used, or None when it answers."""
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error as error:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {error}".strip()
    return None


@cache
def redis_unreachable() -> str | None:
    """Why Redis cannot be used, or None when it answers."""
    try:
        import redis
    except ImportError:
        return "the redis client is not installed (pip install 'warlock-sessions[redis]')"
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        return f"Redis at {REDIS_URL} is unreachable: {error}"
    return None


def postgres_database_settings() -> dict[str, object]:
    """The alias as docs/stores.md recommends it: parameters bound server-side."""
    return {**postgres_settings(POSTGRES_URL), "OPTIONS": {"server_side_binding": True}}


@contextmanager
def redis_keys(suffix: str = "") -> Iterator[tuple[Any, str]]:
    """A client of the test Redis and a key prefix of the test's own; every key under the
    prefix is deleted afterwards."""
    import redis

    prefix = f"warlock-test:{uuid.uuid4().hex}:{suffix}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        yield client, prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
