"""ws/sessions/{id}/ with the app on PostgreSQL: the booking agent cannot block, so its turns
run on the socket's event loop (Host.ahandle over a loop connection), end to end."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import connections
from django.test import override_settings

from example_project.demo.agents import booking_agent
from tests.host.conftest import ThreadNotingModel, needs_postgres
from warlock_sessions.engine import Agent
from warlock_sessions.host import Host
from warlock_sessions.models import SessionEvent, SessionOwner
from warlock_sessions.permissions import VISITOR_KEY, OwnerOrStaff, SessionAccess
from warlock_sessions.realtime.admission import SocketAccess
from warlock_sessions.stores import DjangoStore

from .test_session_socket import LAYERS, booking_begun, cookie_for, socket, until_turn

pytestmark = [
    pytest.mark.asyncio,
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]


MODEL = ThreadNotingModel()


def noting_booking_agent() -> Agent:
    """The demo's booking agent, its RuleModel noting the threads it spoke on."""
    agent = booking_agent()
    agent.model = MODEL
    return agent


ON_POSTGRES = {"STORE_OPTIONS": {"using": "postgres"}}
SETTINGS = {
    "AGENTS": {
        "booking": f"{__name__}.noting_booking_agent",
        "failing": "tests.api.test_hostile_api.failing_agent",
    },
    "DEFAULT_AGENT": "booking",
    **ON_POSTGRES,
}


class AppOnPostgres:
    """Sends the warlock_sessions app to the ``postgres`` alias (the visitors' Django sessions
    stay on ``default``)."""

    def db_for_read(self, model: type, **hints: object) -> str | None:
        return "postgres" if model._meta.app_label == "warlock_sessions" else None

    db_for_write = db_for_read


@pytest.fixture(autouse=True)
def app_on_postgres() -> Iterator[None]:
    MODEL.threads.clear()
    with override_settings(
        CHANNEL_LAYERS=LAYERS["memory"],
        DATABASE_ROUTERS=[f"{__name__}.AppOnPostgres"],
        WARLOCK_SESSIONS=SETTINGS,
    ):
        yield
    connections.close_all()


async def test_a_chat_runs_its_turns_on_the_event_loop() -> None:
    chat = await socket("/ws/sessions/pg1/", username=None)
    assert (await chat.connect())[0]
    await booking_begun(chat)

    assert MODEL.threads == [threading.get_ident()] * 2
    assert await chat.receive_nothing(timeout=0.3)
    await chat.disconnect()

    stranger = await socket("/ws/sessions/pg1/", username=None)
    assert (await stranger.connect())[0]  # as for any id: the handshake tells nothing
    await stranger.send_json_to({"type": "message", "text": "hi", "id": "x"})
    assert await stranger.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_two_tabs_see_each_others_turns_once_in_order() -> None:
    cookie = await database_sync_to_async(cookie_for)(None)
    tabs = [await socket("/ws/sessions/pg2/", cookie=cookie) for _ in range(2)]
    for tab in tabs:
        assert (await tab.connect(timeout=10))[0]  # a first connect opens pooled connections

    await tabs[0].send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    sent = await until_turn(tabs[0])
    seen_by_second = await until_turn(tabs[1])  # pushed to the other tab
    await tabs[1].send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    replied = await until_turn(tabs[1])
    seen_by_first = sent + await until_turn(tabs[0])

    seen_by_second += replied
    assert seen_by_first == seen_by_second
    assert [event["seq"] for event in seen_by_first] == list(range(1, len(seen_by_first) + 1))
    assert MODEL.threads == [threading.get_ident()] * 2
    for tab in tabs:
        assert await tab.receive_nothing(timeout=0.3)
        await tab.disconnect()


