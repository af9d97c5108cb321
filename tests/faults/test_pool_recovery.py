"""The pool of the ``warlock_sessions.backends.postgresql`` engine after a long outage: back as
soon as the server is, not after psycopg_pool's doubling retry delay (which, after 20 s down,
kept it empty for 9 to 11 s more on this machine)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from warlock_sessions.backends.postgresql.base import RECONNECT_TIMEOUT, DatabaseWrapper

from .private_services import PrivatePostgres

pytestmark = pytest.mark.faults


def wrapper(postgres: PrivatePostgres, alias: str, pool_options: dict[str, Any]) -> Any:
    """The engine's connection wrapper for ``alias`` on the private cluster, as Django makes it."""
    return DatabaseWrapper(
        {
            "ENGINE": "warlock_sessions.backends.postgresql",
            "NAME": "app",
            "USER": "postgres",
            "PASSWORD": "",
            "HOST": "127.0.0.1",
            "PORT": postgres.port,
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": False,
            "AUTOCOMMIT": True,
            "ATOMIC_REQUESTS": False,
            "TIME_ZONE": None,
            "OPTIONS": {"pool": pool_options, "connect_timeout": 2},
        },
        alias,
    )


@pytest.fixture
def pool(postgres: PrivatePostgres) -> Iterator[Any]:
    database = wrapper(postgres, "recovery", {"min_size": 2, "max_size": 4, "timeout": 2})
    pool = database.pool
    pool.open(wait=True)
    yield pool
    database.close_pool()


def select_one(pool: Any) -> bool:
    try:
        with pool.connection() as connection:
            connection.execute("SELECT 1")
    except Exception:
        return False
    return True


def test_the_pool_comes_back_with_the_server_after_a_long_outage(
    postgres: PrivatePostgres, pool: Any
) -> None:
    assert pool.reconnect_timeout == RECONNECT_TIMEOUT
    postgres.stop()
    try:
        down = time.monotonic()
        while time.monotonic() - down < 20:  # requests all along, as a server's are
            assert not select_one(pool)
            time.sleep(0.5)
    finally:
        postgres.start()
    back = time.monotonic()
    while not select_one(pool):
        assert time.monotonic() - back < 6, "the pool stayed empty"  # 5 s retries, a wait
        time.sleep(0.1)


def test_a_pool_given_its_own_reconnect_timeout_keeps_it(postgres: PrivatePostgres) -> None:
    assert wrapper(postgres, "own", {"reconnect_timeout": 60}).pool.reconnect_timeout == 60
