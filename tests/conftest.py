from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from tests.partitioned import partition_hot_tables, partitioned
from tests.services import REQUIRE_SERVICES, postgres_unreachable, redis_unreachable

pytest_plugins = ["warlock_sessions.testing.fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    if REQUIRE_SERVICES:
        down = [reason for reason in (postgres_unreachable(), redis_unreachable()) if reason]
        if down:
            pytest.exit("WARLOCK_REQUIRE_SERVICES=1 but: " + "; ".join(down), returncode=3)


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Each test starts with Django's cache empty: what DRF's throttles and the new visitors
    of an address (``MAX_NEW_VISITORS_PER_ADDRESS``) counted belongs to the test that did."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """With ``WARLOCK_TEST_PARTITIONED=1``, the PostgreSQL test database's hot tables are
    made anew hash-partitioned by their distribution column (tests/partitioned.py)."""
    if partitioned():
        if "postgres" not in connections.databases:
            pytest.exit("WARLOCK_TEST_PARTITIONED=1 needs PostgreSQL", returncode=3)
        with django_db_blocker.unblock():
            partition_hot_tables(connections["postgres"])
    yield