@pytest.fixture
def claims_in_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids whose first frame fell back to the claim in a worker thread."""
    seen: list[str] = []
    in_thread = SocketAccess.claimed

    def noting(access: SocketAccess) -> tuple[bool, SessionOwner | None]:
        seen.append(access.session_id)
        return in_thread(access)

    monkeypatch.setattr(SocketAccess, "claimed", noting)
    return seen


@pytest.fixture
def apart(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What a first frame did on its own rather than in its turn's one statement: a claim
    (``claim_on_loop``) or a load of the session."""
    seen: list[str] = []

    def noting(name: str, work: Any) -> Any:
        async def noted(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return await work(*args, **kwargs)

        return noted

    monkeypatch.setattr(SocketAccess, "claim_on_loop", noting("claim", SocketAccess.claim_on_loop))
    for load in ("aload", "aload_numbered"):
        monkeypatch.setattr(DjangoStore, load, noting("load", getattr(DjangoStore, load)))
    return seen


def copy_user_to_postgres(username: str) -> None:
    user = User.objects.get(username=username)
    User.objects.using("postgres").get_or_create(pk=user.pk, username=username)


def owners_of(session_id: str) -> list[SessionOwner]:
    return list(SessionOwner.objects.using("postgres").filter(session_id=session_id))


@pytest.mark.parametrize("username", [None, "ana"])
async def test_a_chats_first_frame_claims_the_session_on_the_event_loop(
    username: str | None, claims_in_threads: list[str], apart: list[str]
) -> None:
    """In its turn's own statement: no claim apart, and no load of a session not made yet."""
    cookie = await database_sync_to_async(cookie_for)(username)
    if username:  # the user's row on the app's database too, for the owner row to refer to
        await database_sync_to_async(copy_user_to_postgres)(username)
    chat = await socket("/ws/sessions/pg-claim/", cookie=cookie)
    assert (await chat.connect())[0]
    await booking_begun(chat)
    await chat.disconnect()

    assert claims_in_threads == []
    assert apart == []  # the second turn starts from the copy its first saved
    assert MODEL.threads == [threading.get_ident()] * 2  # its first turn too
    [owner] = await database_sync_to_async(owners_of)("pg-claim")
    assert (owner.user_id is None) == (username is None) and bool(owner.anonymous_key) != bool(
        owner.user_id
    )
    again = await socket("/ws/sessions/pg-claim/", cookie=cookie)  # a reload: still theirs
    assert (await again.connect())[0]
    assert (await again.receive_json_from(timeout=5))["seq"] == 1
    await again.disconnect()


async def test_of_two_strangers_on_a_new_id_the_first_frame_wins_and_the_other_is_closed(
    claims_in_threads: list[str],
) -> None:
    first, second = [await socket("/ws/sessions/pg-race/", username=None) for _ in range(2)]
    for chat in (first, second):
        assert (await chat.connect())[0]  # both saw an id nobody used
    await first.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    assert (await until_turn(first))[-1]["type"] == "turn"
    await second.send_json_to({"type": "message", "text": "mine", "id": "x1"})
    assert await second.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert claims_in_threads == ["pg-race"]  # the claim on the loop found the id taken
    assert len(await database_sync_to_async(owners_of)("pg-race")) == 1
    await first.disconnect()


async def test_an_early_socket_does_not_claim_a_session_server_code_made_after_it_connected(
    claims_in_threads: list[str],
) -> None:
    early = await socket("/ws/sessions/pg-later/", "mallory")
    assert (await early.connect())[0]
    await database_sync_to_async(Host().handle)(
        "pg-later", {"message": {"text": "book", "id": "s1"}}
    )
    await early.send_json_to({"type": "message", "text": "mine now", "id": "x1"})
    assert await early.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert await database_sync_to_async(owners_of)("pg-later") == []


async def test_a_first_frame_on_an_id_with_a_log_left_behind_starts_it_clean(
    claims_in_threads: list[str],
) -> None:
    """A session row deleted without its records (bypassing ``forget_session``): the claim on
    the loop leaves the id to the claim in a thread, which forgets the old log first."""

    def left_behind() -> None:
        Host().handle("pg-stale", {"message": {"text": "book", "id": "old"}})
        with connections["postgres"].cursor() as cursor:
            cursor.execute("DELETE FROM warlock_sessions_session WHERE id = 'pg-stale'")
        assert SessionEvent.objects.using("postgres").filter(session_id="pg-stale").exists()

    await database_sync_to_async(left_behind)()
    chat = await socket("/ws/sessions/pg-stale/", username=None)
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    events = await until_turn(chat)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert claims_in_threads == ["pg-stale"]
    await chat.disconnect()


async def test_a_failed_first_turn_takes_the_claim_made_on_the_loop_with_it(
    claims_in_threads: list[str],
) -> None:
    failing = {"AGENTS": SETTINGS["AGENTS"], "DEFAULT_AGENT": "failing", **ON_POSTGRES}
    with override_settings(WARLOCK_SESSIONS=failing):
        chat = await socket("/ws/sessions/pg-fail/", username=None)
        assert (await chat.connect())[0]
        await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
        assert (await chat.receive_json_from(timeout=5))["code"] == "auth-failed"
        assert await database_sync_to_async(owners_of)("pg-fail") == []
        await chat.send_json_to({"type": "message", "text": "book", "id": "m2"})  # claims again
        assert (await chat.receive_json_from(timeout=5))["code"] == "auth-failed"
        await chat.disconnect()
    assert claims_in_threads == []
    assert await database_sync_to_async(owners_of)("pg-fail") == []


class MembersOnly(OwnerOrStaff):
    """Anonymous visitors may not send turns, even to a session they would own."""

    def can_act(self, requester: Any, action: str, access: SessionAccess) -> bool:
        user = requester.user
        return bool(user and user.is_authenticated) and super().can_act(requester, action, access)


class OneSessionEach(OwnerOrStaff):
    """Reads state besides the owner (how many sessions the visitor owns already), so it is
    asked at claim time, never at connect."""

    decides_from_owner = False


@pytest.mark.parametrize("policy", ["MembersOnly", "OneSessionEach"])
async def test_a_policy_is_asked_about_the_claim_it_would_allow(
    policy: str, claims_in_threads: list[str]
) -> None:
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "PERMISSION": f"{__name__}.{policy}"}):
        chat = await socket("/ws/sessions/pg-policy/", username=None)
        assert (await chat.connect())[0]
        await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
        if policy == "MembersOnly":  # refused at connect: nothing claimed, on the loop or not
            assert await chat.receive_output(timeout=5) == {
                "type": "websocket.close",
                "code": 4403,
            }
            assert await database_sync_to_async(owners_of)("pg-policy") == []
        else:  # asked in a thread when the claim is made
            assert (await until_turn(chat))[-1]["type"] == "turn"
            assert claims_in_threads == ["pg-policy"]
            await chat.disconnect()


