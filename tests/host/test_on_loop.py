"""Host.ahandle on the event loop: a turn that cannot block is saved on a loop connection, with
no worker thread, and everything else still goes through one (PostgreSQL)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import DatabaseError, OperationalError, connections
from django.test import override_settings

from warlock_sessions import signals
from warlock_sessions.backends.loop_connections import loop_connection
from warlock_sessions.claims import aclaim
from warlock_sessions.conf import SettingError
from warlock_sessions.errors import QuotaExceededError
from warlock_sessions.host import Host
from warlock_sessions.models import SessionEvent
from warlock_sessions.stores import DjangoStore

from .conftest import ThreadNotingModel, echo_agent, needs_postgres

pytestmark = [
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]
ALIAS = "postgres"


class BlockingModel(ThreadNotingModel):
    """As a model reaching the network would say of itself."""

    blocking = True


def noting_host(
    model: ThreadNotingModel | None = None, store: DjangoStore | None = None, **options: Any
) -> tuple[ThreadNotingModel, Host]:
    """A host of the echo agent on PostgreSQL whose model notes the threads it spoke on."""
    model = model or ThreadNotingModel()
    return model, Host(echo_agent(model, **options), store or DjangoStore(using=ALIAS))


def logged(session_id: str) -> list[dict[str, Any]]:
    try:
        return [
            {"seq": row.seq, "type": row.type, "payload": row.payload}
            for row in SessionEvent.objects.using(ALIAS).filter(session_id=session_id)
        ]
    finally:
        connections[ALIAS].close()


@pytest.fixture(autouse=True)
def close_connections() -> Iterator[None]:
    yield
    connections.close_all()


async def two_turns(host: Host, session_id: str = "s1") -> tuple[Any, Any]:
    first = await host.ahandle(session_id, {"message": {"text": "oi", "id": "m1"}})
    second = await host.ahandle(
        session_id, {"message": {"text": "oi", "id": "m2"}}, last_saved=first.session
    )
    return first, second


@pytest.mark.asyncio
async def test_a_turn_that_cannot_block_runs_on_the_event_loop() -> None:
    model, host = noting_host()

    first, second = await two_turns(host)
    third = await host.ahandle(
        "s1", {"message": {"text": "oi", "id": "m3"}}, history=["earlier"], last_saved=None
    )

    assert model.threads == [threading.get_ident()] * 3
    assert model.histories[-1] == ["earlier"]  # turn options reach the turn on the loop too
    assert third.session["version"] == 3
    assert first.session["version"] == 1 and second.session["version"] == 2
    assert [message["key"] for message in second.messages] == ["idle:m2"]
    assert first.events + second.events + third.events == await sync_to_async(logged)("s1")
    assert third.session == await sync_to_async(host.store.load)("s1")


@contextmanager
def a_receiver_listening() -> Iterator[None]:
    def receiver(**kwargs: Any) -> None:
        pass

    signals.session_saved.connect(receiver, weak=False)
    try:
        yield
    finally:
        signals.session_saved.disconnect(receiver)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "why",
    ["model may block", "agent runs its own code", "a receiver listens", "no loop connections"],
)
async def test_a_turn_that_may_block_goes_through_a_worker_thread(why: str) -> None:
    actions = {"anotar": lambda params, ctx: None} if why == "agent runs its own code" else None
    noting = BlockingModel() if why == "model may block" else None
    model, host = noting_host(noting, actions=actions)
    listening = a_receiver_listening() if why == "a receiver listens" else nullcontext()
    limit = 0 if why == "no loop connections" else 4
    with listening, override_settings(WARLOCK_SESSIONS={"LOOP_CONNECTIONS": limit}):
        first, second = await two_turns(host)

    assert threading.get_ident() not in model.threads
    assert second.session["version"] == 2
    assert first.events + second.events == await sync_to_async(logged)("s1")


@pytest.mark.asyncio
async def test_a_stale_copy_on_the_loop_is_replayed_in_a_thread() -> None:
    model, host = noting_host()
    first = await host.ahandle("s1", {"message": {"text": "oi", "id": "m1"}})
    elsewhere = await host.ahandle("s1", {"message": {"text": "oi", "id": "m2"}})

    stale = await host.ahandle(
        "s1", {"message": {"text": "oi", "id": "m3"}}, last_saved=first.session
    )

    loop_thread = threading.get_ident()
    assert model.threads[2] == loop_thread and model.threads[3] != loop_thread
    assert elsewhere.session["version"] == 2 and stale.session["version"] == 3
    assert stale.session["inputs"][-3:] == ["m1", "m2", "m3"]
    events = await sync_to_async(logged)("s1")
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert stale.events == events[-len(stale.events) :]


class LoadTogetherStore(DjangoStore):
    """The real DjangoStore, holding each load on the loop until ``expected`` turns have
    loaded: they all start from the same version, and all but one lose the race."""

    def __init__(self, expected: int) -> None:
        super().__init__(using=ALIAS)
        self.waiting = expected
        self.all_loaded = asyncio.Event()

    async def aload(self, connection: Any, session_id: str) -> Any:
        session = await super().aload(connection, session_id)
        self.waiting -= 1
        if self.waiting == 0:
            self.all_loaded.set()
        await self.all_loaded.wait()
        return session


@pytest.fixture
def as_if_two_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turns of one session in one process queue on a lock; two processes share none."""
    monkeypatch.setattr(
        "warlock_sessions.host.turns.session_lock", lambda session_id: asyncio.Lock()
    )


