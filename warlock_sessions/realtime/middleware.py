"""``HandshakeOutageGuard``: a websocket whose handshake meets an outage is accepted and closed
with 1013 (try again later), never a failed handshake (an HTTP 500).

Channels' ``AuthMiddlewareStack`` reads the visitor's Django session and user from the
database before any consumer runs; while the database is away that raises, and the server
fails the handshake with a 500, which a browser sees as a network error. Wrap the stack::

    "websocket": AllowedHostsOriginValidator(
        HandshakeOutageGuard(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    )
"""

from __future__ import annotations

from typing import Any

from ..backends.outages import unavailable
from .base import TRY_AGAIN_LATER, close_codes, frame_outage


class HandshakeOutageGuard:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope.get("type") != "websocket":
            return await self.inner(scope, receive, send)
        answered = False

        async def sending(message: Any) -> None:
            nonlocal answered
            answered = True
            await send(message)

        try:
            return await self.inner(scope, receive, sending)
        except Exception as error:
            if answered or not unavailable(error):
                raise
            frame_outage.failed(error)
        await receive()  # the client's websocket.connect
        await send({"type": "websocket.accept"})
        for code in close_codes(TRY_AGAIN_LATER):
            try:
                await send({"type": "websocket.close", "code": code})
            except Exception:
                continue
            return None
        return None
