"""The management commands other test modules do not already drive."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from warlock_sessions.models import Session
from warlock_sessions.stores import DjangoStore
from warlock_sessions.testing.factories import SessionFactory

pytestmark = pytest.mark.django_db

LEGACY = {
    "data": {"nome": "Ana"},
    "currentFlow": {"id": "qualificacao-v3"},
    "currentStep": {"id": "q1"},
    "signals": {"triggers": {"promo": {"lastTriggeredAt": "2026-09-20T10:00:00.000Z"}}},
}


def test_migrate_sessions_lifts_3x_rows_and_leaves_v4_rows_alone() -> None:
    SessionFactory(id="old", version=7, blob=json.dumps(LEGACY))
    SessionFactory(id="new")
    out = StringIO()

    call_command(
        "warlock_migrate_sessions", "--flow-map", "qualificacao-v3=qualificacao", stdout=out
    )

    assert "migrated 1 session(s); 1 already v4; 0 failed" in out.getvalue()
    session = DjangoStore().load("old")
    assert session is not None and session["version"] == 8
    assert [(r["id"], r["status"], r["stepId"]) for r in session["runs"]] == [
        ("qualificacao#legacy", "asking", "q1")
    ]
    assert set(session["claims"]) == {"qualificacao:old:", "promo:old:"}
    assert Session.objects.get(id="old").run_flows == " qualificacao "


def test_a_dry_run_changes_nothing_and_an_unreadable_row_fails_the_command() -> None:
    SessionFactory(id="old", blob=json.dumps(LEGACY))
    SessionFactory(id="junk", blob="[1, 2]")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="1 session"):
        call_command("warlock_migrate_sessions", "--dry-run", stdout=out, stderr=err)
    assert "would migrate 1 session(s)" in out.getvalue()
    assert '"junk" is unreadable' in err.getvalue()
    assert json.loads(Session.objects.get(id="old").blob) == LEGACY


def test_a_bad_flow_map_is_refused() -> None:
    with pytest.raises(CommandError, match="OLD=NEW"):
        call_command("warlock_migrate_sessions", "--flow-map", "nope")