@pytest.mark.asyncio
async def test_turns_of_one_session_in_one_process_queue_instead_of_conflicting() -> None:
    _, host = noting_host()
    conflicts: list[int] = []

    def note(**kwargs: Any) -> None:
        conflicts.append(kwargs["attempt"])

    signals.session_conflict.connect(note, weak=False)
    try:
        results = await asyncio.gather(
            *(host.ahandle("s1", {"message": {"text": "oi", "id": f"m{i}"}}) for i in range(6))
        )
    finally:
        signals.session_conflict.disconnect(note)
    assert sorted(result.session["version"] for result in results) == [1, 2, 3, 4, 5, 6]
    assert conflicts == []


@pytest.mark.asyncio
@pytest.mark.usefixtures("as_if_two_processes")
async def test_first_turns_racing_on_the_loop_both_land() -> None:
    model, host = noting_host(store=LoadTogetherStore(expected=2))

    results = await asyncio.gather(
        host.ahandle("s1", {"message": {"text": "oi", "id": "m1"}}),
        host.ahandle("s1", {"message": {"text": "oi", "id": "m2"}}),
    )

    stored = await sync_to_async(host.store.load)("s1")
    assert sorted(result.session["version"] for result in results) == [1, 2]
    assert sorted(stored["inputs"]) == ["m1", "m2"]
    assert threading.get_ident() in model.threads  # one won on the loop
    assert len(model.threads) == 3  # the other lost the insert and was replayed in a thread
    events = await sync_to_async(logged)("s1")
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))


@pytest.mark.asyncio
async def test_a_repeated_input_on_the_loop_writes_nothing() -> None:
    _, host = noting_host()
    first = await host.ahandle("s1", {"message": {"text": "oi", "id": "m1"}})

    again = await host.ahandle("s1", {"message": {"text": "oi", "id": "m1"}})

    assert not again.changed and again.events == [] and again.session == first.session
    assert len(await sync_to_async(logged)("s1")) == len(first.events)


@pytest.mark.asyncio
async def test_a_turn_that_changes_nothing_on_the_loop_is_checked_against_the_store() -> None:
    _, host = noting_host()
    first, second = await two_turns(host)

    again = await host.ahandle(
        "s1", {"message": {"text": "oi", "id": "m2"}}, last_saved=second.session
    )

    assert not again.changed and again.events == []
    assert again.session == second.session
    assert len(await sync_to_async(logged)("s1")) == len(first.events) + len(second.events)


async def connection_when_free() -> Any:
    async with loop_connection(ALIAS) as connection:
        return connection


