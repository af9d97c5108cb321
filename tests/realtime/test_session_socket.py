"""ws/sessions/{id}/ through channels' WebsocketCommunicator, on the in-memory layer and on
channels-redis against the real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.services import REDIS_URL, redis_unreachable
from warlock_sessions import signals
from warlock_sessions.host import Host, run_due_wakes
from warlock_sessions.models import SessionOwner, Wake
from warlock_sessions.realtime.routing import websocket_urlpatterns
from warlock_sessions.stores import DjangoStore

APPLICATION = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
SETTINGS = {
    "AGENTS": {
        "booking": "example_project.demo.agents.booking_agent",
        "timer": "tests.host.conftest.timer_agent",
    },
    "DEFAULT_AGENT": "booking",
}
LAYERS = {
    "memory": {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
    "redis": {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    },
}
pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(
    params=[
        "memory",
        pytest.param(
            "redis",
            marks=pytest.mark.skipif(
                redis_unreachable() is not None, reason=redis_unreachable() or ""
            ),
        ),
    ]
)
def layer(request: pytest.FixtureRequest) -> Iterator[str]:
    with override_settings(CHANNEL_LAYERS=LAYERS[request.param], WARLOCK_SESSIONS=SETTINGS):
        yield request.param


def cookie_for(username: str | None) -> bytes:
    """A real Django session cookie: logged in as ``username``, or an anonymous visitor's."""
    client = Client()
    if username:
        user = User.objects.get_or_create(
            username=username, is_staff=username == "staff", is_superuser=username == "staff"
        )[0]
        client.force_login(user)
    else:
        session = client.session
        session["visited"] = True
        session.save()
        client.cookies["sessionid"] = session.session_key
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def socket(
    path: str, username: str | None = "ana", cookie: bytes | None = None
) -> WebsocketCommunicator:
    """A socket of ``username`` (``None``: a new anonymous visitor), or of the visitor whose
    ``cookie`` is given."""
    cookie = cookie or await database_sync_to_async(cookie_for)(username)
    return WebsocketCommunicator(APPLICATION, path, headers=[(b"cookie", cookie)])


async def refused(communicator: WebsocketCommunicator) -> int:
    """The code a socket refused at its handshake is closed with: it is accepted first, so a
    browser can tell the refusal from a network error."""
    accepted, _ = await communicator.connect()
    assert accepted
    close = await communicator.receive_output(timeout=5)
    assert close["type"] == "websocket.close", close
    return int(close["code"])


async def until_turn(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=10)
        events.append(event)
        if event["type"] in ("turn", "error"):
            return events


async def booking_begun(chat: WebsocketCommunicator) -> tuple[list[Any], list[Any]]:
    """Over a connected ``chat``: ask to book, give the name; both replies arrive, and every
    event in ``seq`` order from 1. Returns each turn's events."""
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    first = await until_turn(chat)
    await chat.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    second = await until_turn(chat)

    events = first + second
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert [event["text"] for event in events if event["type"] == "message"] == [
        "I'd like to book",
        "Great, let's get you booked. What's your name?",
        "Ana Souza",
        "Thanks, Ana Souza! What's your e-mail address?",
    ]
    return first, second


async def test_a_chat_over_the_socket_in_seq_order(layer: str) -> None:
    chat = await socket("/ws/sessions/c1/")
    assert (await chat.connect())[0]
    first, second = await booking_begun(chat)

    said = [event for event in first + second if event["type"] == "message"]
    assert [event["role"] for event in said] == ["user", "bot", "user", "bot"]
    assert set(said[0]) == {"type", "seq", "role", "text", "id"}
    assert set(said[1]) == {"type", "seq", "role", "key", "text", "kind", "after_ms"}
    assert first[-1]["version"] == 1 and second[-1]["version"] == 2
    assert await chat.receive_nothing(timeout=0.3)
    await chat.disconnect()


