"""``ws/conversations/{id}/``: a chat UI's live connection to one conversation session.

The client sends ``{"type": "send", "input": "<text>"}``; the socket streams the agent's
events as they happen (``{"type": "delta", "text"}`` as the model writes, ``tool-call``,
``tool-result``, ``compaction``), then ``{"type": "result", "text", "run_id", "usage",
"messages", "conversation"}`` once the turn is stored, or ``{"type": "error", "code",
"detail"}`` (the conversation then unchanged). One turn at a time per socket: a ``send``
while one runs gets ``conversation-busy``; closing the socket cancels the running turn. A turn
stored by another socket or over HTTP sends ``{"type": "changed"}`` (read the history again)
to the conversation's other sockets that may see it.

Access is the API's: a client with an identity (a user, or a visitor's existing Django
session) is accepted whatever the id, so the handshake tells nothing. Its first send to an
id nobody uses makes the conversation its own; a send to a conversation it may not use
closes the socket with 4403.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..conf import warlock_settings
from ..conversations import AgentResult, DjangoConversationStore
from ..conversations.agent import stream_threads
from ..conversations.configured import conversation_agent, conversation_store, open_conversation
from ..conversations.wire import result_json, run_failure, send_input
from ..errors import AgentCancelledError, InvalidInputError
from ..host.notify import aconversation_changed, conversation_group
from ..host.threads import in_worker_thread
from ..host.wire import session_id_input
from ..locks import AbortSignal
from ..models import Conversation
from ..permissions import SessionAccess, SessionPolicy, owner_fields
from .base import UNAUTHORISED, WarlockConsumer

SEND_ACTION = "send"


class ConversationConsumer(WarlockConsumer):
    running: asyncio.Task[None] | None = None
    signal: AbortSignal | None = None

    async def connect(self) -> None:
        try:
            self.conversation_id = session_id_input(
                self.scope["url_route"]["kwargs"]["conversation_id"]
            )
        except InvalidInputError:
            await self.refuse(UNAUTHORISED)  # as for any id it may not use
            return
        # Whatever the id: the handshake says nothing of whether the conversation exists.
        self.following = False
        client, visible = await in_worker_thread(self.admitted)()
        if visible:  # in the group before the handshake ends: no turn stored after it is missed
            await self.follow()
        await self.admit(client)  # a refused socket leaves the group as it disconnects

    def admitted(self) -> tuple[str | None, bool]:
        """On connect, in one worker-thread call (in the client's tenant): who the client is
        (``None``: nobody, refused), and whether it may see the conversation already."""
        client = self.client_in_its_tenant()
        return client, client is not None and self.may_see()

    def may_see(self) -> bool:
        """Whether this client may see the conversation as it is now (it exists)."""
        header = self.store(claim=False).header(self.conversation_id)
        if header is None:
            return False
        policy: SessionPolicy = warlock_settings.PERMISSION()
        return policy.can_see(
            self.requester, SessionAccess(self.conversation_id, header, model="conversation")
        )

    async def follow(self) -> None:
        """Hear of turns other sockets (tabs, devices) store: only once it may see it."""
        if not self.following:
            self.following = True
            await self.group_add(conversation_group(self.conversation_id))

    async def warlock_conversation_changed(self, message: dict[str, Any]) -> None:
        if message.get("sender") != self.own_channel:
            await self.send_json({"type": "changed"})

    def work_in_hand(self) -> list[asyncio.Future[Any]]:
        """The turn that runs beside the socket, too."""
        running = [self.running] if self.running is not None else []
        return [*super().work_in_hand(), *running]

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if getattr(self, "following", False):
            await self.group_discard(conversation_group(self.conversation_id))
        if self.signal is not None:  # nobody is listening: the turn stops, changing nothing
            self.signal.abort(AgentCancelledError("the socket closed"))

    def store(self, *, claim: bool) -> DjangoConversationStore:
        return conversation_store(owner_fields(self.requester) if claim else None)

    def may_send(self) -> bool:
        """Whether this client may send to the conversation; an id nobody uses becomes its
        own first."""
        header = self.store(claim=False).header(self.conversation_id)
        if header is None:
            header = self.store(claim=True).claim(self.conversation_id)
        if header is None:
            return False
        access = SessionAccess(self.conversation_id, header, model="conversation")
        policy: SessionPolicy = warlock_settings.PERMISSION()
        return policy.can_see(self.requester, access) and policy.can_act(
            self.requester, SEND_ACTION, access
        )

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "send":
            await self.error("invalid-input", 'a frame is {"type": "send", "input": "<text>"}')
            return
        if self.running is not None and not self.running.done():
            await self.error("conversation-busy", "A turn is running: wait for its result.")
            return
        try:
            text = send_input(content)
            conversation_agent()  # configured, before anything is claimed
        except Exception as error:
            await self.failed_frame(error)
            return
        # The turn runs beside the socket, which stays free to refuse a second one (busy)
        # and to notice a disconnect, which cancels it.
        self.signal = AbortSignal()
        self.running = asyncio.ensure_future(self.turn(text, self.signal))

    async def turn(self, text: str, signal: AbortSignal) -> None:
        """Run the turn, sending its events as the agent makes them, then its result; the
        socket is closed with 4403 if this client may not send to the conversation."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def push(event: dict[str, Any] | None) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        def run() -> tuple[AgentResult, Conversation | None] | None:
            """In one thread: the access check (claiming an unused id), then the turn, whose
            events the agent hands straight to this socket's loop (``on_event``)."""
            try:
                if not self.may_send():
                    return None
                store = self.store(claim=True)
                chat = open_conversation(self.conversation_id, store)
                result = chat.send(text, on_event=push, signal=signal)
                return result, store.header(self.conversation_id)
            finally:
                push(None)

        try:
            # Turns wait for their model: they hold threads of their own pool, not those the
            # sockets' short database calls use.
            turn = asyncio.ensure_future(in_worker_thread(run, stream_threads())())
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
            await self.follow()  # it may see it now: it made it, if nobody had
            await aconversation_changed(self.conversation_id, self.own_channel or "")
        except Exception as error:
            await self.failed_frame(error)
