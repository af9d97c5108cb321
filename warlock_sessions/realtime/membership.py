"""Whether a socket is alone on its session's group, so that its own delivery is all its
turn's events need and nothing is pushed through the layer (which would only bring the same
frames back to it, to be read and dropped).

Asked after the turn's commit: a socket that joins the group later reads the events from the
log when it is admitted, and the log follower brings any it missed within a second, so a
wrong "alone" costs a delay, never an event. Any doubt (another layer, a layer whose insides
changed, Redis unreachable) answers "not alone", and the push goes out as before.

On Redis, where asking costs a round trip, a socket asks once and then keeps the answer
(:class:`Company`): a socket that joins the group says so to its members (:func:`announce`),
and the answer is asked again after ``ALONE_FOR`` seconds, should a notice have been lost.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger("warlock_sessions.realtime")
#: Seconds a Redis that no longer answers may keep a turn from its push: then it is pushed.
ASK_TIMEOUT = 1.0
#: Seconds a socket that Redis said was alone trusts it without asking again.
ALONE_FOR = 10.0
#: Where a joining socket's notice names it. The notice is a ``warlock.events`` message with
#: no events, which a socket of an older release delivers as nothing (a rolling deploy).
JOINED = "joined"


class Company:
    """What one socket knows of the other members of its session's group."""

    def __init__(self) -> None:
        #: Until when (``loop.time()``) no other process has a member, as Redis last said.
        self.no_other_process_until = 0.0

    async def alone(self, layer: Any, group: str, channel_name: str | None) -> bool:
        """Whether ``channel_name`` is the only member of ``group`` in every process
        (``None``: a socket in no group, which cannot tell)."""
        if layer is None or channel_name is None or layer is not get_channel_layer():
            return False  # the push goes through the default layer
        try:
            if isinstance(layer, InMemoryChannelLayer):  # it never crosses processes
                return set(layer.groups.get(group, ())) <= {channel_name}
            if type(layer).__name__ == "RedisPubSubChannelLayer":
                return await self._alone_on_redis(layer, group, channel_name)
        except Exception:  # the layer's insides changed, or Redis is away: push
            logger.debug("could not tell whether a socket is alone on %s", group, exc_info=True)
        return False

    def first_member(self) -> None:
        """This socket's claim made the session: no socket elsewhere follows it yet, and any
        that comes announces itself, so Redis need not be asked now (nor in a storm of new
        chats, where every round trip would wait on the layer's one connection)."""
        self.no_other_process_until = asyncio.get_running_loop().time() + ALONE_FOR

    def joined(self) -> None:
        """Another socket joined the group (its notice came): ask again before the next turn."""
        self.no_other_process_until = 0.0

    async def _alone_on_redis(self, layer: Any, group: str, channel_name: str) -> bool:
        """channels_redis' pub/sub layer: no other member in this process, and this process's
        connection the only one subscribed to the group's Redis channel (``PUBSUB NUMSUB``,
        asked at most every ``ALONE_FOR`` seconds while the answer holds)."""
        loop_layer = layer._get_layer()
        group_channel = loop_layer._get_group_channel_name(group)
        if set(loop_layer.groups.get(group_channel, ())) - {channel_name}:
            return False
        now = asyncio.get_running_loop().time()
        if now < self.no_other_process_until:
            return True
        shard = loop_layer._get_shard(group_channel)
        async with asyncio.timeout(ASK_TIMEOUT), shard._lock:  # the layer's one connection
            shard._ensure_redis()
            [(_, subscribed)] = await shard._redis.pubsub_numsub(group_channel)
        if int(subscribed) > 1:
            return False
        self.no_other_process_until = now + ALONE_FOR
        return True


async def announce(layer: Any, group: str, session_id: str, channel_name: str) -> None:
    """Tell the members of ``group`` in other processes that ``channel_name`` joined it, so
    none keeps believing it is alone. (In memory every member is seen: nothing is sent.)"""
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return
    await layer.group_send(
        group,
        {"type": "warlock.events", "session_id": session_id, "events": [], JOINED: channel_name},
    )
