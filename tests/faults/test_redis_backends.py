"""The Redis backends with their server stopped: each call fails closed, with one clear error
(``ServiceUnavailableError``), and works again when the server is back, with no new client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from warlock_sessions.checkpoints import RedisCheckpointStore
from warlock_sessions.engine import new_session
from warlock_sessions.errors import ServiceUnavailableError
from warlock_sessions.locks import RedisLock
from warlock_sessions.snapshots import RedisSnapshotStore
from warlock_sessions.stores import RedisStore

pytestmark = pytest.mark.faults

CALLS: dict[str, Callable[[Any], Any]] = {
    "session store": lambda client: RedisStore(client).load("s1"),
    "session save": lambda client: RedisStore(client).save(new_session("s2"), 0),
    "snapshot store": lambda client: RedisSnapshotStore(client).load("run-1"),
    "checkpoint store": lambda client: RedisCheckpointStore(client).load("boot", "s1"),
    "lock": lambda client: RedisLock(client, timeout=1).with_lock("k", lambda: "ran"),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_redis_backend_fails_closed_while_its_server_is_away(
    call: Callable[[Any], Any], redis_server: Any
) -> None:
    client = redis.Redis.from_url(redis_server.url(), socket_connect_timeout=1, socket_timeout=1)
    redis_server.stop()
    try:
        with pytest.raises(ServiceUnavailableError) as refused:
            call(client)
        assert refused.value.service == "Redis"
    finally:
        redis_server.start()
    call(client)  # the same client, once the server is back
