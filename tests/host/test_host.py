"""Host.handle: conditional save, transactional outbox, event log, wakes, replay on conflict."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from warlock_sessions import signals
from warlock_sessions.engine import FakeClock
from warlock_sessions.errors import SessionConflictError
from warlock_sessions.host import Host
from warlock_sessions.host.commit import RecordsBesideCommitter
from warlock_sessions.host.turns import EXCLUSIVE_AFTER
from warlock_sessions.models import OutboundMessage, SessionEvent, Wake
from warlock_sessions.stores import DjangoStore, MemoryStore

from .conftest import ALIASES, echo_agent, race_agent, timer_agent

T0_MS = 1789898400000


def events_of(alias: str, session_id: str) -> list[tuple[int, str]]:
    return list(
        SessionEvent.objects.using(alias)
        .filter(session_id=session_id)
        .order_by("seq")
        .values_list("seq", "type")
    )


def test_a_turn_commits_session_outbox_events_and_wakes_together(alias: str) -> None:
    host = Host(race_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS))
    result = host.handle("s1", {"message": {"text": "x", "id": "m1"}})

    assert result.session["version"] == 1
    assert list(OutboundMessage.objects.using(alias).values_list("key", "kind", "status")) == [
        ("triagem#m1:quem:1", "ai", "delivered")
    ]
    assert list(Wake.objects.using(alias).values_list("key", "session_id", "agent", "status")) == [
        (f"silence:retomar:s1:{T0_MS}", "s1", "race", "pending")
    ]
    seqs = events_of(alias, "s1")
    assert [seq for seq, _ in seqs] == list(range(1, len(seqs) + 1))
    # the user's message first, then the bot's side
    assert [kind for _, kind in seqs] == ["message", "run_started", "outcome", "message", "turn"]
    turn_event = SessionEvent.objects.using(alias).get(session_id="s1", type="turn")
    assert turn_event.payload["version"] == 1 and turn_event.payload["input"] == {
        "kind": "message",
        "id": "m1",
    }


def test_an_ignored_input_writes_nothing(alias: str) -> None:
    host = Host(echo_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS))
    host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    before = (
        SessionEvent.objects.using(alias).count(),
        OutboundMessage.objects.using(alias).count(),
    )
    again = host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    assert (again.changed, again.code, again.session["version"]) == (False, "duplicate-input", 1)
    assert (
        SessionEvent.objects.using(alias).count(),
        OutboundMessage.objects.using(alias).count(),
    ) == before


def test_scenario_3_race_end_to_end_through_two_hosts_on_the_database(alias: str) -> None:
    """Engine-spec scenario 3: host B computes on v1 while host A commits v2; B's save conflicts,
    it reloads v2, replays m2 and commits v3 with the keys the spec gives."""
    clock = FakeClock(T0_MS)
    Host(race_agent(), DjangoStore(using=alias), clock=clock).handle(
        "s1", {"message": {"text": "x", "id": "m1"}}
    )
    clock.set(T0_MS + 86_400_000)
    a_committed = threading.Event()
    computed: list[Any] = []
    conflicts: list[tuple[int, int | None]] = []

    def hold_b_until_a_commits(
        sender: Any, session_id: str, input: Any, result: Any, **kw: Any
    ) -> None:
        if "message" in input:
            computed.append([m["key"] for m in result.messages])
            if len(computed) == 1:
                assert a_committed.wait(20)

    def record_conflict(
        sender: Any, expected_version: int, actual_version: int | None, **kw: Any
    ) -> None:
        conflicts.append((expected_version, actual_version))

    signals.turn_computed.connect(hold_b_until_a_commits)
    signals.session_conflict.connect(record_conflict)
    outcome: dict[str, Any] = {}

    def host_b() -> None:
        try:
            outcome["b"] = Host(race_agent(), DjangoStore(using=alias), clock=clock).handle(
                "s1", {"message": {"text": "sou da ACME", "id": "m2"}}
            )
        finally:
            connections.close_all()

    try:
        thread = threading.Thread(target=host_b)
        thread.start()
        while not computed:
            thread.join(0.01)
        a = Host(race_agent(), DjangoStore(using=alias), clock=clock).handle(
            "s1", {"wake": f"silence:retomar:s1:{T0_MS}"}
        )
        a_committed.set()
        thread.join(30)
    finally:
        signals.turn_computed.disconnect(hold_b_until_a_commits)
        signals.session_conflict.disconnect(record_conflict)

    assert [m["key"] for m in a.messages] == ["retomar#1789898400000:p1:1"]
    assert a.session["version"] == 2
    b = outcome["b"]
    assert conflicts == [(1, 2)]
    assert computed == [
        ["triagem#m1:quem:1.2"],
        ["triagem#m1:quem:1.2"],
    ]  # the replay mints the same keys (the step's second ask: both fields asked once)
    assert b.session["version"] == 3
    assert [(run["flowId"], run["reason"]) for run in b.ended] == [("retomar", "end")]
    assert sorted(OutboundMessage.objects.using(alias).values_list("key", flat=True)) == [
        "retomar#1789898400000:p1:1",
        "triagem#m1:quem:1",
        "triagem#m1:quem:1.2",  # the first ask and the re-ask are two messages
    ]
    assert Wake.objects.using(alias).get(key=f"silence:retomar:s1:{T0_MS}").status == "fired"
    seqs = [seq for seq, _ in events_of(alias, "s1")]
    assert seqs == list(range(1, len(seqs) + 1))


def test_after_the_retries_the_conflict_is_raised_and_nothing_is_written(alias: str) -> None:
    store = DjangoStore(using=alias)
    host = Host(echo_agent(), store, clock=FakeClock(T0_MS), max_conflict_retries=2)
    host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    attempts: list[int] = []

    def someone_else_saves_first(
        sender: Any, session_id: str, input: Any, result: Any, **kw: Any
    ) -> None:
        attempts.append(1)
        current = store.load("s1")
        store.save(current, current["version"])

    signals.turn_computed.connect(someone_else_saves_first)
    try:
        with pytest.raises(SessionConflictError):
            host.handle("s1", {"message": {"text": "de novo", "id": "m2"}})
    finally:
        signals.turn_computed.disconnect(someone_else_saves_first)
    assert len(attempts) == 3
    assert not OutboundMessage.objects.using(alias).filter(key="idle:m2").exists()
    assert (
        not SessionEvent.objects.using(alias).filter(type="turn", payload__input__id="m2").exists()
    )


@pytest.mark.parametrize("alias", [ALIASES[1]])
def test_a_turn_that_keeps_losing_is_replayed_holding_its_session_and_wins(alias: str) -> None:
    """Another process saves between each of our loads and saves; after EXCLUSIVE_AFTER losses
    the turn holds the session's row, that save waits, and ours commits within the retries."""
    store = DjangoStore(using=alias)
    host = Host(echo_agent(), store, clock=FakeClock(T0_MS), max_conflict_retries=5)
    host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    conflicts: list[int] = []
    others: list[threading.Thread] = []
    refused: list[SessionConflictError] = []

    def save_from_another_connection() -> None:
        try:
            current = store.load("s1")
            store.save(current, current["version"])
        except SessionConflictError as error:
            refused.append(error)
        finally:
            connections.close_all()

    def someone_else_saves_first(sender: Any, **kw: Any) -> None:
        other = threading.Thread(target=save_from_another_connection)
        others.append(other)
        other.start()
        other.join(0.5)  # while our turn holds the row, that save waits for our commit

    def count(sender: Any, attempt: int, **kwargs: Any) -> None:
        conflicts.append(attempt)

    signals.turn_computed.connect(someone_else_saves_first)
    signals.session_conflict.connect(count)
    try:
        second = host.handle("s1", {"message": {"text": "de novo", "id": "m2"}})
    finally:
        signals.turn_computed.disconnect(someone_else_saves_first)
        signals.session_conflict.disconnect(count)
        for other in others:
            other.join(30)
    assert conflicts == list(range(1, EXCLUSIVE_AFTER + 1))
    assert len(others) == EXCLUSIVE_AFTER + 1 and len(refused) == 1  # the held turn's rival
    assert second.session["inputs"][-1] == "m2"
    assert store.load("s1")["version"] == second.session["version"] == 2 + EXCLUSIVE_AFTER
    assert OutboundMessage.objects.using(alias).filter(key="idle:m2").count() == 1


