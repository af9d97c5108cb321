"""A warlock_sessions socket's life, shared by every consumer: who the client is (and its
tenant), how many sockets it may hold open in this process, the channel layer ridden through
outages, and the close when the server stops; its frames are ``frames``'.

Faults (what a user sees during each: docs/deployment.md): a channel layer that cannot be
reached at the handshake does not refuse the socket: it follows its session through the log
alone. However a consumer ends, its client's socket slot is freed."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from typing import Any

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch

from .. import tenancy
from ..backends.outages import RETRY_AFTER, OutageLog, unavailable
from ..conf import warlock_settings
from ..errors import UNAUTHORISED_CLOSE
from ..permissions import VISITOR_KEY, Requester
from .frames import FrameHandling, frame_outage
from .shutdown import open_consumers

logger = logging.getLogger("warlock_sessions.realtime")
#: The channel layer, as sockets meet it: one outage, a bounded number of log lines.
layer_outage = OutageLog(logger, "the channel layer (sockets follow the event log meanwhile)")

UNAUTHORISED = UNAUTHORISED_CLOSE
TOO_MANY_SOCKETS = 4429
#: The handshake met an outage (the client could not be identified): reconnect later.
TRY_AGAIN_LATER = 1013
#: The server is shutting down: reconnect (to another server) with ``after_seq``. Under
#: daphne, which sends no code of the 1000s but 1000, 4012 (and 4013 for the one above).
SERVICE_RESTART = 1012
#: Seconds a stopping server lets a socket's frame in hand finish before it closes it. Under
#: daphne's own ``--application-close-timeout`` (10 s), which ends what is still running.
SHUTDOWN_GRACE = 8.0
#: Seconds a handshake waits for the channel layer before it goes on without it.
LAYER_TIMEOUT = 2.0
#: Seconds a closing consumer waits for its close frame to be written out.
CLOSE_FLUSH = 0.2

#: Open sockets per client in this process (``MAX_SOCKETS_PER_CLIENT``).
_open_sockets: Counter[str] = Counter()


def close_codes(code: int) -> tuple[int, ...]:
    """``code``, then, for one of the 1000s, its private twin ``4000 + code % 1000`` for
    servers that send no code of the 1000s but 1000 (daphne's websocket library)."""
    return (code, 4000 + code % 1000) if 1000 < code < 2000 else (code,)


class WarlockConsumer(FrameHandling):
    client = ""
    #: The client's tenant, as ``client_in_its_tenant`` resolved it; until then none entered (which,
    #: while tenants are on, reads and writes nothing).
    tenant: tenancy.Scope | tenancy.NoScope = tenancy.NO_SCOPE
    shutting_down = False
    channel_layer: Any  # None for a socket whose layer did not answer at the handshake

    @property
    def own_channel(self) -> str | None:
        """This socket's channel, or ``None``: with no channel layer, or one that was away
        when it connected, Channels gives a socket none (and so no group)."""
        return getattr(self, "channel_name", None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' dispatch loop, except that a channel layer that cannot make this socket's
        channel (its server is down) leaves the socket without one, and that the client's
        socket slot is freed however the consumer ends."""
        self.scope = scope
        self.base_send = send
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        sources = [receive]
        if self.channel_layer is not None:
            try:
                async with asyncio.timeout(LAYER_TIMEOUT):  # no task of its own, as wait_for
                    self.channel_name = await self.channel_layer.new_channel()
            except Exception as error:
                layer_outage.failed(error)
                self.channel_layer = None
            else:
                sources.append(functools.partial(self.from_layer, self.channel_name))
        try:
            await await_many_dispatch(sources, self.dispatch)
        except StopConsumer:
            pass
        except asyncio.CancelledError:  # the server is stopping (SIGTERM, a redeploy)
            await self.shut_down()
            raise
        finally:
            self.release_slot()

    async def shut_down(self) -> None:
        """The server stops: the frame in hand may finish (within ``SHUTDOWN_GRACE``), then the
        socket is closed with 1012 (service restart), so the client reconnects, to this server
        once it is back or to another, and reads what it missed from the log (``after_seq``).
        Once only (the server's cancellation and its shutdown trigger may both ask)."""
        if self.shutting_down:
            return
        self.shutting_down = True
        open_consumers.discard(self)
        work = [task for task in self.work_in_hand() if not task.done()]
        if work:
            await asyncio.wait(work, timeout=SHUTDOWN_GRACE)
        if await self.close_with(SERVICE_RESTART):
            # The server drops its connections once every consumer has ended, without
            # flushing what they wrote: give the close frame a moment to leave.
            await asyncio.sleep(CLOSE_FLUSH)

    async def close_with(self, code: int) -> bool:
        """Close with ``code``, or, where the server will not send a code of the 1000s
        (daphne's websocket library sends only 1000 and 3000-4999), with its private twin
        ``4000 + code % 1000`` (1012 → 4012); whether a close went out."""
        for sent in close_codes(code):
            try:
                await self.close(code=sent)
            except Exception:  # a code the server will not send, or the connection is gone
                logger.debug("could not close a socket with %d", sent, exc_info=True)
                continue
            return True
        return False

    def work_in_hand(self) -> list[asyncio.Future[Any]]:
        """What a stopping server lets finish: the frame being handled."""
        return [self.frame] if self.frame is not None else []

    async def from_layer(self, channel_name: str) -> dict[str, Any]:
        """The next message of this socket's channel; while the layer's server is away, wait
        (the log brings the events meanwhile) instead of ending the socket."""
        while True:
            try:
                message: dict[str, Any] = await self.channel_layer.receive(channel_name)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                layer_outage.failed(error)
                await asyncio.sleep(RETRY_AFTER)
                continue
            layer_outage.succeeded()
            return message

    async def group_add(self, group: str) -> None:
        """Join ``group`` on the layer, if the socket has one and the layer answers."""
        await self._on_layer("group_add", group)

    async def group_discard(self, group: str) -> None:
        await self._on_layer("group_discard", group)

    async def _on_layer(self, call: str, group: str) -> None:
        if self.channel_layer is None:
            return
        try:
            await getattr(self.channel_layer, call)(group, self.channel_name)
        except Exception as error:
            layer_outage.failed(error)

    def client_in_its_tenant(self) -> str | None:
        """The client: a user, or an anonymous visitor's Django session; ``None``: nobody, or
        no tenant (``TENANT_RESOLVER``). Reads the session (call it in a worker thread, or on
        the event loop once the auth middleware has read it, as the sessions' socket does): a
        cookie naming no session is no identity, or any made-up cookie would count as one
        more client. The rest of the thread's call runs in the client's tenant, and
        :meth:`admit` enters it for the socket's life."""
        self.tenant = tenancy.resolve(self.requester)
        if self.tenant is tenancy.UNRESOLVED:
            return None
        tenancy.enter(self.tenant)
        user = self.requester.user
        if user is not None and user.is_authenticated:
            return f"user:{user.pk}"
        session = self.requester.session
        if session is None:
            return None
        session.get(VISITOR_KEY)  # loading forgets a key that names no session
        return f"visitor:{session.session_key}" if session.session_key else None

    @property
    def requester(self) -> Requester:
        return Requester(
            user=self.scope.get("user"), session=self.scope.get("session"), scope=self.scope
        )

    async def websocket_connect(self, message: Any) -> None:
        try:
            await super().websocket_connect(message)
        except Exception as error:
            if not unavailable(error):
                raise
            frame_outage.failed(error)
            self.release_slot()
            await self.refuse(TRY_AGAIN_LATER)

    async def refuse(self, code: int) -> None:
        """Accepted, then closed with ``code``: a browser sees the code (a refused handshake
        is only a 1006, like a network error)."""
        await self.accept()
        await self.close_with(code)

    async def admit(self, client: str | None) -> bool:
        """Accept a client with an identity and room for one more socket; refuse the others
        (4403 without an identity, 4429 with too many sockets)."""
        if client is None:
            await self.refuse(UNAUTHORISED)
            return False
        tenancy.enter(self.tenant)  # this task's context: every later frame of the socket
        if _open_sockets[client] >= warlock_settings.MAX_SOCKETS_PER_CLIENT:
            await self.refuse(TOO_MANY_SOCKETS)
            return False
        self.client = client
        _open_sockets[client] += 1
        await self.accept()
        open_consumers.add(self)
        return True

    async def disconnect(self, code: int) -> None:
        self.release_slot()

    def release_slot(self) -> None:
        open_consumers.discard(self)
        if self.client:
            _open_sockets[self.client] -= 1
            if _open_sockets[self.client] <= 0:
                del _open_sockets[self.client]
            self.client = ""

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels tidies the event-loop thread's database connection before every handler: a
        # hop through its one shared sync thread for each frame and each group message. The
        # handlers here reach the database only through in_worker_thread, which tidies the
        # connection it uses, so the hop would only queue every socket behind one thread.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None and not message["type"].startswith("websocket."):
            # A layer message of a newer release (a rolling deploy): not this socket's to die of.
            logger.warning("a socket got a %r message it has no handler for", message["type"])
            return
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        if message["type"].startswith("websocket."):
            await handler(message)  # frames handle their own failures (receive)
            return
        try:  # a channel-layer message: what it could not deliver, the log brings later
            await handler(message)
        except Exception as error:
            if unavailable(error):
                frame_outage.failed(error)
            else:
                logger.exception("a socket failed on a %r message", message["type"])
