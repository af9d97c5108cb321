"""``warlock_worker`` against a database that restarts, and killed mid-batch."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from warlock_sessions.models import bucket_of

from .conftest import Deployment, wait_for

pytestmark = pytest.mark.faults


def add_due_wakes(deployment: Deployment, count: int, prefix: str) -> None:
    """Wakes on sessions that do not exist: each fires as a ``stale-wake`` turn, which is all
    a worker needs to take it, fire it and mark it fired."""
    now = datetime.now(UTC)
    with psycopg.connect(deployment.postgres.url("app"), autocommit=True) as connection:
        connection.cursor().executemany(
            "INSERT INTO warlock_sessions_wake (key, session_id, bucket, attempts, last_error,"
            " created_at, agent, due_at, status) VALUES (%s, %s, %s, 0, '', %s, 'booking', %s,"
            " 'pending')",
            [
                (f"{prefix}-{i}", session, bucket_of(session), now, now - timedelta(seconds=1))
                for i, session in enumerate(f"{prefix}-session-{i}" for i in range(count))
            ],
        )


def fired(deployment: Deployment, prefix: str) -> int:
    rows = deployment.sql(
        "SELECT count(*) FROM warlock_sessions_wake WHERE key LIKE %s AND status = 'fired'",
        (prefix + "-%",),
    )
    return int(rows[0][0])


def test_the_worker_rides_through_a_database_restart_and_an_outage(deployment: Deployment):
    worker = deployment.worker("--poll-interval", "0.1")
    add_due_wakes(deployment, 2, "before")
    assert wait_for(lambda: fired(deployment, "before") == 2, 20), worker.output()

    deployment.postgres.terminate_backends()
    deployment.postgres.restart()
    add_due_wakes(deployment, 2, "restart")
    assert wait_for(lambda: fired(deployment, "restart") == 2, 20), worker.output()

    deployment.postgres.stop()
    wait_for(lambda: False, 3)  # a few passes fail meanwhile
    assert worker.alive, worker.output()
    deployment.postgres.start()
    add_due_wakes(deployment, 2, "outage")
    assert wait_for(lambda: fired(deployment, "outage") == 2, 40), worker.output()
    assert worker.alive
    # Each outage is two lines of the worker's (it began, it is over), not one a pass; the
    # restart's and the stop's make four.
    assert worker.output().count("the worker's pass") <= 4, worker.output()
    assert worker.stop() == 0


def test_a_worker_killed_mid_batch_strands_at_most_the_wake_in_hand(deployment: Deployment):
    add_due_wakes(deployment, 400, "batch")
    first = deployment.worker("--poll-interval", "0.1")
    assert wait_for(lambda: fired(deployment, "batch") >= 3, 30, interval=0.02), first.output()
    first.stop(signal.SIGKILL)
    assert fired(deployment, "batch") < 300, "the batch was done before the kill: test nothing"
    second = deployment.worker("--poll-interval", "0.1")
    # Only the wake the killed worker had in hand waits for its lease (60 s) to run out.
    assert wait_for(lambda: fired(deployment, "batch") >= 399, 30), second.output()
