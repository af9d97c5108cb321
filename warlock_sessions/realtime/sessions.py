"""``ws/sessions/{id}/``: a chat UI's live connection to one session.

The client sends ``{"type": "message", "text", "id"}`` (or ``event``/``start`` frames); every
event of the session reaches it in ``seq`` order, each once: ``?after_seq=N`` replays the
persisted log first, then the socket follows the session, through its channel-layer group and
through the log itself (``realtime.follow``: within about a second, whatever the layer). Messages
that wakes produce arrive on the same socket, even when a separate worker process fired them.

Access: a client with an identity (a user, or an anonymous visitor's Django session) is accepted
whatever the id, so the handshake tells nothing of whether a session exists. It follows the
session only once it may see it: at once when it owns it (or is staff); for an id nobody uses,
once its first frame has claimed it. A frame on a session it may not see closes the socket with
4403, as a client without any identity is at the handshake. A bad frame gets an ``error`` event
and the socket stays open.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from .. import tenancy
from ..engine import Session
from ..errors import InputNotAllowedError, InvalidInputError
from ..host import Host, HostedTurn, group_name
from ..host.events import event_frame
from ..host.notify import apush
from ..host.threads import in_worker_thread
from ..host.wire import admitted_turn, session_id_input
from ..models import SessionOwner
from .admission import SocketAccess
from .base import UNAUTHORISED, WarlockConsumer, layer_outage
from .delivery import REPLAY_BATCH, DeliveryCursor
from .follow import log_follower
from .membership import JOINED, Company, announce

#: What a client may send; a ``handover`` only staff (the trust model, ``host.wire``).
FRAME_TYPES = ("message", "event", "start", "handover")


class SessionConsumer(WarlockConsumer):
    """A Channels adapter: what the client may do is its :class:`SocketAccess`'s to say, what
    it has been sent its :class:`DeliveryCursor`'s to know; this class joins them to the
    socket, the session's group and the host."""

    #: The agent a route's turns run with (``None``: the default agent; a trusted frame may
    #: still name its own): ``SessionConsumer.as_asgi(agent="helper")`` gives an agent a
    #: route of its own, as the demo's OpenAI Agents SDK page has.
    agent: str | None = None

    def __init__(self, *args: Any, agent: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if agent is not None:
            self.agent = agent

    async def connect(self) -> None:
        self.following = False
        self.client = ""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        after = (query.get("after_seq") or ["0"])[0]
        self.cursor = DeliveryCursor(
            int(after) if after.isascii() and after.isdigit() and len(after) < 19 else 0
        )
        #: Where the log ended when this socket, not following, last asked whether it may.
        self.checked_seq = 0
        self.last_active = asyncio.get_running_loop().time()
        self.sending = asyncio.Lock()
        #: The session as this socket's last turn saved it: the next turn starts from it
        #: instead of loading it (the save checks it is still current).
        self.last_saved: Session | None = None
        self.hosts: dict[str | None, Host] = {}
        self.company = Company()
        #: A first member's subscription to the session's group, made in the background, and
        #: a joining socket's notice to the group's members, sent in the background.
        self.joining: asyncio.Future[None] | None = None
        self.announcing: asyncio.Future[None] | None = None
        try:
            self.session_id: str = session_id_input(self.scope["url_route"]["kwargs"]["session_id"])
        except InvalidInputError:
            await self.refuse(UNAUTHORISED)  # as for any id it may not use
            return
        self.group = group_name(self.session_id)
        self.access = SocketAccess(self, self.session_id)
        admission = await self.access.admitted_on_loop(self.cursor.last_seq)
        if admission is None:
            admission = await in_worker_thread(self.access.admitted)(self.cursor.last_seq)
        self.is_trusted: bool = admission.trusted
        if not await self.admit(admission.client):
            return
        if admission.logged is not None:
            await self.follow(admission.logged)
        else:
            log_follower().follow(self)  # it may see the session once its owner starts it

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        await self.unfollow()

    @property
    def last_seq(self) -> int:
        """The last ``seq`` sent (the log follower's ``Follower``)."""
        return self.cursor.last_seq

    # -- following the session --------------------------------------------------------------------
    async def follow(
        self, logged: list[dict[str, Any]] | None = None, *, first_member: bool = False
    ) -> None:
        """Start following the session: its group, then the log past ``last_seq``. The
        ``first_member`` (its claim made the session) has nobody to announce itself to."""
        self.following = True
        if first_member:
            # Nothing comes through the group before anyone else follows the session, so the
            # turn need not wait on the subscription (on Redis, queued on the layer's one
            # connection behind every other socket's).
            self.company.first_member()
            self.joining = asyncio.ensure_future(self.group_add(self.group))
        else:
            await self.group_add(self.group)
            # Others need not hear of it before this socket's first turn: sent meanwhile.
            self.announcing = asyncio.ensure_future(self.announce())
        log_follower().follow(self)
        await self.catch_up(logged)

    async def unfollow(self) -> None:
        if hasattr(self, "group"):
            log_follower().unfollow(self)
        if self.following:
            self.following = False
            joining, self.joining = self.joining, None
            if joining is not None:
                await joining  # else the discard could come first, and the socket stay in
            await self.group_discard(self.group)

    async def log_moved(self, latest: int) -> None:
        """The log has events this socket has not sent (``realtime.follow``): send them, or,
        for a socket that could not see the session before, check whether it may now (another
        tab of the same visitor started it): once each time the log moves, so an idle socket
        on someone else's session costs no more than an idle owner's. Called from the log
        follower's task, which serves every tenant: it runs in this socket's."""
        tenancy.enter(self.tenant)
        if self.following:
            await self.catch_up()
        elif latest > self.checked_seq:
            self.checked_seq = latest
            if await in_worker_thread(self.access.may_see_now)():
                await self.follow()

    async def catch_up(self, logged: list[dict[str, Any]] | None = None) -> None:
        """Send everything the log holds past ``last_seq`` (starting with ``logged``, when the
        caller has read the first batch already)."""
        async with self.sending:
            while self.following:
                if logged is None:
                    logged = await in_worker_thread(self.access.still_logged_after)(
                        self.cursor.last_seq
                    )
                    if logged is None:
                        await self.shut_out()
                        return
                events, logged = logged, None
                for event in events:
                    if self.cursor.is_new(event):
                        await self.send_event(event)
                if len(events) < REPLAY_BATCH:
                    return

    async def announce(self) -> None:
        """Say to the group's other members that this socket joined (``membership``)."""
        channel = getattr(self, "channel_name", None)
        if channel is None:
            return  # the layer was away at connect: in no group
        try:
            await announce(self.channel_layer, self.group, self.session_id, channel)
        except Exception as error:
            layer_outage.failed(error)

    async def warlock_events(self, message: dict[str, Any]) -> None:
        """Events pushed to the session's group after a commit, or another socket's notice
        that it joined the group (no events)."""
        if message.get(JOINED, self.channel_name) != self.channel_name:
            self.company.joined()
        if message["events"]:
            await self.deliver(message["events"])

    async def warlock_forgotten(self, message: dict[str, Any]) -> None:
        """The session was deleted: whatever comes under its id next is someone else's."""
        await self.shut_out()

    async def shut_out(self) -> None:
        """Stop following the session and close: this client may not see it (any more)."""
        await self.unfollow()
        await self.close(code=UNAUTHORISED)

    async def deliver(self, events: list[dict[str, Any]]) -> None:
        """Send the frames this socket has not sent yet, in ``seq`` order; when they do not
        follow on from the last one sent, the layer dropped something and the log has it."""
        if not self.following:
            return
        events = sorted(events, key=lambda event: event["seq"])
        if (
            self.cursor.maybe_made_again(events)
            and not await in_worker_thread(self.access.may_see_now)()
        ):
            await self.shut_out()
            return
        if self.cursor.skips(events):
            await self.catch_up()
            return
        async with self.sending:
            for event in events:
                if self.cursor.is_next(event):
                    await self.send_event(event)

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.send_json(event)
        self.cursor.sent(event)
        self.last_active = asyncio.get_running_loop().time()
        if (
            event["type"] == "turn"
            and self.last_saved is not None
            and event["version"] > self.last_saved["version"]
        ):
            self.last_saved = None  # another turn (a wake, another tab) moved the session on

    # -- client frames ----------------------------------------------------------------------------

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        frame_type = content.get("type") if isinstance(content, dict) else None
        if frame_type not in FRAME_TYPES:
            await self.error(
                "invalid-input", 'a frame is {"type": "message"|"event"|"start"|"handover", ...}'
            )
            return
        fields = {
            key: value for key, value in content.items() if key not in ("type", "context", "agent")
        }
        body = {frame_type: fields, **{k: content[k] for k in ("context", "agent") if k in content}}
        hosted = await self.apply(body)  # what it raises, the client is told (failed_frame)
        if hosted is None:
            await self.close(code=UNAUTHORISED)
            return
        # The next turn starts from this session instead of loading it (the save checks it is
        # still current), and the turn's own events go out without a trip to the log.
        self.last_saved = hosted.session if hosted.session.get("version") else None
        frames = [event_frame(event) for event in hosted.events]
        self.cursor.remember_own(frames)
        await self.deliver(frames)
        # Then the session's other sockets, if there can be any: this one's client has its
        # frames already, whatever the layer takes.
        if not await self.company.alone(self.channel_layer, self.group, self.own_channel):
            await apush(self.session_id, hosted.events)

    async def apply(self, body: dict[str, Any]) -> HostedTurn | None:
        """Check a frame's turn, claim the session on the first one, and run it; ``None`` when
        the client may not send to this session."""
        self.last_active = asyncio.get_running_loop().time()
        turn_input, context, agent = admitted_turn(
            body,
            trusted=self.is_trusted,
            hands_over=self.access.hands_over,
            user=self.requester.user,
        )
        claim = None
        try:
            if not self.following:
                first = await self.first_turn(turn_input, context, agent)
                if first is not None:
                    return first
                claim = await self.access.claim_on_loop()
                if claim is None:
                    permitted, claim = await in_worker_thread(self.access.claimed)()
                    if not permitted:
                        return None
                if claim is None:
                    await self.follow()
                else:  # the session did not exist: no log to replay, and nobody follows it
                    await self.follow([], first_member=True)
            if not self.access.speaks and "handover" not in turn_input:
                raise InputNotAllowedError(
                    next(iter(turn_input)), "staff who handle chats answer with a handover reply"
                )
            hosted = await self.host(agent if agent is not None else self.agent).ahandle(
                self.session_id, turn_input, context, last_saved=self.last_saved, push=False
            )
        except BaseException:
            if claim is not None:  # the first turn failed: the claim goes with it
                await self.release(claim)
            raise
        if claim is None and hosted.changed and hosted.session.get("version") == 1:
            # This turn made the session the socket was following: it had been deleted (a
            # prune, a deletion whose notice did not come). Its sender owns it now, as a
            # first frame's would; its log starts again from seq 1.
            if not await in_worker_thread(self.access.adopted)():
                await self.unfollow()
                return None
            self.cursor.restart()
        return hosted

    async def first_turn(
        self, turn_input: dict[str, Any], context: Any, agent: str | None
    ) -> HostedTurn | None:
        """The first frame's claim and turn in one statement (``SocketAccess``), following
        the session it makes as its first member; ``None``, following nothing again, when
        they were not made so."""
        host = self.host(agent if agent is not None else self.agent)
        if not self.access.may_claim_by_first_turn(host):
            return None
        # Followed before the statement, as after a claim: a socket that joins once it is
        # made must find this one in the group.
        await self.follow([], first_member=True)
        first = None
        try:
            first = await self.access.claimed_by_first_turn(host, turn_input, context)
        finally:
            if first is None:  # nothing made
                await self.await_start()
        return None if first is None else first[0]

    async def release(self, claim: SessionOwner) -> None:
        """Undo this socket's claim after its first turn failed (:meth:`await_start`)."""
        await self.access.release(claim)
        await self.await_start()

    async def await_start(self) -> None:
        """Follow nothing, and wait, as before a claim, for the session to start (another tab
        may start it) or for the next frame to claim it."""
        self.company.joined()  # its next claim may find the session another tab started
        await self.unfollow()
        log_follower().follow(self)

    def host(self, agent: str | None) -> Host:
        """The host of ``agent``, made once per socket (a Host costs more than a turn's parse)."""
        if agent not in self.hosts:
            self.hosts[agent] = Host(agent)
        return self.hosts[agent]
