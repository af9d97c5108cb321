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
import logging
from typing import Any, NamedTuple
from urllib.parse import parse_qs

from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError

from .. import tenancy
from ..backends.loop_connections import loop_connection, loop_connections_available
from ..conf import warlock_settings
from ..engine import ProviderError, Session
from ..errors import (
    AgentNotConfiguredError,
    InputNotAllowedError,
    InvalidInputError,
    NewVisitorsThrottledError,
    QuotaExceededError,
    SessionConflictError,
    SessionOfAnotherTenantError,
)
from ..host import Host, HostedTurn, group_name
from ..host.commit import LoopCommitter, committer_for
from ..host.events import event_frame
from ..host.notify import apush
from ..host.threads import in_worker_thread
from ..host.wire import admitted_turn, provider_failure, session_id_input
from ..models import SessionEvent, SessionOwner
from ..permissions import (
    HANDOVER_ACTION,
    TURN_ACTION,
    VISITOR_KEY,
    SessionAccess,
    SessionPolicy,
    anonymous_key,
    claim_new_session,
    claim_owner,
    owner_fields,
    release_claim,
    used_by_another_tenant,
)
from ..stores import default_store
from ..tenancy import tenant_of_new_row
from .base import UNAUTHORISED, WarlockConsumer, layer_outage
from .follow import log_follower
from .membership import JOINED, Company, announce

logger = logging.getLogger("warlock_sessions.realtime")

OWN_FRAMES_REMEMBERED = 64
#: What a client may send; a ``handover`` only staff (the trust model, ``host.wire``).
FRAME_TYPES = ("message", "event", "start", "handover")
REPLAY_BATCH = 500


class Admission(NamedTuple):
    """What a socket's connect decided: who the client is (``None``: nobody, refused); the
    logged events to replay when it may see the session already (else ``None``: it follows
    the session once its owner starts it); whether it sends what server code sends."""

    client: str | None
    logged: list[dict[str, Any]] | None
    trusted: bool


#: Nobody: the socket is refused.
REFUSED = Admission(None, None, False)


#: A client's frame refused for what it asked, each error frame's code: the message says why.
TURN_ERROR_CODES: tuple[tuple[type[Exception] | tuple[type[Exception], ...], str], ...] = (
    ((InvalidInputError, AgentNotConfiguredError), "invalid-input"),
    (InputNotAllowedError, "input-not-allowed"),
    (QuotaExceededError, "quota-exceeded"),
)
#: Every error a frame's turn ends in that its client is told of in an error frame: those of
#: the table, and three told in their own words (``refuse_turn``).
TURN_REFUSALS: tuple[type[Exception], ...] = (
    *(
        kind
        for kinds, _ in TURN_ERROR_CODES
        for kind in (kinds if isinstance(kinds, tuple) else (kinds,))
    ),
    NewVisitorsThrottledError,
    SessionConflictError,
    ProviderError,
)


