"""Host.ahandle: the async entry point runs turns concurrently, each with its own connection."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from warlock_sessions.host import Host
from warlock_sessions.models import OutboundMessage
from warlock_sessions.stores import DjangoStore

from .conftest import echo_agent


@pytest.mark.asyncio
async def test_ahandle_runs_concurrent_conversations(alias: str) -> None:
    host = Host(echo_agent(), DjangoStore(using=alias))

    results = await asyncio.gather(
        *(
            host.ahandle(f"chat-{index}", {"message": {"text": "oi", "id": "m1"}})
            for index in range(8)
        )
    )

    assert [result.messages[0]["key"] for result in results] == ["idle:m1"] * 8
    assert {result.session["version"] for result in results} == {1}
    assert await sync_to_async(outbox_size)(alias) == 8


def outbox_size(alias: str) -> int:
    """Counted in asgiref's worker thread, whose connection must not outlive the test."""
    try:
        return OutboundMessage.objects.using(alias).count()
    finally:
        connections[alias].close()
