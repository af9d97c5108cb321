"""Erasing a person while PostgreSQL is down: the command says so in a sentence, with no
traceback, and deletes nothing; run again once the server is back, it finishes the job."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT, Deployment

pytestmark = pytest.mark.faults


def erase(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "warlock_erase", *args],
        cwd=ROOT,
        env=deployment.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_erase_during_an_outage_says_so_and_the_next_one_finishes(
    deployment: Deployment,
) -> None:
    deployment.sql(
        "INSERT INTO warlock_sessions_sessionevent (session_id, seq, type, payload, created_at) "
        "VALUES ('erase-me', 1, 'message', '{}', now())"
    )
    deployment.postgres.stop()
    try:
        refused = erase(deployment, "--session", "erase-me")
    finally:
        deployment.postgres.start()
    assert refused.returncode == 1, refused.stderr
    assert "the database is unavailable" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert deployment.sql(
        "SELECT count(*) FROM warlock_sessions_sessionevent WHERE session_id = 'erase-me'"
    ) == [(1,)]

    done = erase(deployment, "--session", "erase-me")
    assert done.returncode == 0, done.stderr
    assert "session events: deleted 1" in done.stdout
    assert deployment.sql(
        "SELECT count(*) FROM warlock_sessions_sessionevent WHERE session_id = 'erase-me'"
    ) == [(0,)]


def test_a_visitor_looked_up_during_an_outage_is_a_sentence_not_a_traceback(
    deployment: Deployment,
) -> None:
    """``--visitor`` asks whether the key owns anything before it erases: that question
    meets the outage first."""
    deployment.postgres.stop()
    try:
        refused = erase(deployment, "--visitor", "some-visitor-key", "--dry-run")
    finally:
        deployment.postgres.start()
    assert refused.returncode == 1, refused.stderr
    assert "the database is unavailable" in refused.stderr
    assert "Traceback" not in refused.stderr