class SessionConsumer(WarlockConsumer):
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
        self.last_seq = 0
        #: The session's version in the last ``turn`` frame sent (versions only grow).
        self.last_version = 0
        #: Where the log ended when this socket, not following, last asked whether it may.
        self.checked_seq = 0
        #: The latest frames of this socket's own turns, by seq: their copies from the channel
        #: layer are expected again; any other event numbered as one already sent is not.
        self.own_frames: dict[int, dict[str, Any]] = {}
        self.last_active = asyncio.get_running_loop().time()
        self.sending = asyncio.Lock()
        self.last_saved: Session | None = None
        self.hosts: dict[str | None, Host] = {}
        #: For an id nobody used at connect: the owner row's fields the first frame claims it
        #: with on the event loop, when the store can and the policy admits such an owner.
        self.claimant: dict[str, Any] | None = None
        self.first_claimant: dict[str, Any] | None = None  # what a released claim re-arms
        self.company = Company()
        #: A first member's subscription to the session's group, made in the background, and
        #: a joining socket's notice to the group's members, sent in the background.
        self.joining: asyncio.Future[None] | None = None
        self.announcing: asyncio.Future[None] | None = None
        #: The visitor's identity being stored in their Django session (``loop_claimant``).
        self.identity_stored: asyncio.Future[Any] | None = None
        #: What the policy last said the client may send (``permitted``): turns of its own
        #: (an owner's, or the one its first frame would claim: so until it is asked), and
        #: handovers (staff who handle chats, who may follow a chat without owning it).
        self.speaks = True
        self.hands_over = False
        try:
            self.session_id: str = session_id_input(self.scope["url_route"]["kwargs"]["session_id"])
        except InvalidInputError:
            await self.refuse(UNAUTHORISED)  # as for any id it may not use
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        after = (query.get("after_seq") or ["0"])[0]
        self.last_seq = int(after) if after.isascii() and after.isdigit() and len(after) < 19 else 0
        self.group = group_name(self.session_id)
        admission = await self.admitted_on_loop()
        if admission is None:
            admission = await in_worker_thread(self.admitted)()
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

    # -- access ---------------------------------------------------------------------------------

    def admitted(self) -> Admission:
        """On connect, in one worker-thread call: who the client is (``None``: nobody, refused);
        when it may see the session already, the logged events to replay (else ``None``); and
        whether it may send what server code sends (the trust model)."""
        client = self.client_in_its_tenant()
        if client is None:
            return REFUSED
        trusted = self.trusted()
        owner = self.current_owner()
        store = default_store()
        if owner is None and store.load(self.session_id) is None:
            # Nobody uses the id: the first frame claims it. Who would own it is settled now,
            # in this thread, so the claim itself can wait for the event loop.
            self.claimant = self.first_claimant = self.prepared_claimant()
            return Admission(client, None, trusted)
        logged = self.logged_after(self.last_seq) if self.permitted(owner) else None
        return Admission(client, logged, trusted)

    async def admitted_on_loop(self) -> Admission | None:
        """:meth:`admitted` without a worker thread, for an anonymous visitor whose Django
        session the auth middleware has read already, while tenants are off, the policy
        decides from the owner alone, and the store is read on the event loop's connection
        (one statement). ``None``: the thread decides, as it does whenever the policy or an
        auth backend turns out to ask the database (Django refuses that on the event loop)."""
        committer = self.loop_committer()
        user, session = self.requester.user, self.requester.session
        if (
            committer is None
            or tenancy.enabled()
            or (user is not None and user.is_authenticated)
            or (session is not None and not hasattr(session, "_session_cache"))  # not read yet
        ):
            return None
        try:
            client = self.client_in_its_tenant()
            if client is None:
                return REFUSED
            trusted = self.trusted()
            async with loop_connection(committer.using) as connection:
                stored, owner_row = await committer.aadmission(connection, self.session_id)
            if owner_row is None and not stored:
                self.claimant = self.first_claimant = self.loop_claimant()
                return Admission(client, None, trusted)
            owner = (
                None if owner_row is None else SessionOwner(session_id=self.session_id, **owner_row)
            )
            if not self.permitted(owner):
                return Admission(client, None, trusted)
        except SynchronousOnlyOperation:  # the policy or an auth backend asked the database
            return None
        except DatabaseError:  # the loop's connections (a pool full, a cut): as in a thread
            logger.warning("could not admit a socket on the event loop", exc_info=True)
            return None
        logged = await in_worker_thread(self.logged_after)(self.last_seq)
        return Admission(client, logged, trusted)

    def trusted(self) -> bool:
        """Whether the client sends what server code sends (asked once, at connect), and
        whether it takes and answers chats, kept in ``hands_over`` until the policy is asked
        about the session's owner (``permitted``): for staff on a chat not made yet."""
        policy: SessionPolicy = warlock_settings.PERMISSION()
        access = SessionAccess(self.session_id, None)
        self.hands_over = policy.can_act(self.requester, HANDOVER_ACTION, access)
        return policy.is_trusted(self.requester)

    def loop_committer(self) -> LoopCommitter | None:
        """The store's committer on the event loop's connection, where a socket's admission
        and its first frame's claim can be settled: a store on PostgreSQL with loop
        connections, and a policy that decides from the owner alone."""
        committer = committer_for(default_store()).on_event_loop()
        if (
            committer is None
            or not loop_connections_available(committer.using)
            or not warlock_settings.PERMISSION.decides_from_owner
        ):
            return None
        return committer

    def prepared_claimant(self) -> dict[str, Any] | None:
        """The owner row's fields the first frame may claim the id with on the event loop, if
        the store can and the policy decides from the owner alone and admits that owner."""
        if self.loop_committer() is None:
            return None
        owner_row = owner_fields(self.requester)
        user = owner_row["user"]
        return self.admitted_claimant(
            {"user_id": user and user.pk, "anonymous_key": owner_row["anonymous_key"]}
        )

    def loop_claimant(self) -> dict[str, Any] | None:
        """:meth:`prepared_claimant` on the event loop, for an anonymous visitor: their
        identity is stored in their Django session (``owner_fields``) in a worker thread
        meanwhile, and the claim waits for it."""
        fields = self.admitted_claimant(
            {"user_id": None, "anonymous_key": anonymous_key(self.requester)}
        )
        session = self.requester.session
        if fields is not None and session is not None and VISITOR_KEY not in session:
            self.identity_stored = asyncio.ensure_future(
                in_worker_thread(owner_fields)(self.requester)
            )
            self.identity_stored.add_done_callback(_logged_failure)
        return fields

    def admitted_claimant(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        """``fields`` if the policy admits an owner row of them; the claim checks the quota."""
        owner = SessionOwner(session_id=self.session_id, tenant=tenant_of_new_row(), **fields)
        return fields if self.permitted(owner) else None

    def current_owner(self) -> SessionOwner | None:
        return SessionOwner.objects.filter(session_id=self.session_id).first()

    def permitted(self, owner: SessionOwner | None) -> bool:
        """The HTTP policy, applied to the socket's user and Django session: whether the
        client may follow the session (see it, and send it turns or handovers); what it may
        send is kept in ``speaks`` and ``hands_over``."""
        access = SessionAccess(self.session_id, owner)
        policy: SessionPolicy = warlock_settings.PERMISSION()
        if owner is not None and isinstance(self.tenant, str) and owner.tenant != self.tenant:
            return False  # another tenant's, however the scope it is read in came to be
        if not policy.can_see(self.requester, access) or (
            owner is None
            and used_by_another_tenant(self.session_id, getattr(default_store(), "using", None))
        ):
            return False
        self.speaks = policy.can_act(self.requester, TURN_ACTION, access)
        self.hands_over = policy.can_act(self.requester, HANDOVER_ACTION, access)
        return self.speaks or self.hands_over

    def claimed(self) -> tuple[bool, SessionOwner | None]:
        """Claim the session if it does not exist yet and nobody owns it (a socket never takes
        over a session that server code or staff made), then apply the policy. Returns whether
        the client may send to it, and the owner row this claim made (if it made one)."""
        store = default_store()
        claim = claim_new_session(self.requester, self.session_id, store)
        permitted = self.permitted(claim or self.current_owner())
        if claim is not None and not permitted:
            release_claim(claim, store)  # a claim the policy refuses is not kept
            return False, None
        return permitted, claim

    def adopted(self) -> bool:
        """Claim the session a turn of this socket has just made again, unless someone owns
        it already; whether the client may still send to it."""
        claim_owner(self.requester, self.session_id)
        return self.may_see_now()

    def may_see_now(self) -> bool:
        return self.permitted(self.current_owner())

    # -- delivery -------------------------------------------------------------------------------

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
            if await in_worker_thread(self.may_see_now)():
                await self.follow()

    def logged_after(self, seq: int) -> list[dict[str, Any]]:
        rows = SessionEvent.objects.filter(session_id=self.session_id, seq__gt=seq).order_by("seq")
        return [
            event_frame({"seq": row.seq, "type": row.type, "payload": row.opened_payload})
            for row in rows[:REPLAY_BATCH]
        ]

    def still_logged_after(self, seq: int) -> list[dict[str, Any]] | None:
        """``logged_after``, for a client that may still see the session (``None`` if not: it
        was deleted and perhaps started again by someone else, and no notice reached us)."""
        return self.logged_after(seq) if self.may_see_now() else None

    async def catch_up(self, logged: list[dict[str, Any]] | None = None) -> None:
        """Send everything the log holds past ``last_seq`` (starting with ``logged``, when the
        caller has read the first batch already)."""
        async with self.sending:
            while self.following:
                if logged is None:
                    logged = await in_worker_thread(self.still_logged_after)(self.last_seq)
                    if logged is None:
                        await self.shut_out()
                        return
                events, logged = logged, None
                for event in events:
                    if event["seq"] > self.last_seq:
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
        if self.maybe_made_again(events) and not await in_worker_thread(self.may_see_now)():
            await self.shut_out()
            return
        if events and events[0]["seq"] > self.last_seq + 1:
            await self.catch_up()
            return
        async with self.sending:
            for event in events:
                if event["seq"] == self.last_seq + 1:
                    await self.send_event(event)

    def maybe_made_again(self, events: list[dict[str, Any]]) -> bool:
        """Whether ``events`` may be of a session made again under this id (deleted, perhaps
        started by someone else, and no notice reached this socket), so the client must be
        asked about again: numbered as ones already sent and not this socket's own coming
        back, a turn no newer than the last one sent, or, before any, others' events."""
        for event in events:
            if self.own_frames.get(event["seq"]) == event:
                continue
            if event["seq"] <= self.last_seq or self.last_seq == 0:
                return True
            if event["type"] == "turn" and event.get("version", 0) <= self.last_version:
                return True
        return False

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.send_json(event)
        self.last_seq = event["seq"]
        if event["type"] == "turn":
            self.last_version = event.get("version", 0)
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
        try:
            hosted = await self.apply(body)
        except SessionOfAnotherTenantError:
            hosted = None  # as for any id it may not use
        except TURN_REFUSALS as error:
            await self.refuse_turn(error)
            return
        if hosted is None:
            await self.close(code=UNAUTHORISED)
            return
        # The next turn starts from this session instead of loading it (the save checks it is
        # still current), and the turn's own events go out without a trip to the log.
        self.last_saved = hosted.session if hosted.session.get("version") else None
        frames = [event_frame(event) for event in hosted.events]
        self.remember_own(frames)
        await self.deliver(frames)
        # Then the session's other sockets, if there can be any: this one's client has its
        # frames already, whatever the layer takes.
        # (A socket whose layer was away when it connected has no channel, and so no group.)
        channel = getattr(self, "channel_name", None)
        if not await self.company.alone(self.channel_layer, self.group, channel):
            await apush(self.session_id, hosted.events)

    async def refuse_turn(self, error: Exception) -> None:
        """The error frame for a turn the frame asked for and did not get: nothing changed."""
        if isinstance(error, NewVisitorsThrottledError):
            await self.throttled(error.wait or 0.0, "Too many new visitors from this address")
        elif isinstance(error, SessionConflictError):
            await self.error("session-conflict", f"{error} Send it again.")
        elif isinstance(error, ProviderError):
            await self.error(error.code, provider_failure(error))
        else:
            code = next(code for kinds, code in TURN_ERROR_CODES if isinstance(error, kinds))
            await self.error(code, str(error))

    async def apply(self, body: dict[str, Any]) -> HostedTurn | None:
        """Check a frame's turn, claim the session on the first one, and run it; ``None`` when
        the client may not send to this session."""
        self.last_active = asyncio.get_running_loop().time()
        turn_input, context, agent = admitted_turn(
            body, trusted=self.is_trusted, hands_over=self.hands_over, user=self.requester.user
        )
        claim = None
        try:
            if not self.following:
                claim = await self.claim_on_loop()
                if claim is None:
                    permitted, claim = await in_worker_thread(self.claimed)()
                    if not permitted:
                        return None
                if claim is None:
                    await self.follow()
                else:  # the session did not exist: no log to replay, and nobody follows it
                    await self.follow([], first_member=True)
            if not self.speaks and "handover" not in turn_input:
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
            if not await in_worker_thread(self.adopted)():
                await self.unfollow()
                return None
            self.last_seq = self.last_version = 0
            self.own_frames.clear()
        return hosted

    async def claim_on_loop(self) -> SessionOwner | None:
        """The claim of the id nobody used at connect, made on the event loop (no thread hop on
        a chat's first turn); ``None`` when it could not be (the id is used by now, or there is
        no prepared claimant): the claim in a worker thread decides."""
        fields, self.claimant = self.claimant, None
        committer = self.loop_committer()
        if fields is None or committer is None:
            return None
        identity_stored, self.identity_stored = self.identity_stored, None
        if identity_stored is not None and not await _succeeded(identity_stored):
            return None  # the claim in a thread stores it again, or reports the outage
        quota = warlock_settings.MAX_SESSIONS_PER_OWNER
        try:
            async with loop_connection(committer.using) as connection:
                if connection is None:
                    return None
                owner_id = await committer.aclaim(
                    connection, self.session_id, **fields, quota=quota
                )
        except DatabaseError:  # a user deleted meanwhile, a connection lost: as in a thread
            logger.warning("could not claim %r on the event loop", self.session_id, exc_info=True)
            return None
        return (
            None
            if owner_id is None
            else SessionOwner(pk=owner_id, session_id=self.session_id, **fields)
        )

    async def release(self, claim: SessionOwner) -> None:
        """Undo this socket's claim after its first turn failed, and wait, as before it, for
        the session to start (another tab may start it) or for its next frame to claim it."""
        try:
            await in_worker_thread(release_claim)(claim, default_store())
        except Exception:  # the turn's own error is the one to report
            logger.warning("could not release the claim on %r", self.session_id, exc_info=True)
        self.claimant = self.first_claimant
        self.company.joined()  # its next claim may find the session another tab started
        await self.unfollow()
        log_follower().follow(self)

    def remember_own(self, frames: list[dict[str, Any]]) -> None:
        self.own_frames.update((frame["seq"], frame) for frame in frames)
        while len(self.own_frames) > OWN_FRAMES_REMEMBERED:
            del self.own_frames[next(iter(self.own_frames))]  # the oldest: seqs only grow

    def host(self, agent: str | None) -> Host:
        """The host of ``agent``, made once per socket (a Host costs more than a turn's parse)."""
        if agent not in self.hosts:
            self.hosts[agent] = Host(agent)
        return self.hosts[agent]


async def _succeeded(work: asyncio.Future[Any]) -> bool:
    try:
        await work
    except Exception:
        return False
    return True


def _logged_failure(work: asyncio.Future[Any]) -> None:
    if not work.cancelled() and work.exception() is not None:
        logger.warning(
            "could not store a visitor's identity in their Django session",
            exc_info=work.exception(),
        )
