"""What every warlock_sessions socket shares: who the client is, how many sockets it may hold
open in this process, frames checked before they are parsed, errors as ``error`` events, and
no hop through Channels' one database thread."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import orjson
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from ..conf import warlock_settings
from ..errors import InvalidInputError
from ..host.wire import loads
from ..permissions import VISITOR_KEY, Requester

UNAUTHORISED = 4403
TOO_MANY_SOCKETS = 4429

#: Open sockets per client in this process (``MAX_SOCKETS_PER_CLIENT``).
_open_sockets: Counter[str] = Counter()


class WarlockConsumer(AsyncJsonWebsocketConsumer):
    client = ""

    def identity(self) -> str | None:
        """The client: a user, or an anonymous visitor's Django session; ``None``: nobody.
        Reads the session (call it in a worker thread): a cookie naming no session is no
        identity, or any made-up cookie would count as one more client."""
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
        return Requester(user=self.scope.get("user"), session=self.scope.get("session"))

    async def refuse(self, code: int) -> None:
        """Accepted, then closed with ``code``: a browser sees the code (a refused handshake
        is only a 1006, like a network error)."""
        await self.accept()
        await self.close(code=code)

    async def admit(self, client: str | None) -> bool:
        """Accept a client with an identity and room for one more socket; refuse the others
        (4403 without an identity, 4429 with too many sockets)."""
        if client is None:
            await self.refuse(UNAUTHORISED)
            return False
        if _open_sockets[client] >= warlock_settings.MAX_SOCKETS_PER_CLIENT:
            await self.refuse(TOO_MANY_SOCKETS)
            return False
        self.client = client
        _open_sockets[client] += 1
        await self.accept()
        return True

    async def disconnect(self, code: int) -> None:
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
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def error(self, code: str, detail: str) -> None:
        await self.send_json({"type": "error", "code": code, "detail": detail})

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        return loads(text_data)

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        try:
            return orjson.dumps(content).decode()
        except orjson.JSONEncodeError:  # what orjson refuses (lone surrogates, huge integers)
            return json.dumps(content)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        size = len(text_data or bytes_data or "")
        if size > warlock_settings.MAX_BODY_BYTES:
            await self.error("payload-too-large", "the frame is too large")
            return
        if text_data is None:
            await self.error("invalid-json", "frames are JSON objects sent as text")
            return
        try:
            content = await self.decode_json(text_data)
        except InvalidInputError as error:
            await self.error("invalid-json", str(error))
            return
        # Whatever the handling raises is not the frame's fault (it once all read as bad JSON).
        await self.receive_json(content, **kwargs)
