"""The log, followed: twice a second, one query per event loop reads where the followed
sessions' event logs end; a socket still behind what the previous read found (so for half a
second to a second) catches up from the log.

The channel layer only makes delivery faster. The in-memory layer never crosses processes (a
wake fired by a worker process reaches no socket through it) and any layer may drop a message,
so without this a socket would see such events only after the user's next message."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from typing import Any, Protocol

from django.db.models import Max

from ..backends.outages import OutageLog
from ..host.threads import in_worker_thread
from ..models import SessionEvent
from ..tenancy import unscoped_context

logger = logging.getLogger("warlock_sessions.realtime")
read_outage = OutageLog(logger, "reading the event log for the sockets")

#: Seconds between two reads of the log. A socket is caught up from the log once it is still
#: behind what the previous read found: events the layer brought meanwhile cost no read.
FOLLOW_INTERVAL = 0.5
#: Sessions per query.
BATCH = 500


class Follower(Protocol):
    session_id: str

    @property
    def last_seq(self) -> int:
        """The last ``seq`` the socket sent its client."""
        ...

    #: ``loop.time()`` of the socket's last send or turn: a socket active since the previous
    #: read is not caught up from the log (a gap shows on its next delivery anyway), which
    #: keeps a busy server from adding reads to its backlog.
    last_active: float

    async def log_moved(self, latest: int) -> None:
        """The log of the socket's session ends at ``latest``, past the socket's ``last_seq``."""
        ...


def latest_seqs(session_ids: Iterable[str]) -> dict[str, int]:
    """The last logged ``seq`` of each of ``session_ids`` that has events."""
    ids = list(session_ids)
    latest: dict[str, int] = {}
    for start in range(0, len(ids), BATCH):
        rows = (
            SessionEvent.objects.filter(session_id__in=ids[start : start + BATCH])
            .values("session_id")
            .annotate(last=Max("seq"))
            .values_list("session_id", "last")
        )
        latest.update(rows)
    return latest


class LogFollower:
    """The sockets of one event loop that follow a session, and the task that reads the log."""

    def __init__(self) -> None:
        #: One set for the loop (each socket names its session): a set per session would cost
        #: an idle chat more than the socket's own entry.
        self.sockets: weakref.WeakSet[Any] = weakref.WeakSet()
        self.task: asyncio.Task[None] | None = None
        self.previous: tuple[dict[str, int], float] = ({}, 0.0)  # the last read, and when

    def follow(self, socket: Follower) -> None:
        self.sockets.add(socket)
        if self.task is None or self.task.done():
            # It reads the log for sockets of every tenant, each admitted in its own.
            self.task = asyncio.get_running_loop().create_task(
                self.run(), context=unscoped_context()
            )

    def unfollow(self, socket: Follower) -> None:
        self.sockets.discard(socket)

    async def run(self) -> None:
        while self.sockets:
            await asyncio.sleep(FOLLOW_INTERVAL)
            try:
                await self.tick()
            except Exception as error:  # a database outage: try again next time
                read_outage.failed(error)
            else:
                read_outage.succeeded()

    async def tick(self) -> None:
        read_at = asyncio.get_running_loop().time()
        watched = self._idle_sockets(read_at - FOLLOW_INTERVAL)
        if not watched:
            self.previous = ({}, read_at)
            return
        latest = await in_worker_thread(latest_seqs)(watched)
        (previous, since), self.previous = self.previous, (latest, read_at)
        # Behind: the log had moved past the socket at the previous read, and the socket has
        # received nothing since (an event in flight would have reached it by now).
        behind = [
            (socket, previous[session_id])
            for session_id, sockets in watched.items()
            for socket in sockets
            if previous.get(session_id, 0) > socket.last_seq and socket.last_active < since
        ]
        results = await asyncio.gather(
            *(socket.log_moved(latest) for socket, latest in behind), return_exceptions=True
        )
        for result in results:
            if isinstance(result, Exception):
                logger.warning("a socket could not catch up from the log", exc_info=result)

    def _idle_sockets(self, idle_since: float) -> dict[str, list[Follower]]:
        """Per session, its sockets idle since ``idle_since``. Only those are read for: an
        active one learns of a gap from its next delivery, and a busy server is spared reads
        it does not need."""
        idle: dict[str, list[Follower]] = {}
        for socket in list(self.sockets):
            if socket.last_active < idle_since:
                idle.setdefault(socket.session_id, []).append(socket)
        return idle


_followers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LogFollower] = (
    weakref.WeakKeyDictionary()
)


def log_follower() -> LogFollower:
    """The follower of the running event loop."""
    loop = asyncio.get_running_loop()
    follower = _followers.get(loop)
    if follower is None:
        follower = _followers[loop] = LogFollower()
    return follower
