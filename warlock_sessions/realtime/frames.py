"""A socket's frames, as every warlock_sessions socket takes them: checked before they are
parsed (size, JSON), throttled by the project's DRF throttles, traced, and every failure
answered through ``failures``: an ``error`` frame, or a close; a frame whose handling meets an
outage is answered ``unavailable``, any other failure is logged and answered
``server-error``, never a 1011, and the socket stays open."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import orjson
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from rest_framework.settings import api_settings

from ..backends.outages import OutageLog
from ..conf import warlock_settings
from ..errors import InvalidInputError
from ..failures import Failure, client_failure, log_for_operators
from ..host.threads import in_worker_thread
from ..host.wire import loads
from ..permissions import SocketRequest
from ..tracing import span

logger = logging.getLogger("warlock_sessions.realtime")
#: What a frame's ``type`` looks like (``message``, ``handover.take``).
FRAME_TYPE = re.compile(r"[a-z][a-z_.-]{0,31}")
#: Frames whose handling met a database or Redis outage.
frame_outage = OutageLog(logger, "socket frames (answered 'unavailable')")


class FrameHandling(AsyncJsonWebsocketConsumer):
    """What a socket does with each client frame, before and after its consumer's own
    ``receive_json``."""

    #: The handling of the frame in hand, shielded from a stopping server's cancellation.
    frame: asyncio.Future[None] | None = None

    async def error(self, code: str, detail: str, **extra: Any) -> None:
        await self.send_json({"type": "error", "code": code, "detail": detail, **extra})

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
        self.frame = asyncio.ensure_future(self.handle_frame(content, **kwargs))
        await asyncio.shield(self.frame)

    async def handle_frame(self, content: Any, **kwargs: Any) -> None:
        # Whatever the handling raises is not the frame's fault (it once all read as bad JSON),
        # and does not end the socket.
        kind = content.get("type") if isinstance(content, dict) else None
        # A client's frame type goes into the span only when it is a frame type's shape.
        kind = kind if isinstance(kind, str) and FRAME_TYPE.fullmatch(kind) else "other"
        try:
            with span(
                "warlock frame",
                {"warlock.socket": type(self).__name__, "warlock.frame.type": kind},
            ):
                if api_settings.DEFAULT_THROTTLE_CLASSES:
                    wait = await in_worker_thread(self.throttle_wait)()
                    if wait is not None:
                        await self.throttled(wait)
                        return
                try:
                    await self.receive_json(content, **kwargs)
                except Exception as error:
                    if not await self.refused(error):
                        raise  # the server's failure, not the frame's: the span says so
        except Exception as error:
            await self.failed_frame(error)
        else:
            frame_outage.succeeded()

    def throttle_wait(self) -> float | None:
        """``None`` when the project's DRF throttles (``DEFAULT_THROTTLE_CLASSES`` and their
        rates) let this frame through, else the seconds to wait; reads the throttles' cache."""
        request = SocketRequest(self.scope)
        kinds: list[Any] = api_settings.DEFAULT_THROTTLE_CLASSES  # type: ignore[assignment]
        throttles = [kind() for kind in kinds]
        waits = [
            throttle.wait() or 0.0
            for throttle in throttles
            if not throttle.allow_request(request, self)
        ]
        return max(waits) if waits else None

    async def throttled(self, wait: float, detail: str = "Too many frames") -> None:
        await self.send_json(
            {
                "type": "error",
                "code": "throttled",
                "detail": f"{detail}: try again in {wait:.0f} seconds.",
                "retry_after": wait,
            }
        )

    async def refused(self, error: BaseException) -> bool:
        """Tell the client of an error its frame asked for (one a client is told of, not the
        server's: below 500); whether ``error`` was one."""
        failure = client_failure(error)
        if failure is None or failure.status >= 500:
            return False
        await self.tell(error, failure)
        return True

    async def failed_frame(self, error: BaseException) -> None:
        """The one answer to any other failure of a frame: what its client is told
        (``failures``), or, for a bug, ``server-error`` and the log."""
        failure = client_failure(error)
        if failure is None:
            logger.error("a socket frame failed", exc_info=error)
            await self.error("server-error", "The server failed on this frame; it is logged.")
            return
        if failure.outage:
            frame_outage.failed(error)
        await self.tell(error, failure)

    async def tell(self, error: BaseException, failure: Failure) -> None:
        log_for_operators(error)
        if failure.close_code is not None:
            await self.close(code=failure.close_code)  # as for any id it may not use
            return
        await self.error(failure.code, failure.detail, **failure.fields)
