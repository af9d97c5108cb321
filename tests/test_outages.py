"""Which errors are outages, and how many lines one outage writes."""

from __future__ import annotations

import logging
import sqlite3

import psycopg
import pytest
from django.db import OperationalError
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from warlock_sessions.backends.outages import OutageLog, unavailable
from warlock_sessions.errors import ServiceUnavailableError


def wrapped(cause: BaseException) -> OperationalError:
    """As Django's database wrapper raises a driver's error."""
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "error",
    [
        wrapped(psycopg.OperationalError("connection refused")),
        wrapped(PoolTimeout("couldn't get a connection after 3.00 sec")),
        wrapped(pg_errors.AdminShutdown("terminating connection")),
        wrapped(pg_errors.TooManyConnections("too many clients")),
        wrapped(pg_errors.ConnectionFailure("the connection is lost")),
        wrapped(sqlite3.OperationalError("database is locked")),
        psycopg.OperationalError("server closed the connection unexpectedly"),
        ServiceUnavailableError("Redis", "down"),
    ],
)
def test_outages_are_told_apart(error: BaseException) -> None:
    assert unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        wrapped(sqlite3.OperationalError("no such table: warlock_sessions_session")),
        wrapped(pg_errors.QueryCanceled("canceling statement due to statement timeout")),
        wrapped(pg_errors.LockNotAvailable("could not obtain lock")),
        wrapped(pg_errors.ProgramLimitExceeded("index row size exceeds maximum")),
        ConnectionError("the SMS gateway is down"),  # a deliverer's, not ours
        ValueError("a bug"),
    ],
)
def test_the_statements_own_failures_and_bugs_are_not_outages(error: BaseException) -> None:
    assert not unavailable(error)


def test_an_outage_is_a_few_lines_however_calls_fail_and_succeed_in_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(logging.getLogger("warlock_sessions.test"), "the test service")
    with caplog.at_level(logging.WARNING, "warlock_sessions.test"):
        for _ in range(500):  # a pool only just full: one call fails, the next one works
            outage.failed(OperationalError("couldn't get a connection"))
            outage.succeeded()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("the test service failed")
    assert lines[1].startswith("the test service works again after 1 failures")
    assert caplog.records[0].exc_info is not None  # the first with its traceback
