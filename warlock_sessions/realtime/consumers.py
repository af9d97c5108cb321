"""``ws/sessions/{id}/``: a chat UI's live connection to one session.

The client sends ``{"type": "message", "text", "id"}`` (or ``event``/``start`` frames); every
event of the session reaches it in ``seq`` order, each once: ``?after_seq=N`` replays the
persisted log first, then the socket follows the session's channel-layer group, filling any gap
from the log (the layer is lossy; the log is the truth). Messages that wakes produce arrive on
the same socket. A bad frame gets an ``error`` event and the socket stays open; a client that
may not see the session is closed with code 4403.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from ..conf import warlock_settings
from ..engine import ProviderError, Session
from ..errors import AgentNotConfiguredError, InvalidInputError, SessionConflictError
from ..host import Host, group_name
from ..host.loop import in_worker_thread
from ..host.records import event_frame
from ..host.wire import parse_turn
from ..models import SessionEvent, SessionOwner
from ..permissions import SessionAccess, claim_owner, may_see
from ..stores import default_store

UNAUTHORISED = 4403
REPLAY_BATCH = 500


class SessionConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.session_id: str = self.scope["url_route"]["kwargs"]["session_id"]
        query = parse_qs(self.scope.get("query_string", b"").decode())
        after = (query.get("after_seq") or ["0"])[0]
        self.last_seq = int(after) if after.isdigit() else 0
        self.sending = asyncio.Lock()
        self.requester = SimpleNamespace(
            user=self.scope.get("user"), session=self.scope.get("session")
        )
        self.owned = False  # checked again, and claimed, with the first turn
        self.last_saved: Session | None = None
        self.hosts: dict[str | None, Host] = {}
        self.group = group_name(self.session_id)
        # Following the group before reading the log leaves no gap between the two.
        await self.channel_layer.group_add(self.group, self.channel_name)
        logged = await in_worker_thread(self.admitted)()
        if logged is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.close(code=UNAUTHORISED)
            return
        await self.accept()
        await self.catch_up(logged)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels tidies the event-loop thread's database connection before every handler: a
        # hop through its one shared sync thread for each frame and each group message. The
        # handlers here reach the database only through in_worker_thread, which tidies the
        # connection it uses, so the hop would only queue every socket behind one thread.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    # -- access ---------------------------------------------------------------------------------

    def admitted(self) -> list[dict[str, Any]] | None:
        """On connect, in one worker-thread call: ``None`` when the client may not see the
        session, else the logged events to replay (none for a session not started yet, which
        anyone able to own it may open: the first turn claims it)."""
        owner = self.current_owner()
        if owner is None and default_store().load(self.session_id) is None:
            return [] if self.can_own() else None
        return self.logged_after(self.last_seq) if self.permitted(owner) else None

    def current_owner(self) -> SessionOwner | None:
        return SessionOwner.objects.filter(session_id=self.session_id).first()

    def permitted(self, owner: SessionOwner | None) -> bool:
        """The HTTP policy, applied to the socket's user and Django session."""
        access = SessionAccess(self.session_id, owner)
        policy = warlock_settings.PERMISSION()
        return may_see(policy, self.requester, access) and policy.has_object_permission(
            self.requester, SimpleNamespace(action="turn"), access
        )

    def can_own(self) -> bool:
        user = self.requester.user
        session = self.requester.session
        return bool(user and user.is_authenticated) or bool(session and session.session_key)

    def claimed(self) -> bool:
        """Claim the session if nobody owns it yet (someone may have since connect), then
        apply the policy: what the first turn checks."""
        return self.permitted(claim_owner(self.requester, self.session_id) or self.current_owner())

    # -- delivery -------------------------------------------------------------------------------

    def logged_after(self, seq: int) -> list[dict[str, Any]]:
        rows = SessionEvent.objects.filter(session_id=self.session_id, seq__gt=seq).order_by("seq")
        return [
            event_frame({"seq": row.seq, "type": row.type, "payload": row.payload})
            for row in rows[:REPLAY_BATCH]
        ]

    async def catch_up(self, logged: list[dict[str, Any]] | None = None) -> None:
        """Send everything the log holds past ``last_seq`` (starting with ``logged``, when the
        caller has read the first batch already)."""
        async with self.sending:
            while True:
                if logged is None:
                    logged = await in_worker_thread(self.logged_after)(self.last_seq)
                events, logged = logged, None
                for event in events:
                    await self.send_event(event)
                if len(events) < REPLAY_BATCH:
                    return

    async def warlock_events(self, message: dict[str, Any]) -> None:
        """Events pushed to the session's group after a commit."""
        await self.deliver(message["events"])

    async def deliver(self, events: list[dict[str, Any]]) -> None:
        """Send the frames this socket has not sent yet, in ``seq`` order; when they do not
        follow on from the last one sent, the layer dropped something and the log has it."""
        events = sorted(events, key=lambda event: event["seq"])
        if events and events[0]["seq"] > self.last_seq + 1:
            await self.catch_up()
            return
        async with self.sending:
            for event in events:
                if event["seq"] == self.last_seq + 1:
                    await self.send_event(event)

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.send_json(event)
        self.last_seq = event["seq"]
        if (
            event["type"] == "turn"
            and self.last_saved is not None
            and event["version"] > self.last_saved["version"]
        ):
            self.last_saved = None  # another turn (a wake, another tab) moved the session on

    async def error(self, code: str, detail: str) -> None:
        await self.send_json({"type": "error", "code": code, "detail": detail})

    # -- client frames ----------------------------------------------------------------------------

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        frame_type = content.get("type") if isinstance(content, dict) else None
        if frame_type not in ("message", "event", "start"):
            await self.error("invalid-input", 'a frame is {"type": "message"|"event"|"start", ...}')
            return
        fields = {
            key: value for key, value in content.items() if key not in ("type", "context", "agent")
        }
        body = {frame_type: fields, **{k: content[k] for k in ("context", "agent") if k in content}}
        try:
            turn_input, context, agent = parse_turn(body)
            if not self.owned:
                if not await in_worker_thread(self.claimed)():
                    await self.error("permission-denied", "you may not send turns to this session")
                    return
                self.owned = True
            hosted = await self.host(agent).ahandle(
                self.session_id, turn_input, context, last_saved=self.last_saved
            )
        except (InvalidInputError, AgentNotConfiguredError) as error:
            await self.error("invalid-input", str(error))
            return
        except SessionConflictError as error:
            await self.error("session-conflict", f"{error} Send it again.")
            return
        except ProviderError as error:
            await self.error(error.code, f"The model provider failed: {error}")
            return
        # The next turn starts from this session instead of loading it (the save checks it is
        # still current), and the turn's own events go out without a trip to the log.
        self.last_saved = hosted.session if hosted.session.get("version") else None
        await self.deliver([event_frame(event) for event in hosted.events])

    def host(self, agent: str | None) -> Host:
        """The host of ``agent``, made once per socket (a Host costs more than a turn's parse)."""
        if agent not in self.hosts:
            self.hosts[agent] = Host(agent)
        return self.hosts[agent]

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        try:
            await super().receive(text_data=text_data, bytes_data=bytes_data, **kwargs)
        except ValueError:  # not JSON: an error frame, never a dropped socket
            await self.error("invalid-json", "frames are JSON objects")
