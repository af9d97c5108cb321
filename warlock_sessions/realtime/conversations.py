"""``ws/conversations/{id}/``: a chat UI's live connection to one conversation session.

The client sends ``{"type": "send", "input": "<text>"}``; the socket streams the agent's
events as they happen (``{"type": "delta", "text"}`` as the model writes, ``tool-call``,
``tool-result``, ``compaction``), then ``{"type": "result", "text", "run_id", "usage",
"messages", "conversation"}`` once the turn is stored, or ``{"type": "error", "code",
"detail"}`` (the conversation then unchanged). Turns of one socket run one after another.

Access is the API's: a client with an identity is accepted; a conversation it may not use
closes the socket with 4403 (at once when it exists, else when someone else's first send
made it). Its first send to an id nobody uses makes the conversation its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..agents import get_conversation_agent
from ..conf import warlock_settings
from ..conversations import AgentResult, DjangoConversationStore, session
from ..conversations.wire import failure, result_json, run_failure, send_input
from ..errors import InvalidInputError
from ..host.threads import in_worker_thread
from ..host.wire import session_id_input
from ..models import Conversation
from ..permissions import SessionAccess, SessionPolicy, owner_fields
from .base import UNAUTHORISED, WarlockConsumer

logger = logging.getLogger("warlock_sessions.realtime")

SEND_ACTION = "send"


class ConversationConsumer(WarlockConsumer):
    async def connect(self) -> None:
        try:
            self.conversation_id = session_id_input(
                self.scope["url_route"]["kwargs"]["conversation_id"]
            )
        except InvalidInputError:
            await self.close(code=UNAUTHORISED)  # as for any id it may not use
            return
        if not await self.admit(self.identity()):
            return
        if await in_worker_thread(self.may_send)(claim=False) is False:
            await self.close(code=UNAUTHORISED)

    def store(self, *, claim: bool) -> DjangoConversationStore:
        return DjangoConversationStore(owner=owner_fields(self.requester) if claim else None)

    def may_send(self, *, claim: bool) -> bool | None:
        """Whether this client may send to the conversation (``None``: nobody uses the id).
        With ``claim`` an id nobody uses becomes the client's first."""
        store = self.store(claim=False)
        header = store.header(self.conversation_id)
        if header is None and claim:
            header = self.store(claim=True).claim(self.conversation_id)
        if header is None:
            return None
        access = SessionAccess(self.conversation_id, header)
        policy: SessionPolicy = warlock_settings.PERMISSION()
        return policy.can_see(self.requester, access) and policy.can_act(
            self.requester, SEND_ACTION, access
        )

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "send":
            await self.error("invalid-input", 'a frame is {"type": "send", "input": "<text>"}')
            return
        try:
            await self.turn(send_input(content), get_conversation_agent())
        except Exception as error:
            reported = failure(error)
            if reported is None:
                logger.exception("a conversation turn on %r failed", self.conversation_id)
                await self.error("error", "The turn failed; the conversation is unchanged.")
            else:
                await self.error(reported.code, reported.detail)

    async def turn(self, text: str, agent: Any) -> None:
        """Run the turn, sending its events as the agent makes them, then its result; the
        socket is closed with 4403 if this client may not send to the conversation."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def push(event: dict[str, Any] | None) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        def run() -> tuple[AgentResult, Conversation | None] | None:
            """In one worker thread: the access check (claiming an unused id), then the turn,
            whose events the agent hands straight to this socket's loop (``on_event``)."""
            try:
                if not self.may_send(claim=True):
                    return None
                store = self.store(claim=True)
                result = session(self.conversation_id, store, agent).send(text, on_event=push)
                return result, store.header(self.conversation_id)
            finally:
                push(None)

        turn = asyncio.ensure_future(in_worker_thread(run)())
        while (event := await events.get()) is not None:
            await self.send_json(event)
        outcome = await turn
        if outcome is None:
            await self.close(code=UNAUTHORISED)
            return
        result, header = outcome
        if result.error is not None:
            raise run_failure(result.error)
        await self.send_json({"type": "result", **result_json(result, header)})