async def test_bad_frames_get_an_error_and_the_socket_stays_open(layer: str) -> None:
    chat = await socket("/ws/sessions/c2/")
    assert (await chat.connect())[0]
    await chat.send_to(text_data="not json")
    assert (await chat.receive_json_from(timeout=5))["code"] == "invalid-json"
    await chat.send_json_to({"type": "dance"})
    assert (await chat.receive_json_from(timeout=5))["code"] == "invalid-input"
    await chat.send_json_to({"type": "message", "id": "m1"})
    error = await chat.receive_json_from(timeout=5)
    assert error == {
        "type": "error",
        "code": "invalid-input",
        "detail": "message.text: expected text",
        "field": "message.text",  # named as over HTTP (failures.client_failure)
    }
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()


async def test_a_reconnect_with_after_seq_replays_what_was_missed_once(layer: str) -> None:
    chat = await socket("/ws/sessions/c3/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    seen = await until_turn(chat)
    await chat.disconnect()

    later = await socket(f"/ws/sessions/c3/?after_seq={seen[1]['seq']}")
    assert (await later.connect())[0]
    replayed = [await later.receive_json_from(timeout=5) for _ in seen[2:]]
    assert replayed == seen[2:]
    await later.send_json_to({"type": "message", "text": "Ana", "id": "m2"})
    more = await until_turn(later)
    assert [e["seq"] for e in replayed + more] == list(range(seen[2]["seq"], more[-1]["seq"] + 1))
    await later.disconnect()


async def test_messages_from_a_wake_arrive_live(layer: str) -> None:
    chat = await socket("/ws/sessions/t1/", "staff")  # picking the agent is staff's
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "start", "flow": "lembrete", "key": "k", "agent": "timer"})
    await until_turn(chat)

    def fire() -> int:
        Wake.objects.update(due_at="2000-01-01T00:00:00Z")
        return run_due_wakes(10)

    assert await database_sync_to_async(fire)() == 1
    live = await until_turn(chat)
    assert [e["text"] for e in live if e["type"] == "message"] == ["Hora do lembrete!"]
    await chat.disconnect()


async def test_others_see_nothing_and_are_closed_with_4403_like_for_any_id(layer: str) -> None:
    owner = await socket("/ws/sessions/c4/")
    assert (await owner.connect())[0]
    await owner.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(owner)

    for intruder in (
        await socket("/ws/sessions/c4/", "bob"),
        await socket("/ws/sessions/c4/", None),
    ):
        # The handshake is the same as for an id nobody uses: nothing leaks from it.
        assert (await intruder.connect())[0]
        await owner.send_json_to({"type": "message", "text": "Ana Souza", "id": f"m{id(intruder)}"})
        await until_turn(owner)
        assert await intruder.receive_nothing(timeout=0.3)  # no replay, no live events
        await intruder.send_json_to({"type": "message", "text": "hi", "id": "x1"})
        assert await intruder.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    await owner.disconnect()


async def test_an_early_socket_neither_eavesdrops_nor_hijacks_a_session_made_later(
    layer: str,
) -> None:
    early = await socket("/ws/sessions/later-1/", "mallory")
    assert (await early.connect())[0]
    # Server code makes the session afterwards; its events must not reach the early socket.
    await database_sync_to_async(Host().handle)(
        "later-1", {"message": {"text": "book", "id": "s1"}}
    )
    assert await early.receive_nothing(timeout=1.5)
    # Nor may the early socket claim the session that now exists.
    await early.send_json_to({"type": "message", "text": "mine now", "id": "x1"})
    assert await early.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    owners = await database_sync_to_async(
        lambda: list(SessionOwner.objects.filter(session_id="later-1"))
    )()
    assert owners == []