def test_signals_fire_only_after_commit(alias: str) -> None:
    from django.db import transaction

    seen: list[str] = []

    def recorder(name: str) -> Any:
        def receive(sender: Any, **kwargs: Any) -> None:
            seen.append(name)

        return receive

    receivers = {name: recorder(name) for name in ("session_saved", "message_out", "run_started")}
    for name, receiver in receivers.items():
        getattr(signals, name).connect(receiver)
    try:
        host = Host(race_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS))
        with transaction.atomic(using=alias):
            host.handle("s1", {"message": {"text": "x", "id": "m1"}})
            assert seen == []
        assert seen == ["session_saved", "run_started", "message_out"]
    finally:
        for name, receiver in receivers.items():
            getattr(signals, name).disconnect(receiver)


class RecordsTo:
    """A database router sending every write to one alias."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def db_for_write(self, model: type, **hints: Any) -> str:
        return self.alias


def test_a_store_outside_the_database_still_gets_outbox_events_and_wakes(alias: str) -> None:
    store = MemoryStore()
    with override_settings(DATABASE_ROUTERS=[RecordsTo(alias)]):  # where the router says
        host = Host(race_agent(), store, clock=FakeClock(T0_MS))
    assert isinstance(host.committer, RecordsBesideCommitter) and host.using == alias
    host.handle("s1", {"message": {"text": "x", "id": "m1"}})
    assert OutboundMessage.objects.using(alias).filter(key="triagem#m1:quem:1").count() == 1
    assert Wake.objects.using(alias).count() == 1 and len(events_of(alias, "s1")) == 5


def test_a_rescheduled_silence_replaces_the_old_wake(alias: str) -> None:
    clock = FakeClock(T0_MS)
    host = Host(race_agent(), DjangoStore(using=alias), clock=clock)
    host.handle("s1", {"message": {"text": "x", "id": "m1"}})
    clock.advance("10m")
    host.handle("s1", {"message": {"text": "Ana", "id": "m2"}})
    assert list(Wake.objects.using(alias).values_list("key", flat=True)) == [
        f"silence:retomar:s1:{T0_MS + 600_000}"
    ]


@pytest.mark.parametrize(
    "bad", [{}, {"message": {"text": "a"}, "wake": "k"}, {"mesage": {"text": "a"}}, "oi"]
)
@pytest.mark.django_db
def test_a_bad_input_is_refused_before_anything_runs(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"exactly one of|an input is an object"):
        Host(echo_agent(), DjangoStore()).handle("s1", bad)


def test_message_and_wake_keys_are_unique_per_session_not_globally(alias: str) -> None:
    host = Host(race_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS))
    for session_id in ("a", "b"):
        host.handle(session_id, {"message": {"text": "x", "id": "m1"}})
    assert sorted(OutboundMessage.objects.using(alias).values_list("session_id", "key")) == [
        ("a", "triagem#m1:quem:1"),
        ("b", "triagem#m1:quem:1"),
    ]
    assert Wake.objects.using(alias).count() == 2


failures: list[str] = []


def flaky_deliver(message: OutboundMessage) -> None:
    """Fails the first time it sees a message, then delivers it."""
    if message.key not in failures:
        failures.append(message.key)
        raise ConnectionError("channel down")


def test_a_configured_deliverer_is_retried_with_backoff(alias: str) -> None:
    from datetime import timedelta

    from django.test import override_settings
    from django.utils import timezone

    from warlock_sessions.host import deliver_due_messages

    failures.clear()
    settings = {"DELIVER": "tests.host.test_host.flaky_deliver", "STORE_OPTIONS": {"using": alias}}
    with override_settings(WARLOCK_SESSIONS=settings):
        Host(echo_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS)).handle(
            "s1", {"message": {"text": "oi", "id": "m1"}}
        )
        message = OutboundMessage.objects.using(alias).get()
        assert message.status == "pending"
        assert deliver_due_messages(using=alias) == 1
        message.refresh_from_db()
        assert (message.status, message.attempts, message.last_error) == (
            "pending",
            1,
            "ConnectionError: channel down",
        )
        assert deliver_due_messages(using=alias) == 0  # backing off
        OutboundMessage.objects.using(alias).update(
            lease_until=timezone.now() - timedelta(seconds=1)
        )
        assert deliver_due_messages(using=alias) == 1
        message.refresh_from_db()
        assert message.status == "delivered" and message.delivered_at is not None


class LoadCountingStore(DjangoStore):
    """The real DjangoStore, counting the loads the host asks of it."""

    loads = 0

    def load(self, session_id: str) -> Any:
        self.loads += 1
        return super().load(session_id)


def test_handle_returns_the_events_it_logged(alias: str) -> None:
    host = Host(race_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS))
    first = host.handle("s1", {"message": {"text": "x", "id": "m1"}})
    second = host.handle("s1", {"message": {"text": "y", "id": "m2"}})
    logged = list(
        SessionEvent.objects.using(alias)
        .filter(session_id="s1")
        .order_by("seq")
        .values("seq", "type", "payload")
    )
    assert first.events + second.events == logged
    assert first.events[-1]["type"] == "turn" and second.events[0]["seq"] == 6
    assert second.events[0]["payload"] == {"role": "user", "text": "y", "id": "m2"}
    again = host.handle("s1", {"message": {"text": "y", "id": "m2"}})  # a resend
    assert again.events == []  # a resend changes nothing and logs nothing


def test_a_current_last_saved_session_spares_the_load(alias: str) -> None:
    store = LoadCountingStore(using=alias)
    host = Host(echo_agent(), store, clock=FakeClock(T0_MS))
    first = host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    second = host.handle("s1", {"message": {"text": "oi", "id": "m2"}}, last_saved=first.session)
    assert store.loads == 1
    assert second.session["version"] == 2 and second.session["inputs"][-2:] == ["m1", "m2"]
    assert second.session == store.load("s1")


def test_a_stale_last_saved_session_is_refused_and_replayed_without_using_a_retry(
    alias: str,
) -> None:
    store = LoadCountingStore(using=alias)
    host = Host(echo_agent(), store, clock=FakeClock(T0_MS), max_conflict_retries=0)
    first = host.handle("s1", {"message": {"text": "oi", "id": "m1"}})
    Host(echo_agent(), DjangoStore(using=alias), clock=FakeClock(T0_MS)).handle(
        "s1", {"message": {"text": "outra aba", "id": "m2"}}
    )
    conflicts: list[int] = []

    def count(sender: Any, attempt: int, **kwargs: Any) -> None:
        conflicts.append(attempt)

    signals.session_conflict.connect(count)
    try:
        third = host.handle("s1", {"message": {"text": "oi", "id": "m3"}}, last_saved=first.session)
    finally:
        signals.session_conflict.disconnect(count)
    assert conflicts == [1] and store.loads == 2
    assert third.session["version"] == 3 and third.session["inputs"][-3:] == ["m1", "m2", "m3"]
    assert OutboundMessage.objects.using(alias).filter(key="idle:m3").count() == 1


def test_a_turn_that_changes_nothing_on_a_stale_copy_is_computed_again_from_the_store(
    alias: str,
) -> None:
    """A stale copy does not know the wake a later turn scheduled, so the wake looks unknown and
    changes nothing; no conditional save would catch that, so the host asks the store."""
    clock = FakeClock(T0_MS)
    host = Host(timer_agent(), DjangoStore(using=alias), clock=clock)
    first = host.handle("t1", {"start": {"flow": "f0", "key": "a"}})
    later = host.handle("t1", {"start": {"flow": "lembrete", "key": "b"}})
    wake = next(item["key"] for item in later.schedule if "lembrete" in item["key"])
    clock.advance("3s")

    fired = host.handle("t1", {"wake": wake}, last_saved=first.session)

    assert fired.changed and [m["text"] for m in fired.messages] == ["Hora do lembrete!"]
    assert fired.session["version"] == 3
