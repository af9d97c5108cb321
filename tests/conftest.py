import pytest

from tests.services import REQUIRE_SERVICES, postgres_unreachable, redis_unreachable

pytest_plugins = ["warlock_sessions.testing.fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    if REQUIRE_SERVICES:
        down = [reason for reason in (postgres_unreachable(), redis_unreachable()) if reason]
        if down:
            pytest.exit("WARLOCK_REQUIRE_SERVICES=1 but: " + "; ".join(down), returncode=3)
