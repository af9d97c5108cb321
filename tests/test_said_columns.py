"""One registry of the columns that hold what people said (``models.said``): every text, JSON
and binary column of every model is in it or named as exempt; rotation seals again exactly
its sealed columns, erasure removes every model in it, and each sealed column's place is the
one ``encryption`` binds it to."""

from __future__ import annotations

import json

import pytest
from django.apps import apps
from django.db import connections
from django.db import models as django_models
from django.test import override_settings

from tests.host.conftest import ALIASES
from tests.test_encryption import chat_and_keep, sealed  # noqa: F401 (a fixture)
from warlock_sessions import encryption
from warlock_sessions.erasure import Traces, _tables
from warlock_sessions.models.said import EXEMPT, SAID, said_models, sealed_columns
from warlock_sessions.rotation import TABLES

TEXT_COLUMNS = (
    django_models.CharField,
    django_models.TextField,
    django_models.JSONField,
    django_models.BinaryField,
)


def text_columns() -> set[str]:
    found = set()
    for model in apps.get_app_config("warlock_sessions").get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, TEXT_COLUMNS) and field.model is model:
                found.add(f"{model.__name__}.{field.name}")
    return found


def test_every_text_column_of_every_model_is_said_or_exempt_and_not_both() -> None:
    said = {entry.label for entry in SAID}
    columns = text_columns()
    assert sorted(columns - said - set(EXEMPT)) == []  # a new column: name it in models.said
    assert sorted((said | set(EXEMPT)) - columns) == []  # a column gone: take it out there
    assert sorted(said & set(EXEMPT)) == []
    assert all(why for why in EXEMPT.values())


def test_rotation_seals_again_exactly_the_sealed_columns() -> None:
    assert [table.model for table in TABLES] == [
        model for model in said_models() if sealed_columns(model)
    ]


def test_erasure_removes_every_model_that_holds_what_people_said() -> None:
    traces = Traces(["s"], ["c"], [], threads=["t"], memories=[1])
    erased = {rows.model for _, batches in _tables(traces) for rows in batches}
    assert [model.__name__ for model in said_models() if model not in erased] == []


def test_each_sealed_column_is_bound_to_the_place_encryption_names() -> None:
    places = {
        encryption.session_place("s", 1)[0],
        encryption.event_place("s", 1)[0],
        encryption.outbox_place("s", "k")[0],
        encryption.outbox_place("s", "k", "payload")[0],
        encryption.pending_place("c")[0],
        encryption.message_place("c", 0)[0],
        encryption.snapshot_place("k")[0],
        encryption.state_place({"orchestrator_name": "o", "session_id": "s", "turn_index": 0})[0],
        encryption.cache_place("n", "s", "k")[0],
        encryption.graph_place("checkpoint", "t", "")[0],
        encryption.graph_place("blob", "t", "")[0],
        encryption.graph_place("write", "t", "")[0],
        encryption.memory_place("n", "k")[0],
        encryption.agent_state_place("session", "a", "u", "s")[0],
    }
    assert {entry.place for entry in SAID if entry.sealed} == places
    assert all(entry.place == "" for entry in SAID if not entry.sealed)


@pytest.mark.parametrize("alias", ALIASES)
def test_every_sealed_column_a_chat_writes_is_sealed(alias: str, sealed: None) -> None:  # noqa: F811
    chat_and_keep(alias)
    written = 0
    for entry in SAID:
        if not entry.sealed:
            continue
        rows = entry.model._default_manager.using(alias).exclude(
            **{f"{entry.column}__isnull": True}
        )
        for value in rows.values_list(entry.column, flat=True):
            written += 1
            assert "wse1.k1." in str(value), f"{entry.label} holds {str(value)[:60]!r}"
    assert written > 10
    for entry in SAID:  # a searched column would show what a sealed one hides: kept empty
        if entry.searched:
            values = entry.model._default_manager.using(alias).values_list(entry.column, flat=True)
            assert set(values) == {""}, entry.label
    connections.close_all()


@pytest.mark.parametrize("alias", ALIASES)
def test_every_redacted_column_a_chat_writes_holds_no_email(alias: str) -> None:
    with override_settings(
        WARLOCK_SESSIONS={
            "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
            "REDACT": ["email"],
        }
    ):
        chat_and_keep(alias)
    written = 0
    for entry in SAID:
        if not entry.redacted:
            continue
        values = entry.model._default_manager.using(alias).values_list(entry.column, flat=True)
        for value in values:
            written += 1
            if entry.kept:  # what redaction leaves on purpose (a flow's collected data)
                value = {k: v for k, v in json.loads(value).items() if k != entry.kept}
            assert "ann.marlowe@example.com" not in str(value), entry.label
    assert written > 10
    connections.close_all()