def end_loop_connections() -> int:
    """End the backends whose last statement was one only the event loop's connections run
    (a turn's combined save, a first turn's with its claim), as a restarted server or a
    network cut would."""
    with connections["postgres"].cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database() "
            "AND (query LIKE 'WITH saved AS%%' OR query LIKE 'WITH used AS%%')"
        )
        return len(cursor.fetchall())


async def test_a_lost_loop_connection_is_replaced_before_the_claim_uses_it(
    claims_in_threads: list[str],
) -> None:
    first = await socket("/ws/sessions/pg-lost-1/", username=None)
    assert (await first.connect())[0]
    await first.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    assert (await until_turn(first))[-1]["type"] == "turn"
    await first.disconnect()
    assert await database_sync_to_async(end_loop_connections)() >= 1

    chat = await socket("/ws/sessions/pg-lost-2/", username=None)
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    assert (await until_turn(chat))[-1]["type"] == "turn"  # claimed, and its turn ran
    # The connection's socket showed it was closed: a new one made the claim, on the loop.
    assert claims_in_threads == []
    assert len(await database_sync_to_async(owners_of)("pg-lost-2")) == 1
    await chat.disconnect()


@pytest.fixture
def admissions_in_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids whose connect was admitted in a worker thread rather than on the event loop."""
    seen: list[str] = []
    in_thread = SocketAccess.admitted

    def noting(access: SocketAccess, after_seq: int) -> tuple[Any, ...]:
        seen.append(access.session_id)
        return in_thread(access, after_seq)

    monkeypatch.setattr(SocketAccess, "admitted", noting)
    return seen


def visitor_identity(cookie: bytes) -> str | None:
    key = cookie.decode().split("=", 1)[1]
    return SessionStore(key).get(VISITOR_KEY)


async def test_a_visitors_connect_is_admitted_on_the_event_loop(
    admissions_in_threads: list[str], claims_in_threads: list[str]
) -> None:
    cookie = await database_sync_to_async(cookie_for)(None)
    chat = await socket("/ws/sessions/pg-admit/", cookie=cookie)
    assert (await chat.connect())[0]
    await booking_begun(chat)
    await chat.disconnect()
    # Their identity outlives a login: stored in their Django session with the claim.
    assert await database_sync_to_async(visitor_identity)(cookie)

    again = await socket("/ws/sessions/pg-admit/?after_seq=2", cookie=cookie)  # theirs: replayed
    assert (await again.connect())[0]
    replayed = []
    while not await again.receive_nothing(timeout=0.3):
        replayed.append((await again.receive_json_from(timeout=5))["seq"])
    assert replayed == list(range(3, 3 + len(replayed))) and len(replayed) > 4
    await again.disconnect()

    stranger = await socket("/ws/sessions/pg-admit/", username=None)  # not theirs: nothing
    assert (await stranger.connect())[0]
    assert await stranger.receive_nothing(timeout=0.3)
    await stranger.send_json_to({"type": "message", "text": "hi", "id": "x"})
    assert await stranger.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert admissions_in_threads == []
    assert claims_in_threads == ["pg-admit"]  # the stranger's frame, refused in a thread

    user = await socket("/ws/sessions/pg-admit-user/", "ana")  # permissions read the database
    await database_sync_to_async(copy_user_to_postgres)("ana")
    assert (await user.connect())[0]
    await user.disconnect()
    assert admissions_in_threads == ["pg-admit-user"]


@pytest.mark.parametrize("username", [None, "ana"])
async def test_sockets_opened_before_their_claims_keep_the_owners_quota(
    username: str | None, claims_in_threads: list[str]
) -> None:
    """Each socket's connect found its id unused and under the quota; the claims, made later
    on the loop, still count the owner's sessions."""
    cookie = await database_sync_to_async(cookie_for)(username)
    if username:
        await database_sync_to_async(copy_user_to_postgres)(username)
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_SESSIONS_PER_OWNER": 1}):
        first, second = [await socket(f"/ws/sessions/pg-quota-{n}/", cookie=cookie) for n in (1, 2)]
        for chat in (first, second):
            assert (await chat.connect())[0]
        await first.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
        assert (await until_turn(first))[-1]["type"] == "turn"
        await second.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
        refused = await second.receive_json_from(timeout=5)
        assert refused["type"] == "error" and refused["code"] == "quota-exceeded", refused
        for chat in (first, second):
            await chat.disconnect()
    assert claims_in_threads == []  # the loop's claim says why as the thread's would
    assert await database_sync_to_async(owners_of)("pg-quota-2") == []


