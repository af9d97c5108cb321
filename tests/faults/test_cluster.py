"""Two ASGI servers and two workers of the example project on the Redis channel layer and one
PostgreSQL, as docs/deployment.md draws the deployment: chats driven through both servers,
each with a second tab on the other server, and their reminders fired by whichever worker
claims them. Every acknowledged message is in the log once, every socket gets every event of
its chat once and in order, and every wake fires once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from .conftest import Deployment
from .test_server_faults import Chat, chat_socket, visitor

pytestmark = pytest.mark.faults

CHATS = 6
SAID = ["I'd like to book an appointment", "My name is Ana Souza", "ana@example.com"]


async def _drive(index: int, bases: tuple[str, str]) -> dict[str, Any]:
    """One visitor's chat: a tab on each server; the tabs take turns to speak, each message
    acknowledged (its turn frame) before the next; then both wait for the reminder."""
    session_id = f"cluster-{index}"
    first, second = bases if index % 2 == 0 else bases[::-1]
    client = await asyncio.to_thread(visitor, first)
    async with (
        chat_socket(first, client, session_id) as one,
        chat_socket(second, client, session_id) as other,
    ):
        tabs = [Chat(one), Chat(other)]
        sent = []
        for number, text in enumerate(SAID):
            speaker = tabs[number % 2]
            message_id = f"{session_id}-m{number}"
            await speaker.send(text, message_id)
            await _acknowledged(speaker, message_id, timeout=20)
            sent.append(message_id)
        for tab in tabs:  # the reminder, fired by a worker of the two, reaches both tabs
            await _until_text(tab, "Are you still there?", timeout=40)
        return {"session": session_id, "sent": sent, "frames": [tab.frames for tab in tabs]}


async def _acknowledged(chat: Chat, message_id: str, timeout: float) -> None:
    """Until the turn of ``message_id`` is stored: its echo, then a turn frame after it (the
    other tab's turns reach this socket too, so a turn frame alone proves nothing)."""
    deadline = time.monotonic() + timeout
    while True:
        echoes = [i for i, f in enumerate(chat.frames) if f.get("id") == message_id]
        errors = [f for f in chat.frames if f["type"] == "error"]
        assert not errors, chat.frames
        if echoes and any(f["type"] == "turn" for f in chat.frames[echoes[0] :]):
            return
        await chat.next_frame(max(0.1, deadline - time.monotonic()))


async def _until_text(chat: Chat, text: str, timeout: float) -> None:
    """Until a message saying ``text`` and the turn frame that ends its turn."""
    deadline = time.monotonic() + timeout
    while True:
        said = [i for i, f in enumerate(chat.frames) if text in str(f.get("text", ""))]
        if said and any(f["type"] == "turn" for f in chat.frames[said[0] :]):
            return
        await chat.next_frame(max(0.1, deadline - time.monotonic()))


def test_two_servers_and_two_workers_lose_nothing_and_send_nothing_twice(
    deployment: Deployment, redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    # The demo reminds a silent user after two minutes; here after a few seconds (once per
    # chat, whenever it falls due: the demo's reminder flow starts once).
    monkeypatch.setenv("DEMO_REMINDER_AFTER", "4s")
    deployment.redis_url = redis_server.url()
    servers = [deployment.server(), deployment.server()]
    workers = [deployment.worker(), deployment.worker()]
    bases = (servers[0][1], servers[1][1])

    async def everything() -> list[dict[str, Any]]:
        return await asyncio.gather(*(_drive(index, bases) for index in range(CHATS)))

    chats = asyncio.run(everything())

    for chat in chats:
        log = deployment.sql(
            "SELECT seq, type, payload FROM warlock_sessions_sessionevent "
            "WHERE session_id = %s ORDER BY seq",
            (chat["session"],),
        )
        users = [payload["id"] for _seq, kind, payload in log if payload.get("role") == "user"]
        assert users == chat["sent"], (chat["session"], users)  # each once, in order
        reminders = [p for _s, k, p in log if "Are you still there?" in str(p.get("text", ""))]
        assert len(reminders) == 1, (chat["session"], reminders)
        seqs = [seq for seq, _kind, _payload in log]
        for frames in chat["frames"]:
            heard = [frame["seq"] for frame in frames if "seq" in frame]
            # Every event of the chat, once each and in order, on both servers' sockets.
            assert heard == seqs[: len(heard)] and set(heard) == set(seqs), (heard, seqs)
    wakes = deployment.sql(
        "SELECT status, sum(attempts), count(*) FROM warlock_sessions_wake "
        "WHERE session_id LIKE 'cluster-%%' AND key LIKE 'silence:reminder:%%' "
        "GROUP BY status"
    )
    assert wakes == [("fired", 0, CHATS)], wakes  # each fired, at its first attempt
    fired_by = [worker.output().count("wake fired key=silence:reminder") for worker in workers]
    assert sum(fired_by) == CHATS, fired_by  # once each, by one worker or the other
    for process, _base in servers:
        assert "Internal Server Error" not in process.output()
        assert "Traceback" not in process.output(), process.output()[-3000:]
    assert time.monotonic() - started < 60, "the harness is bounded to a minute"
    with httpx.Client(base_url=bases[1]) as other:
        assert other.get("/readyz").json()["checks"] == {"database": "ok", "channel_layer": "ok"}
