"""Servers of the example project (daphne, the example's pooled PostgreSQL settings) while
their PostgreSQL restarts, goes away and comes back, and while their Redis channel layer goes
away: no 500, no HTML page, no socket dropped, no restart of the server needed."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import websockets

from .conftest import Deployment, wait_for

pytestmark = pytest.mark.faults


def visitor(base: str) -> httpx.Client:
    """An anonymous visitor with a Django session, as the chat page makes one."""
    client = httpx.Client(base_url=base, timeout=30)
    assert client.get("/").status_code == 200
    client.headers["X-CSRFToken"] = client.cookies["csrftoken"]
    return client


def turn(client: httpx.Client, session_id: str, message_id: str) -> httpx.Response:
    return client.post(
        f"/api/sessions/{session_id}/turn/",
        json={"message": {"text": "I'd like to book an appointment", "id": message_id}},
    )


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["Retry-After"].isdigit()
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "unavailable"


def test_http_rides_through_restarts_and_answers_503_during_an_outage(deployment: Deployment):
    _server, base = deployment.server()
    client = visitor(base)
    assert turn(client, "http-fault", "m1").status_code == 200

    deployment.postgres.terminate_backends()  # every pooled connection is dead now
    assert turn(client, "http-fault", "m2").status_code == 200
    deployment.postgres.restart()
    assert turn(client, "http-fault", "m3").status_code == 200

    deployment.postgres.stop()
    started = time.monotonic()
    assert_unavailable(turn(client, "http-fault", "m4"))
    assert time.monotonic() - started < 8  # the pool's 3 s, not a 30 s queue
    assert_unavailable(client.get("/api/sessions/"))
    assert_unavailable(client.get("/api/conversations/http-fault-talk/"))
    page = client.get("/")  # a plain page: a short 503, not Django's 500 page
    assert page.status_code == 503 and "Retry-After" in page.headers
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"] == {"database": "unavailable", "channel_layer": "ok"}

    deployment.postgres.start()
    assert wait_for(lambda: turn(client, "http-fault", "m4").status_code == 200, 20)
    assert client.get("/readyz").json() == {
        "status": "ok",
        "checks": {"database": "ok", "channel_layer": "ok"},
    }
    events = client.get("/api/sessions/http-fault/events/").json()["events"]
    users = [e.get("id") for e in events if e.get("role") == "user"]
    assert users == ["m1", "m2", "m3", "m4"]  # each once: the 503 changed nothing


class Chat:
    """A socket of a visitor on one session, reading frames as a chat page does."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.frames: list[dict[str, Any]] = []

    async def send(self, text: str, message_id: str) -> None:
        await self.socket.send(json.dumps({"type": "message", "text": text, "id": message_id}))

    async def next_frame(self, timeout: float = 10) -> dict[str, Any]:
        frame = json.loads(await asyncio.wait_for(self.socket.recv(), timeout))
        self.frames.append(frame)
        return frame

    async def until(self, kind: str, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            frame = await self.next_frame(max(0.1, deadline - time.monotonic()))
            if frame["type"] in (kind, "error"):
                return frame


def chat_socket(base: str, client: httpx.Client, session_id: str) -> Any:
    cookies = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    return websockets.connect(
        base.replace("http", "ws") + f"/ws/sessions/{session_id}/",
        additional_headers={"Cookie": cookies, "Origin": base},
        open_timeout=10,
    )


def test_a_socket_rides_through_restarts_and_an_outage(deployment: Deployment):
    _server, base = deployment.server()
    client = visitor(base)

    async def talk() -> None:
        async with chat_socket(base, client, "socket-fault") as socket:
            chat = Chat(socket)
            await chat.send("I'd like to book an appointment", "m1")
            assert (await chat.until("turn"))["type"] == "turn"

            deployment.postgres.terminate_backends()  # the loop's connections die too
            await chat.send("My name is Ana Souza", "m2")
            assert (await chat.until("turn"))["type"] == "turn", chat.frames

            deployment.postgres.terminate_backends()  # a new visitor's socket is admitted next
            async with chat_socket(base, visitor(base), "socket-fault-admitted") as fresh:
                other = Chat(fresh)
                await other.send("I'd like to book an appointment", "f1")
                assert (await other.until("turn"))["type"] == "turn", other.frames

            deployment.postgres.stop()
            await chat.send("ana@example.com", "m3")
            error = await chat.until("turn")
            assert error["type"] == "error" and error["code"] == "unavailable", error
            assert error["retry_after"] > 0
            async with chat_socket(base, client, "socket-fault-new") as late:  # one more, now
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await asyncio.wait_for(late.recv(), 15)
                assert closed.value.rcvd is not None
                assert closed.value.rcvd.code == 4013  # try again later (1013, under daphne)

            deployment.postgres.start()
            # The client resends what was not echoed; the socket is the same one.
            for _ in range(40):
                await chat.send("ana@example.com", "m3")
                if (await chat.until("turn"))["type"] == "turn":
                    break
                await asyncio.sleep(0.5)
            else:
                raise AssertionError(chat.frames)
            assert not any(f["type"] == "error" and f["code"] != "unavailable" for f in chat.frames)

    asyncio.run(talk())


def test_sockets_connect_and_follow_the_log_while_redis_is_down(
    deployment: Deployment, redis_server
):
    deployment.redis_url = redis_server.url()
    server, base = deployment.server()
    client = visitor(base)

    async def talk() -> None:
        redis_server.stop()
        async with (
            chat_socket(base, client, "redis-fault") as first,
            chat_socket(base, client, "redis-fault") as second,
        ):
            one, other = Chat(first), Chat(second)
            await one.send("I'd like to book an appointment", "m1")
            assert (await one.until("turn"))["type"] == "turn", one.frames
            # The other tab has no layer to hear it from: the log brings it within a second.
            assert (await other.until("turn", timeout=5))["type"] == "turn", other.frames
            for index in range(20):  # an outage of many turns is still a few lines of log
                await one.send(f"turn {index}", f"n{index}")
                assert (await one.until("turn"))["type"] == "turn", one.frames
        redis_server.start()
        async with chat_socket(base, client, "redis-fault") as third:
            again = Chat(third)
            await again.send("My name is Ana Souza", "m2")
            assert (await again.until("turn"))["type"] == "turn", again.frames

    asyncio.run(talk())
    ours = [line for line in server.output().splitlines() if "channel layer" in line]
    assert 1 <= len(ours) <= 6, ours
    layers = [line for line in server.output().splitlines() if "in receive task" in line]
    assert len(layers) <= 1, layers  # channels_redis's, once a second, through RepeatFilter
    assert "Internal Server Error" not in server.output()


def test_a_server_stopped_with_sigterm_closes_its_sockets_for_a_restart(deployment: Deployment):
    server, base = deployment.server()
    client = visitor(base)

    async def talk() -> int:
        async with chat_socket(base, client, "sigterm") as socket:
            chat = Chat(socket)
            await chat.send("I'd like to book an appointment", "m1")
            assert (await chat.until("turn"))["type"] == "turn"
            server.popen.send_signal(signal.SIGTERM)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), 15)
            return int(closed.value.rcvd.code) if closed.value.rcvd else 1006

    # Service restart: reconnect, with after_seq. daphne sends no 1012, so its private twin.
    assert asyncio.run(talk()) == 4012
    assert server.popen.wait(20) == 0