async def test_a_visitors_first_frames_at_once_on_the_loop_stop_at_the_quota() -> None:
    """Twelve sockets of one visitor, each on a new id, send their first frames together: the
    claims on the event loop count and insert while no other claim of the visitor runs, so
    five are made, not twelve."""
    cookie = await database_sync_to_async(cookie_for)(None)
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_SESSIONS_PER_OWNER": 5}):
        chats = [await socket(f"/ws/sessions/pg-storm-{n}/", cookie=cookie) for n in range(12)]
        for chat in chats:
            assert (await chat.connect())[0]
        await asyncio.gather(
            *(
                chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
                for chat in chats
            )
        )
        answers = [await until_turn(chat) for chat in chats]
        for chat in chats:
            await chat.disconnect()
    ends = [frames[-1].get("code", frames[-1]["type"]) for frames in answers]
    assert sorted(ends) == ["quota-exceeded"] * 7 + ["turn"] * 5, ends

    def claimed() -> int:
        return (
            SessionOwner.objects.using("postgres")
            .filter(session_id__startswith="pg-storm-")
            .count()
        )

    assert await database_sync_to_async(claimed)() == 5


class VisitorsAskedOfTheDatabase(OwnerOrStaff):
    """Trusts a visitor only if a row says so: a policy that reads the database."""

    def is_trusted(self, requester: Any) -> bool:
        return User.objects.filter(username="trusted-visitors").exists()


async def test_a_policy_that_reads_the_database_admits_in_a_worker_thread(
    admissions_in_threads: list[str],
) -> None:
    policy = {**SETTINGS, "PERMISSION": f"{__name__}.VisitorsAskedOfTheDatabase"}
    with override_settings(WARLOCK_SESSIONS=policy):
        chat = await socket("/ws/sessions/pg-policy-db/", username=None)
        assert (await chat.connect())[0]
        await booking_begun(chat)
        await chat.disconnect()
    assert admissions_in_threads == ["pg-policy-db"]
