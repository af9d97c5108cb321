"""What every framework adapter's tests share: each runs on SQLite and PostgreSQL (every
app's rows routed to one alias), and with the privacy settings off and on."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.test import override_settings

from tests.host.conftest import ALIASES
from tests.test_erasure import Everything
from warlock_sessions.tenancy import tenant_scope

#: The settings an adapter is run under: none, and encryption, redaction and tenants on.
PRIVACY = {
    "plain": {},
    "private": {
        "ENCRYPTION_KEYS": {"k1": base64.b64encode(b"k" * 32).decode()},
        "REDACT": ["card", "email"],
        "TENANT_RESOLVER": "tests.test_tenants.tenant_of",
    },
}


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> Iterator[str]:
    Everything.alias = request.param
    with override_settings(DATABASE_ROUTERS=["tests.test_erasure.Everything"]):
        yield request.param
    Everything.alias = "default"
    connections.close_all()


@pytest.fixture(params=sorted(PRIVACY))
def privacy(request: pytest.FixtureRequest) -> Iterator[str]:
    """The settings of :data:`PRIVACY`; with tenants on, the test runs in tenant acme's
    scope."""
    with override_settings(WARLOCK_SESSIONS=PRIVACY[request.param]):
        if request.param == "private":
            with tenant_scope("acme"):
                yield request.param
        else:
            yield request.param


#: A test that runs on PostgreSQL only (what it races, SQLite would refuse as locked).
ON_POSTGRES = pytest.mark.parametrize(
    "alias",
    [
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.postgres,
                pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
            ],
        )
    ],
)


def run(coroutine: Any) -> Any:
    """A coroutine run to its end from sync test code (on asgiref's loop, as a view's)."""

    async def awaited() -> Any:
        return await coroutine

    return async_to_sync(awaited)()
