"""Running the system checks in tests."""

from __future__ import annotations

from django.core import checks


def warlock_check_ids(
    ignored: tuple[str, ...] = ("warlock_sessions.W004", "warlock_sessions.W010"),
    *,
    deploy: bool = True,
) -> list[str]:
    """The ids our checks report, deployment checks included, sorted (by default without
    W004 and W010: the test settings use the in-memory channel layer on purpose, and the
    live servers of the browser tests serve static files themselves)."""
    return sorted(
        message.id
        for message in checks.run_checks(include_deployment_checks=deploy)
        if message.id.startswith("warlock_sessions") and message.id not in ignored
    )