def test_one_visitor_flooding_its_conversation_does_not_stall_another(deployment: Deployment):
    """40 sends at once from one visitor to one conversation, on the example's pool of 16: each
    is answered (a turn, busy, or unavailable, never a 500), and another visitor's list
    answers meanwhile as fast as ever."""
    _server, base = deployment.server()
    flooder, other = visitor(base), visitor(base)
    assert other.get("/api/sessions/").status_code == 200

    def send(index: int) -> int:
        with httpx.Client(base_url=base, cookies=flooder.cookies, timeout=60) as client:
            client.headers["X-CSRFToken"] = flooder.headers["X-CSRFToken"]
            return client.post(
                "/api/conversations/flood/send/", json={"input": f"calculate {index}*2"}
            ).status_code

    def other_lists() -> list[float]:
        took = []
        for _ in range(10):
            started = time.monotonic()
            assert other.get("/api/sessions/").status_code == 200
            took.append(time.monotonic() - started)
        return took

    with ThreadPoolExecutor(max_workers=41) as pool:
        sends = [pool.submit(send, index) for index in range(40)]
        lists = pool.submit(other_lists)
        statuses = [future.result(90) for future in sends]
        took = lists.result(90)
    assert set(statuses) <= {200, 409, 503}, statuses
    assert statuses.count(200) >= 1
    assert max(took) < 2.0, took