async def test_end_users_send_only_messages_and_public_inputs_over_the_socket(layer: str) -> None:
    chat = await socket("/ws/sessions/trust-1/")
    assert (await chat.connect())[0]
    forbidden = [
        {"type": "message", "text": "hi", "id": "m1", "at": "1970-01-01T00:00:00Z"},
        {"type": "event", "name": "discount", "key": "d1"},
        {"type": "start", "flow": "booking", "key": "k1"},
        {"type": "message", "text": "hi", "context": {"vip": True}},
        {"type": "message", "text": "hi", "agent": "timer"},
    ]
    for frame in forbidden:
        await chat.send_json_to(frame)
        reply = await chat.receive_json_from(timeout=5)
        assert reply["type"] == "error" and reply["code"] == "input-not-allowed", frame
    await chat.send_json_to({"type": "message", "text": "book", "id": "m2"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()


async def test_a_refused_first_frame_claims_nothing(layer: str) -> None:
    mallory = await socket("/ws/sessions/later-9/", "mallory")
    assert (await mallory.connect())[0]
    await mallory.send_json_to({"type": "event", "name": "discount", "key": "k"})
    assert (await mallory.receive_json_from(timeout=5))["code"] == "input-not-allowed"
    await database_sync_to_async(Host().handle)("later-9", {"message": {"text": "book", "id": "1"}})
    assert await mallory.receive_nothing(timeout=1.5)
    await mallory.disconnect()


async def test_a_socket_left_on_a_deleted_session_is_closed_when_the_log_moves_on(
    layer: str,
) -> None:
    """No notice of the deletion reaches it (deleted in another process, say): the log shows
    someone else's conversation under the id, and the socket is closed instead of shown it."""
    ana = await socket("/ws/sessions/del-1/")
    assert (await ana.connect())[0]
    await ana.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(ana)

    def elsewhere() -> None:
        with override_settings(CHANNEL_LAYERS={}):
            DjangoStore().delete("del-1")
            Host().handle("del-1", {"message": {"text": "book", "id": "b1"}})
            Host().handle("del-1", {"message": {"text": "Bob Stone", "id": "b2"}})
            Host().handle("del-1", {"message": {"text": "bob@example.com", "id": "b3"}})

    await database_sync_to_async(elsewhere)()
    assert await ana.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_a_socket_that_has_seen_no_event_hears_nothing_of_a_session_made_again(
    layer: str, pushes: list[str]
) -> None:
    """A session with no event yet (server code made it for ana), deleted with no notice to
    her socket, and made again under the id by server code: its first events, pushed, would
    follow on from the none her socket has; it is asked about again, and closed."""
    from warlock_sessions.testing import session_blob

    def made_for_ana() -> None:
        ana = User.objects.get_or_create(username="ana")[0]
        DjangoStore().save(session_blob("again-1"), 0)
        SessionOwner.objects.create(session_id="again-1", user=ana)

    await database_sync_to_async(made_for_ana)()
    ana = await socket("/ws/sessions/again-1/")
    assert (await ana.connect())[0]
    assert await ana.receive_nothing(timeout=0.3)

    def made_again() -> None:  # the store's delete sends no notice, as one lost would be
        DjangoStore().delete("again-1")
        SessionOwner.objects.filter(session_id="again-1").delete()
        Host().handle("again-1", {"message": {"text": "Eve Secret", "id": "e1"}})

    await database_sync_to_async(made_again)()
    seen = []
    while (output := await ana.receive_output(timeout=5))["type"] == "websocket.send":
        seen.append(output["text"])
    assert output == {"type": "websocket.close", "code": 4403}
    assert seen == [] and pushes == ["again-1"]


async def test_a_turn_older_than_the_last_one_sent_is_of_a_session_made_again(
    layer: str,
) -> None:
    """The new conversation's first pushes were lost (the layer is lossy), and its next one
    follows on from the seq the old owner's socket has: its turn's version, no newer than the
    last one that socket sent, gives it away."""
    from channels.layers import get_channel_layer

    from warlock_sessions.host import group_name

    ana = await socket("/ws/sessions/again-2/")
    assert (await ana.connect())[0]
    for index, text in enumerate(["book", "Ana Souza"]):
        await ana.send_json_to({"type": "message", "text": text, "id": f"m{index}"})
        last = (await until_turn(ana))[-1]
    assert last["version"] == 2
    await database_sync_to_async(DjangoStore().delete)("again-2")
    await database_sync_to_async(
        lambda: SessionOwner.objects.filter(session_id="again-2").delete()
    )()
    seq = last["seq"] + 1
    made_again = [
        {"seq": seq, "type": "message", "role": "bot", "key": "k", "text": "Eve Secret",
         "kind": "ai", "after_ms": 0},
        {"seq": seq + 1, "type": "turn", "version": 2, "changed": True, "outcomes": []},
    ]  # fmt: skip
    await get_channel_layer().group_send(  # type: ignore[union-attr]
        group_name("again-2"),
        {"type": "warlock.events", "session_id": "again-2", "events": made_again},
    )
    assert await ana.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_a_socket_on_a_session_deleted_through_the_store_sees_nothing_of_the_next(
    layer: str,
) -> None:
    """``DjangoStore.delete`` sends no notice to sockets; the next conversation under the id
    counts its versions from 1 again, and the old owner's socket is closed, not shown it."""
    ana = await socket("/ws/sessions/del-2/")
    assert (await ana.connect())[0]
    for index, text in enumerate(["book", "Ana Souza"]):
        await ana.send_json_to({"type": "message", "text": text, "id": f"m{index}"})
        await until_turn(ana)
    await database_sync_to_async(DjangoStore().delete)("del-2")
    eve = await socket("/ws/sessions/del-2/", "eve")
    assert (await eve.connect())[0]
    for index, text in enumerate(["book", "Eve Secret", "eve@example.com"]):
        await eve.send_json_to({"type": "message", "text": text, "id": f"e{index}"})
        await until_turn(eve)
    seen = []
    while (output := await ana.receive_output(timeout=5))["type"] == "websocket.send":
        seen.append(output["text"])
    assert output == {"type": "websocket.close", "code": 4403}
    assert not any("Eve" in text for text in seen)
    await eve.disconnect()


async def test_two_tabs_of_a_new_visitor_starting_at_once_both_own_the_chat(layer: str) -> None:
    cookie = await database_sync_to_async(cookie_for)(None)
    tabs = [await socket(f"/ws/sessions/{name}/", cookie=cookie) for name in ("race-a", "race-b")]
    for tab in tabs:
        assert (await tab.connect())[0]
    for index, tab in enumerate(tabs):
        await tab.send_json_to({"type": "message", "text": "book", "id": f"m{index}"})
    for tab in tabs:
        assert (await until_turn(tab))[-1]["type"] == "turn"
        await tab.disconnect()
    for name in ("race-a", "race-b"):  # after a reload, both chats are still theirs
        again = await socket(f"/ws/sessions/{name}/", cookie=cookie)
        assert (await again.connect())[0]
        assert (await again.receive_json_from(timeout=5))["seq"] == 1
        await again.disconnect()


async def test_a_provider_failure_reaches_the_socket_as_a_code_and_a_generic_sentence(
    layer: str,
) -> None:
    agents = {"AGENTS": {"failing": "tests.api.test_hostile_api.failing_agent"}}
    with override_settings(WARLOCK_SESSIONS=agents):
        chat = await socket("/ws/sessions/fail-1/")
        assert (await chat.connect())[0]
        await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
        error = await chat.receive_json_from(timeout=5)
        assert (error["type"], error["code"]) == ("error", "auth-failed")
        assert "sk-secret" not in error["detail"]
        await chat.disconnect()
    owners = await database_sync_to_async(
        lambda: SessionOwner.objects.filter(session_id="fail-1").exists()
    )()
    assert not owners  # the failed first turn took its claim with it


async def test_hostile_frames_get_an_error_frame_and_never_a_1011(layer: str) -> None:
    chat = await socket("/ws/sessions/hostile-1/")
    assert (await chat.connect())[0]
    frames = [
        "[" * 5000 + "]" * 5000,
        '{"type": "message", "text": "hi", "id": "a\u0000b"}',
        '{"type": "message", "text": "hi", "id": "\ud800"}',
        '{"type": "message", "text": 1e999}',
        '{"type": "message", "text": "' + "x" * 300_000 + '"}',
        '{"type": "message", "text": NaN}',
        '"' + '\\"' * 100_000,  # an unclosed string: the depth check stays linear
    ]
    for frame in frames:
        await chat.send_to(text_data=frame)
        reply = await chat.receive_json_from(timeout=5)
        assert reply["type"] == "error", frame[:40]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m2"})
    assert (await until_turn(chat))[-1]["type"] == "turn"
    await chat.disconnect()


async def test_a_client_may_hold_only_so_many_sockets(layer: str) -> None:
    cookie = await database_sync_to_async(cookie_for)("many")
    with override_settings(WARLOCK_SESSIONS={**SETTINGS, "MAX_SOCKETS_PER_CLIENT": 2}):
        sockets = [await socket(f"/ws/sessions/many-{i}/", cookie=cookie) for i in range(3)]
        assert (await sockets[0].connect())[0] and (await sockets[1].connect())[0]
        assert await refused(sockets[2]) == 4429
        await sockets[0].disconnect()
        again = await socket("/ws/sessions/many-9/", cookie=cookie)
        assert (await again.connect())[0]
        for open_socket in (sockets[1], again):
            await open_socket.disconnect()


async def test_an_id_no_store_accepts_is_refused_like_any_other(layer: str) -> None:
    chat = await socket("/ws/sessions/" + "x" * 300 + "/")
    assert await refused(chat) == 4403


async def test_events_logged_by_another_process_reach_the_socket_through_the_log(
    layer: str,
) -> None:
    """What the channel layer never carries (the in-memory layer does not cross processes)
    still arrives: the socket follows the log."""
    chat = await socket("/ws/sessions/follow-1/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    seen = await until_turn(chat)

    def logged_elsewhere() -> None:
        with override_settings(CHANNEL_LAYERS={}):  # as in a worker with no layer
            Host().handle("follow-1", {"message": {"text": "Ana Souza", "id": "m2"}})

    await database_sync_to_async(logged_elsewhere)()
    later = await until_turn(chat)
    assert [e["seq"] for e in seen + later] == list(range(1, len(seen + later) + 1))
    await chat.disconnect()


async def test_a_visitor_without_a_django_session_cannot_start_one(layer: str) -> None:
    bare = WebsocketCommunicator(APPLICATION, "/ws/sessions/new-1/")
    assert await refused(bare) == 4403


async def test_two_tabs_and_a_turn_from_elsewhere_see_every_event_once_in_order(
    layer: str,
) -> None:
    """Each socket starts its next turn from the session it last saved; a turn made elsewhere
    (another tab, the HTTP API) moves the session on, and the next turn must still land once."""
    first_tab = await socket("/ws/sessions/c6/")
    assert (await first_tab.connect())[0]
    await first_tab.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    seen_first = await until_turn(first_tab)
    second_tab = await socket(f"/ws/sessions/c6/?after_seq={seen_first[-1]['seq']}")
    assert (await second_tab.connect())[0]

    await database_sync_to_async(Host().handle)("c6", {"message": {"text": "Ana", "id": "m2"}})
    seen_first += await until_turn(first_tab)
    seen_second = await until_turn(second_tab)
    conflicts: list[int] = []

    def count(sender: Any, attempt: int, **kwargs: Any) -> None:
        conflicts.append(attempt)

    signals.session_conflict.connect(count)
    try:
        await first_tab.send_json_to({"type": "message", "text": "ana@example.com", "id": "m3"})
        seen_first += await until_turn(first_tab)
        seen_second += await until_turn(second_tab)
    finally:
        signals.session_conflict.disconnect(count)

    assert conflicts == []  # the pushed turn told the tab its copy was stale: it loaded

    assert [event["seq"] for event in seen_first] == list(range(1, len(seen_first) + 1))
    assert seen_second == seen_first[len(seen_first) - len(seen_second) :]
    turns = [event for event in seen_first if event["type"] == "turn"]
    assert [turn["version"] for turn in turns] == [1, 2, 3]
    replies = [
        event["text"]
        for event in seen_first
        if event["type"] == "message" and event["role"] == "bot"
    ]
    assert replies[1:] == [
        "Thanks, Ana! What's your e-mail address?",
        "Which day would suit you?",
    ]
    said = [event["text"] for event in seen_second if event.get("role") == "user"]
    assert said == ["Ana", "ana@example.com"]  # the other tab sees what the user wrote
    for tab in (first_tab, second_tab):
        assert await tab.receive_nothing(timeout=0.3)
        await tab.disconnect()


@pytest.mark.parametrize("layer", ["memory"], indirect=True)
async def test_a_made_up_cookie_is_no_identity(layer: str) -> None:
    made_up = await socket("/ws/sessions/s/", cookie=b"sessionid=abcdefghijklmnopqrstuvwxyz012345")
    assert await refused(made_up) == 4403


@pytest.fixture
def pushes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions whose turns' events reached the channel layer (from the socket or from the
    host); the log is not followed meanwhile, so only the layer can bring one socket another's
    events."""
    from channels.layers import get_channel_layer

    from warlock_sessions.host import group_name
    from warlock_sessions.realtime import follow

    pushed: list[str] = []
    layer = get_channel_layer()
    group_send = layer.group_send

    async def noting(group: str, message: dict[str, Any]) -> None:
        if message["type"] == "warlock.events" and message["events"]:  # not a join notice
            pushed.append(message["session_id"])
            assert group == group_name(message["session_id"])
        await group_send(group, message)

    monkeypatch.setattr(layer, "group_send", noting)
    monkeypatch.setattr(follow, "FOLLOW_INTERVAL", 3600)
    return pushed


async def test_a_socket_alone_on_its_session_skips_the_layer(layer: str, pushes: list[str]) -> None:
    cookie = await database_sync_to_async(cookie_for)("ana")
    first = await socket("/ws/sessions/alone-1/", cookie=cookie)
    assert (await first.connect())[0]
    await first.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    last_seq = (await until_turn(first))[-1]["seq"]
    # Nobody else is listening: in this process (the layer's groups) nor, on Redis, in any
    # other (nothing else subscribed to the group's channel). Its frames would only come back.
    assert pushes == []

    second = await socket(f"/ws/sessions/alone-1/?after_seq={last_seq}", cookie=cookie)
    assert (await second.connect())[0]
    await first.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    sent = await until_turn(first)
    assert await until_turn(second) == sent  # through the layer, the log not followed
    assert pushes[-1] == "alone-1"
    for tab in (first, second):
        assert await tab.receive_nothing(timeout=0.3)
        await tab.disconnect()


@pytest.mark.parametrize("layer", ["redis"], indirect=True)
async def test_a_socket_of_another_process_on_redis_gets_the_turns(
    layer: str, pushes: list[str]
) -> None:
    """A socket that joins a session already going asks Redis whether anyone else listens:
    another process subscribed to the group's channel (even one that never announced
    itself) gets the turn, pushed."""
    import redis.asyncio as redis
    from channels.layers import get_channel_layer

    from warlock_sessions.host import group_name

    cookie = await database_sync_to_async(cookie_for)("ana")
    first = await socket("/ws/sessions/elsewhere-1/", cookie=cookie)
    assert (await first.connect())[0]
    await first.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    last_seq = (await until_turn(first))[-1]["seq"]
    await first.disconnect()
    assert pushes == []  # it made the session: nobody else could be following it

    loop_layer = get_channel_layer()._get_layer()  # type: ignore[union-attr]
    group_channel = loop_layer._get_group_channel_name(group_name("elsewhere-1"))
    other_process = redis.Redis.from_url(REDIS_URL)
    listening = other_process.pubsub()
    await listening.subscribe(group_channel)
    try:
        tab = await socket(f"/ws/sessions/elsewhere-1/?after_seq={last_seq}", cookie=cookie)
        assert (await tab.connect())[0]
        await tab.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
        await until_turn(tab)
        heard = []
        for _ in range(50):  # the tab's join notice, then the turn, pushed once the socket's
            message = await listening.get_message(ignore_subscribe_messages=True, timeout=0.1)
            heard += [message] if message else []  # own client has its frames
            if len(heard) == 2:
                break
        assert [message["channel"].decode() for message in heard] == [group_channel] * 2
        assert pushes == ["elsewhere-1"]
        await tab.disconnect()
    finally:
        await listening.unsubscribe(group_channel)
        await listening.aclose()
        await other_process.aclose()


@pytest.mark.parametrize("layer", ["redis"], indirect=True)
async def test_a_socket_alone_on_redis_asks_once_until_another_process_joins(
    layer: str, pushes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket whose claim made the session does not ask Redis whether anyone else listens,
    nor does it on later turns; a socket of another process that joins says so, and the next
    turn asks, and is pushed to it."""
    import redis.asyncio as redis
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from warlock_sessions.host import group_name
    from warlock_sessions.realtime.base import open_consumers
    from warlock_sessions.realtime.membership import announce

    asked: list[str] = []
    numsub = redis.Redis.pubsub_numsub

    def noting(client: redis.Redis, *channels: str) -> Any:
        asked.extend(channels)
        return numsub(client, *channels)

    monkeypatch.setattr(redis.Redis, "pubsub_numsub", noting)
    cookie = await database_sync_to_async(cookie_for)("ana")
    tab = await socket("/ws/sessions/company-1/", cookie=cookie)
    assert (await tab.connect())[0]
    await booking_begun(tab)  # two turns
    assert pushes == [] and asked == []  # it made the session: nobody else could follow it

    other_process = RedisPubSubChannelLayer(hosts=[REDIS_URL])
    group = group_name("company-1")
    channel = await other_process.new_channel()
    try:
        await other_process.group_add(group, channel)
        await announce(other_process, group, "company-1", channel)
        [consumer] = [c for c in open_consumers if getattr(c, "session_id", "") == "company-1"]
        for _ in range(50):  # the notice heard
            if consumer.company.no_other_process_until == 0:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.02)
        await tab.send_json_to({"type": "message", "text": "ana@example.com", "id": "m3"})
        sent = await until_turn(tab)
        heard = await asyncio.wait_for(other_process.receive(channel), 5)
        while not heard["events"]:  # its own notice first
            heard = await asyncio.wait_for(other_process.receive(channel), 5)
        assert heard["events"] == sent and pushes == ["company-1"] and len(asked) == 1
    finally:
        await other_process.group_discard(group, channel)
        await other_process.flush()
        await tab.disconnect()


