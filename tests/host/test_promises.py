"""The host's promises: every message of every committed turn reaches the outbox once; an input
is applied once however late it is resent; wakes fire with the agent that scheduled them and
are retired when no longer wanted; records are never lost behind a save."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from example_project.demo.agents import booking_agent
from tests.services import redis_unreachable
from warlock_sessions.engine import Agent, FakeClock
from warlock_sessions.errors import InvalidInputError, UnnamedAgentError
from warlock_sessions.host import Host
from warlock_sessions.models import AppliedInput, OutboundMessage, Session, SessionEvent, Wake
from warlock_sessions.stores import DjangoStore, MemoryStore

from .conftest import echo_agent

T0_MS = 1789898400000
BOOKING_WORDS = ["book", "Ana Souza", "ana@example.com", "2030-05-02", "no", "yes", "hello", "?"]


def _outbox_matches_every_committed_message(alias: str, session_id: str, committed: list) -> None:
    keys = Counter(
        OutboundMessage.objects.using(alias)
        .filter(session_id=session_id)
        .values_list("key", flat=True)
    )
    assert set(keys.values()) <= {1}
    assert sorted(keys) == sorted(m["key"] for m in committed)


@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(BOOKING_WORDS), min_size=1, max_size=14),
    resend=st.lists(st.integers(min_value=0, max_value=13), max_size=3),
)
def test_the_outbox_holds_every_message_every_committed_turn_returned_once(
    words: list[str], resend: list[int]
) -> None:
    session_id = f"p-{abs(hash((tuple(words), tuple(resend))))}"
    host = Host(booking_agent(), DjangoStore(), clock=FakeClock(T0_MS))
    committed: list[dict[str, Any]] = []
    inputs = [(word, f"m{index}") for index, word in enumerate(words)]
    inputs += [inputs[index % len(inputs)] for index in resend]  # resends change nothing
    for text, message_id in inputs:
        result = host.handle(session_id, {"message": {"text": text, "id": message_id}})
        host.clock.advance(1000)
        if result.changed:
            committed += result.messages
    _outbox_matches_every_committed_message("default", session_id, committed)


@pytest.mark.django_db(transaction=True)
def test_the_demo_booking_queues_every_bot_message() -> None:
    host = Host(booking_agent(), DjangoStore(), clock=FakeClock(T0_MS))
    said: list[str] = []
    for index, text in enumerate(
        ["hi", "book", "Ana Souza", "ana@example.com", "2030-05-02 at 10am"]
    ):
        said += [
            m["text"]
            for m in host.handle("b1", {"message": {"text": text, "id": f"m{index}"}}).messages
        ]
        host.clock.advance(1000)
    assert "Thanks, Ana Souza! What's your e-mail address?" in said
    queued = list(OutboundMessage.objects.filter(session_id="b1").values_list("text", flat=True))
    assert sorted(queued) == sorted(said)


@pytest.mark.django_db(transaction=True)
def test_a_message_resent_after_fifty_others_is_refused() -> None:
    host = Host(echo_agent(), DjangoStore())
    first = host.handle("late", {"message": {"text": "hi", "id": "first"}})
    for index in range(60):
        host.handle("late", {"message": {"text": "hi", "id": f"m{index}"}})
    assert "first" not in host.store.load("late")["inputs"]  # out of the blob's window
    again = host.handle("late", {"message": {"text": "hi", "id": "first"}})
    assert (again.changed, again.code) == (False, "duplicate-input")
    assert again.session["version"] == first.session["version"] + 60
    assert OutboundMessage.objects.filter(session_id="late", key="idle:first").count() == 1
    assert AppliedInput.objects.filter(session_id="late").count() == 61


@pytest.mark.django_db(transaction=True)
def test_an_event_resent_late_is_refused_too() -> None:
    host = Host(booking_agent(), DjangoStore())
    host.handle("ev", {"event": {"name": "discount", "key": "d1"}})
    for index in range(55):
        host.handle("ev", {"message": {"text": "hello", "id": f"m{index}"}})
    again = host.handle("ev", {"event": {"name": "discount", "key": "d1"}})
    assert again.code == "duplicate-input"
    offers = OutboundMessage.objects.filter(session_id="ev", text__startswith="Good news")
    assert offers.count() == 1


@pytest.mark.skipif(redis_unreachable() is not None, reason=redis_unreachable() or "")
@pytest.mark.django_db(transaction=True)
def test_a_store_outside_the_database_refuses_late_resends_and_keeps_records() -> None:
    from tests.services import REDIS_URL
    from warlock_sessions.stores import RedisStore

    store = RedisStore(url=REDIS_URL, prefix="test-promises:")
    store.delete("r1")
    host = Host(echo_agent(), store)
    host.handle("r1", {"message": {"text": "hi", "id": "first"}})
    for index in range(55):
        host.handle("r1", {"message": {"text": "hi", "id": f"m{index}"}})
    again = host.handle("r1", {"message": {"text": "hi", "id": "first"}})
    assert again.code == "duplicate-input"
    assert store.load("r1")["version"] == 56
    assert SessionEvent.objects.filter(session_id="r1", type="turn").count() == 56
    store.delete("r1")


def test_an_unnamed_agent_cannot_be_hosted() -> None:
    with pytest.raises(UnnamedAgentError, match="named agent"):
        Host(Agent([], idle={"prompt": "ok"}), MemoryStore())


AGENTS = {
    "AGENTS": {
        "timer": "tests.host.conftest.timer_agent",
        "echo": "tests.host.conftest.echo_agent",
    },
    "DEFAULT_AGENT": "echo",
}


@pytest.mark.django_db(transaction=True)
@override_settings(WARLOCK_SESSIONS=AGENTS)
def test_a_wake_recorded_without_an_agent_fails_loudly_instead_of_using_the_default() -> None:
    from warlock_sessions.host.worker import fire_wake

    Host("timer", DjangoStore()).handle("w1", {"start": {"flow": "lembrete", "key": "k"}})
    wake = Wake.objects.get(session_id="w1")
    wake.agent = ""
    wake.save()
    fire_wake(wake)
    wake.refresh_from_db()
    assert wake.status == "pending" and wake.attempts == 1
    assert "AgentNotConfiguredError" in wake.last_error
    assert not OutboundMessage.objects.filter(session_id="w1").exists()


@pytest.mark.django_db(transaction=True)
@override_settings(WARLOCK_SESSIONS=AGENTS)
def test_sessions_a_host_creates_name_its_agent() -> None:
    Host(echo_agent(), DjangoStore()).handle("named", {"message": {"text": "hi"}})
    Host("timer").handle("named2", {"start": {"flow": "lembrete", "key": "k"}})
    assert dict(Session.objects.values_list("id", "agent")) == {"named": "echo", "named2": "timer"}


@pytest.mark.django_db(transaction=True)
def test_a_finished_booking_leaves_no_reminder_pending() -> None:
    host = Host(booking_agent(), DjangoStore(), clock=FakeClock(T0_MS))
    for index, text in enumerate(["book", "Ana Souza", "ana@example.com", "2030-05-02 at 10am"]):
        host.handle("done", {"message": {"text": text, "id": f"m{index}"}})
        host.clock.advance(1000)
        assert Wake.objects.filter(session_id="done", status="pending").count() == 1
    finished = host.handle("done", {"message": {"text": "yes", "id": "m9"}})
    assert "Booked!" in finished.messages[-1]["text"]
    assert not Wake.objects.filter(session_id="done", status="pending").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "bad",
    [
        {"event": {"name": "discount", "key": "k", "payload": {"n": float("inf")}}},
        {
            "start": {
                "flow": "booking",
                "key": "k",
                "input": {
                    "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                },
            }
        },
        {"message": {"text": "hi \ud800", "id": "m1"}},
        {"message": {"text": "hi", "id": "m1", "at": "2026-02-30T00:00:00Z"}},
    ],
)
def test_input_no_store_can_keep_is_refused_before_anything_is_saved(bad: dict) -> None:
    with pytest.raises(InvalidInputError):
        Host(booking_agent(), DjangoStore()).handle("bad", bad)
    assert not Session.objects.exists() and not SessionEvent.objects.exists()


def test_a_late_resend_inside_the_callers_transaction_leaves_it_usable(alias: str) -> None:
    from django.db import transaction

    host = Host(echo_agent(), DjangoStore(using=alias))
    host.handle("outer", {"message": {"text": "hi", "id": "first"}})
    for index in range(55):
        host.handle("outer", {"message": {"text": "hi", "id": f"m{index}"}})
    with transaction.atomic(using=alias):
        again = host.handle("outer", {"message": {"text": "hi", "id": "first"}})
        after = host.handle("outer", {"message": {"text": "hi", "id": "next"}})
    assert again.code == "duplicate-input"
    assert after.changed and host.store.load("outer")["version"] == 57


@pytest.mark.django_db(transaction=True)
def test_a_session_gone_from_its_store_starts_anew_with_the_same_message_ids() -> None:
    """A store's expiry (a RedisStore ttl) removes the session without forgetting it: what was
    applied to the old conversation does not refuse the new one's first message."""
    host = Host(echo_agent(), DjangoStore())
    host.handle("expired", {"message": {"text": "hi", "id": "m1"}})
    host.store.delete("expired")
    again = host.handle("expired", {"message": {"text": "hi", "id": "m1"}})
    assert again.changed and again.session["version"] == 1


@pytest.mark.django_db(transaction=True)
def test_deleting_through_the_store_forgets_the_session_too() -> None:
    store = DjangoStore()
    Host(booking_agent(), store).handle("del", {"message": {"text": "book", "id": "m1"}})
    assert store.delete("del")
    for model in (SessionEvent, OutboundMessage, Wake, AppliedInput):
        assert not model.objects.filter(session_id="del").exists(), model
