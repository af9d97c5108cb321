from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from tests import pgvector
from tests.partitioned import partition_hot_tables, partitioned
from tests.services import REQUIRE_SERVICES, postgres_unreachable, redis_unreachable

pytest_plugins = ["warlock_sessions.testing.fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    if REQUIRE_SERVICES:
        down = [reason for reason in (postgres_unreachable(), redis_unreachable()) if reason]
        if down:
            pytest.exit("WARLOCK_REQUIRE_SERVICES=1 but: " + "; ".join(down), returncode=3)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """While PostgreSQL does not answer, a test run on it (its ``postgres`` parameter) is
    skipped with the reason, as the README says, and a test that only lists the ``postgres``
    database beside the others (a module's marker, for its other parameters) runs without
    it, rather than both erroring in pytest-django's set-up for a database the settings lack."""
    missing = postgres_unreachable()
    if missing is None:
        return
    for item in items:
        marker = item.get_closest_marker("django_db")
        databases = marker.kwargs.get("databases") if marker else None
        if marker is None or not isinstance(databases, list | tuple) or "postgres" not in databases:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "postgres" in map(str, params.values()):
            item.add_marker(pytest.mark.skip(reason=missing))
            continue
        others = [name for name in databases if name != "postgres"]
        item.add_marker(
            pytest.mark.django_db(*marker.args, **{**marker.kwargs, "databases": others}),
            append=False,
        )


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Each test starts with Django's cache empty: what DRF's throttles and the new visitors
    of an address (``MAX_NEW_VISITORS_PER_ADDRESS``) counted belongs to the test that did."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings: None, request: pytest.FixtureRequest
) -> None:
    """The ``pgvector`` alias's own server, started before the test databases are made when
    a collected test asks for it (tests/pgvector.py)."""
    from django.conf import settings

    database = settings.DATABASES.get(pgvector.ALIAS)
    # Each xdist worker collects every test, so each starts a server of its own (a second).
    if database is not None and any(
        marker.kwargs.get("databases") == "__all__"
        or pgvector.ALIAS in (marker.kwargs.get("databases") or ())
        for item in request.session.items
        for marker in item.iter_markers("django_db")
    ):
        pgvector.start(database)


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