async def test_a_layer_message_of_a_newer_release_is_logged_and_the_socket_stays(
    layer: str, caplog: pytest.LogCaptureFixture
) -> None:
    from channels.layers import get_channel_layer

    from warlock_sessions.host import group_name

    chat = await socket("/ws/sessions/newer-1/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    await until_turn(chat)
    await get_channel_layer().group_send(group_name("newer-1"), {"type": "warlock.newer"})
    await chat.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    assert (await until_turn(chat))[-1]["type"] == "turn"  # still open, and served
    for _ in range(100):  # on Redis the layer's message may come after the frame
        if "no handler for" in caplog.text:
            break
        await asyncio.sleep(0.02)
    assert "no handler for" in caplog.text
    await chat.disconnect()


async def test_erasing_the_person_closes_their_open_socket(layer: str) -> None:
    from warlock_sessions.erasure import Person, erase

    cookie = await database_sync_to_async(cookie_for)("ana")
    tab = await socket("/ws/sessions/erased-1/", cookie=cookie)
    assert (await tab.connect())[0]
    await tab.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    await until_turn(tab)
    erased = await database_sync_to_async(erase)(Person(session="erased-1"))
    assert erased["sessions"] == 1 and erased["session owners"] == 1
    output = await tab.receive_output(timeout=5)
    while output["type"] != "websocket.close":  # what was on its way before the erase
        output = await tab.receive_output(timeout=5)
    assert output["code"] == 4403
