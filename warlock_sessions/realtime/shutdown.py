"""A server that stops (SIGTERM, a redeploy) closes every warlock socket with 1012 (service
restart; 4012 under daphne, which sends no 1012) first, after its frame in hand: clients
reconnect, to another server or to this one once it is back, and read what they missed from
the log (``after_seq``).

Consumers close themselves when the server cancels them (``WarlockConsumer.shut_down``).
daphne cancels its applications before it drops their connections, but a server holding an
idle keep-alive HTTP connection fails to (daphne 4.2: ``KeyError: 'application_instance'``)
and drops every socket as a network error (1006). So under daphne the sockets are also
closed from a shutdown trigger of its reactor, installed when the routing is imported."""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import WarlockConsumer

#: The sockets of this process that have been accepted and not yet closed.
open_consumers: weakref.WeakSet[WarlockConsumer] = weakref.WeakSet()


async def close_open_sockets() -> None:
    """Close every open warlock socket of this process as a stopping server does."""
    consumers = list(open_consumers)
    if consumers:
        await asyncio.gather(*(consumer.shut_down() for consumer in consumers))


def close_sockets_when_daphne_stops() -> None:
    """Under daphne (its Twisted reactor is running this process), close the sockets before
    the reactor drops its connections; elsewhere, nothing."""
    if "twisted.internet.reactor" not in sys.modules or "daphne.server" not in sys.modules:
        return
    from twisted.internet import defer, reactor

    def before_shutdown() -> Any:
        return defer.Deferred.fromFuture(asyncio.ensure_future(close_open_sockets()))

    core: Any = reactor
    core.addSystemEventTrigger("before", "shutdown", before_shutdown)
