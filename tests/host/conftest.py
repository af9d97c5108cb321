"""Fixtures for host tests: the database aliases to run on, and agents built for them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from tests.flows import RACE_FIELDS, RACE_FLOWS
from tests.services import postgres_unreachable
from warlock_sessions.engine import Agent, Model, Spoken
from warlock_sessions.providers import RuleModel

needs_postgres = pytest.mark.skipif(
    postgres_unreachable() is not None, reason=postgres_unreachable() or ""
)
ALIASES = [
    pytest.param("default", id="sqlite", marks=pytest.mark.django_db(transaction=True)),
    pytest.param(
        "postgres",
        id="postgres",
        marks=[
            needs_postgres,
            pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
        ],
    ),
]


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param
    connections.close_all()


class RoutingOnlyModel(RuleModel):
    """Routes like the RuleModel but, as the booking scenario of tests/engine/test_scenarios.py
    scripts it, speaks without extracting any field."""

    def speak(self, request: object) -> Spoken:
        return Spoken(message="ok", llm_calls=1)


def race_agent() -> Agent:
    return Agent(RACE_FLOWS, fields=RACE_FIELDS, model=RoutingOnlyModel(), name="race")


def echo_agent(model: Model | None = None, **options: Any) -> Agent:
    """Answers every message with the idle speaker: one reply per message, key idle:<id>."""
    return Agent([], idle={"prompt": "ok"}, model=model or RuleModel(), name="echo", **options)


class ThreadNotingModel(RuleModel):
    """The RuleModel, noting which thread each reply was spoken on and the history it got."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []
        self.histories: list[Any] = []

    def speak(self, request: Any) -> Spoken:
        self.threads.append(threading.get_ident())
        self.histories.append(request.history)
        return super().speak(request)


def timer_agent() -> Agent:
    """A real timer: wait 2 s (an if in between, so it is not an inline delay), then say."""
    return Agent(
        [
            {
                "id": "lembrete",
                "steps": [
                    {"id": "espera", "wait": "2s"},
                    {"id": "agora", "if": {"known": []}},
                    {"id": "aviso", "say": "Hora do lembrete!"},
                ],
            }
        ]
        + [
            {"id": f"f{i}", "steps": [{"id": "w", "wait": "1h"}, {"id": "s", "say": f"done {i}"}]}
            for i in range(10)
        ],
        model=RuleModel(),
        name="timer",
    )
