"""The API tests run against the demo's booking agent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
}


@pytest.fixture(autouse=True)
def booking_agent() -> Iterator[None]:
    with override_settings(WARLOCK_SESSIONS=SETTINGS):
        yield
