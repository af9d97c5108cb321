"""After commit, the host pushes the new events to the session's channel-layer group."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.test import override_settings

from warlock_sessions.engine import FakeClock
from warlock_sessions.host import Host, group_name
from warlock_sessions.stores import DjangoStore

from .conftest import race_agent

LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.mark.django_db(transaction=True)
@override_settings(CHANNEL_LAYERS=LAYERS)
def test_committed_events_reach_the_session_group_in_seq_order() -> None:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name("s1"), channel)
    host = Host(race_agent(), DjangoStore(), clock=FakeClock(1789898400000))

    host.handle("s1", {"message": {"text": "x", "id": "m1"}})
    pushed = async_to_sync(layer.receive)(channel)

    assert pushed["type"] == "warlock.events" and pushed["session_id"] == "s1"
    events = pushed["events"]
    assert [event["seq"] for event in events] == [1, 2, 3, 4, 5]
    assert [event["type"] for event in events] == [
        "message", "run_started", "outcome", "message", "turn",
    ]  # fmt: skip
    assert events[0] == {"seq": 1, "type": "message", "role": "user", "text": "x", "id": "m1"}
    message = events[3]
    assert (message["role"], message["key"], message["kind"], message["after_ms"]) == (
        "bot", "triagem#m1:quem:1", "ai", 0,
    )  # fmt: skip
    assert events[4]["version"] == 1 and events[4]["changed"] is True


def test_group_names_are_valid_for_any_session_id() -> None:
    name = group_name("../weird id/ção" * 20)
    assert len(name) < 100 and name.replace("_", "").isalnum()
    assert group_name("a") != group_name("b")