@pytest.mark.asyncio
async def test_a_loop_opens_at_most_loop_connections_and_reuses_them() -> None:
    with override_settings(WARLOCK_SESSIONS={"LOOP_CONNECTIONS": 1}):
        async with loop_connection(ALIAS) as first:
            waiting = asyncio.create_task(connection_when_free())
            await asyncio.sleep(0.05)
            assert first is not None and not waiting.done()  # waits for the one connection
        assert await waiting is first


def test_loop_connections_close_with_their_loop() -> None:
    async def open_one() -> int:
        async with loop_connection(ALIAS) as connection:
            assert connection is not None
            return connection.info.backend_pid

    pid = asyncio.run(open_one())

    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        assert cursor.fetchone() == (0,)


@pytest.mark.asyncio
@pytest.mark.parametrize("limit", [-1, "4", 2.0])
async def test_a_bad_loop_connections_setting_is_named(limit: Any) -> None:
    bad = override_settings(WARLOCK_SESSIONS={"LOOP_CONNECTIONS": limit})
    with bad, pytest.raises(SettingError, match=r"WARLOCK_SESSIONS\['LOOP_CONNECTIONS'\]"):
        async with loop_connection(ALIAS):
            pass


@pytest.mark.asyncio
async def test_a_database_that_cannot_be_reached_raises_djangos_error() -> None:
    settings_dict = connections[ALIAS].settings_dict
    port = settings_dict["PORT"]
    settings_dict["PORT"] = "1"  # nothing listens there
    try:
        with pytest.raises(OperationalError):
            async with loop_connection(ALIAS):
                pass
    finally:
        settings_dict["PORT"] = port


@pytest.mark.asyncio
@pytest.mark.parametrize("role", ["pg_monitor", "no_such_role"])
async def test_loop_connections_assume_the_configured_role(role: str) -> None:
    options = connections[ALIAS].settings_dict["OPTIONS"]
    options["assume_role"] = role
    try:
        if role == "no_such_role":
            with pytest.raises(DatabaseError, match="no_such_role"):
                await connection_when_free()
            return
        async with loop_connection(ALIAS) as connection:
            cursor = await connection.execute("SELECT current_user")
            assert await cursor.fetchone() == (role,)
    finally:
        del options["assume_role"]


@pytest.mark.asyncio
@pytest.mark.parametrize("tenant", [None, "acme"])
async def test_a_claim_on_the_loop_counts_its_owners_quota_in_the_scope(
    tenant: str | None,
) -> None:
    """The claim's one statement makes the owner row only while its owner (a visitor by key,
    or a user) has fewer than the quota's rows, counted in the current tenant; over it, the
    claim says so as the thread's does (``QuotaExceededError``)."""
    from django.contrib.auth.models import User

    from warlock_sessions import tenancy

    def a_user() -> Any:
        try:
            return User.objects.db_manager(ALIAS).create(username="q")
        finally:
            connections[ALIAS].close()  # that thread's, or the test database stays in use

    user = await sync_to_async(a_user)()
    scope = tenancy.tenant_scope(tenant) if tenant else nullcontext()
    with scope:
        async with loop_connection(ALIAS) as connection:
            for owner in (
                {"user_id": None, "anonymous_key": "visitor-q"},
                {
                    "user_id": user.pk,
                    "anonymous_key": "",
                },
            ):
                who = owner["user_id"] or owner["anonymous_key"]
                first = await aclaim(connection, f"q-{who}-1", owner, ALIAS, quota=2)
                second = await aclaim(connection, f"q-{who}-2", owner, ALIAS, quota=2)
                with pytest.raises(QuotaExceededError):
                    await aclaim(connection, f"q-{who}-3", owner, ALIAS, quota=2)
                unlimited = await aclaim(connection, f"q-{who}-4", owner, ALIAS)
                assert first and second and unlimited, owner
    if tenant:  # another tenant's rows of the same owner count for nothing here
        with tenancy.tenant_scope("globex"):
            async with loop_connection(ALIAS) as connection:
                visitor = {"user_id": None, "anonymous_key": "visitor-q"}
                claimed = await aclaim(connection, "q-globex-1", visitor, ALIAS, quota=1)
        assert claimed is not None
