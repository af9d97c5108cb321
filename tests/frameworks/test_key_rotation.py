"""``warlock_rotate_keys`` seals again what the framework adapters keep sealed: LangGraph's
memory items and ADK's state rows (both were left under the old key, and stopped opening once
it was removed)."""

from __future__ import annotations

import base64
import os
from io import StringIO

import pytest

pytest.importorskip("google.adk")
pytest.importorskip("langgraph.store.memory")
from django.core.management import call_command
from django.test import override_settings
from google.adk.events import Event, EventActions

from tests.frameworks.conftest import run
from warlock_sessions.frameworks.adk import WarlockSessionService
from warlock_sessions.frameworks.langgraph import WarlockStore
from warlock_sessions.models import AgentState, MemoryItem

K1, K2 = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))


def keys(*pairs: tuple[str, str]) -> override_settings:
    return override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": dict(pairs)})


async def keep_state(service: WarlockSessionService) -> None:
    session = await service.create_session(
        app_name="shop", user_id="ana", session_id="s1", state={"user:lang": "pt"}
    )
    await service.append_event(
        session,
        Event(author="user", invocation_id="i1", actions=EventActions(state_delta={"name": "Ana"})),
    )


def test_memory_items_and_agent_states_are_sealed_again(alias: str) -> None:
    with keys(("k1", K1)):
        WarlockStore(using=alias).put(("notes",), "a", {"text": "Ana likes olives"})
        run(keep_state(WarlockSessionService(using=alias)))
    out = StringIO()
    with keys(("k2", K2), ("k1", K1)):
        call_command("warlock_rotate_keys", database=alias, servers_ready=True, stdout=out)
    assert "memory items: sealed 1 of 1" in out.getvalue()
    assert "agent states: sealed 2 of 2" in out.getvalue()
    stored = [str(row.value) for row in MemoryItem.objects.using(alias)]
    stored += [str(row.state) for row in AgentState.objects.using(alias)]
    assert stored and all("wse1.k2." in value for value in stored)
    with keys(("k2", K2)):  # the old key can go
        item = WarlockStore(using=alias).get(("notes",), "a")
        assert item is not None and item.value == {"text": "Ana likes olives"}
        service = WarlockSessionService(using=alias)
        session = run(service.get_session(app_name="shop", user_id="ana", session_id="s1"))
        assert session is not None
        assert session.state == {"name": "Ana", "user:lang": "pt"}
