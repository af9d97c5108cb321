"""A retention prune of a session whose owner still has it open: the socket is told, as for a
deletion; and a turn on the session after a prune whose notice did not reach it makes it its
sender's again, never an ownerless session nobody can reach."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.utils import timezone

from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import Session, SessionOwner

from .test_session_socket import layer, socket, until_turn

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]
__all__ = ["layer"]


def ended_long_ago(session_id: str) -> None:
    Session.objects.filter(id=session_id).update(
        run_statuses="", updated_at=timezone.now() - timedelta(days=365)
    )


async def test_a_prune_closes_the_sockets_following_what_it_deletes(layer: str) -> None:
    chat = await socket("/ws/sessions/pruned-1/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(chat)
    await database_sync_to_async(ended_long_ago)("pruned-1")
    await database_sync_to_async(call_command)("warlock_prune", "--pause", "0")
    assert await chat.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


async def test_a_turn_after_an_unannounced_prune_makes_the_session_its_senders(
    layer: str,
) -> None:
    chat = await socket("/ws/sessions/pruned-2/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
    await until_turn(chat)
    await database_sync_to_async(ended_long_ago)("pruned-2")
    # Pruned by a process whose notice never reaches this socket (another server's layer).
    deleted = await database_sync_to_async(prune)(Retention(), pause=-1)
    assert deleted["sessions"] == 1

    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m2"})
    frames = await until_turn(chat)
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))
    assert frames[-1]["type"] == "turn" and frames[-1]["version"] == 1
    owners = await database_sync_to_async(
        lambda: list(SessionOwner.objects.filter(session_id="pruned-2"))
    )()
    assert len(owners) == 1 and owners[0].user_id is not None
    await chat.disconnect()
