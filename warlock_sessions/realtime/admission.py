"""Who a session socket's client is, and what it may do with its session (:class:`SocketAccess`):
decided at connect (on the event loop when it can, else in a worker thread, by the same rules:
``claims``), asked again whenever the session may have changed hands, and the claim its
first frame makes of an id nobody used at connect. The policy is the HTTP API's
(``WARLOCK_SESSIONS["PERMISSION"]``), applied to the socket's user and Django session."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NamedTuple, Protocol

from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError

from .. import tenancy
from ..backends.loop_connections import loop_connection, loop_connections_available
from ..claims import (
    UNDECIDED,
    aclaim,
    ausage,
    claim_new_session,
    claimed_by,
    first_claim,
    release_claim,
    usage,
)
from ..conf import warlock_settings
from ..host import Host, HostedTurn
from ..host.commit import committer_for
from ..host.threads import in_worker_thread
from ..models import SessionOwner
from ..permissions import (
    HANDOVER_ACTION,
    TURN_ACTION,
    VISITOR_KEY,
    Requester,
    SessionAccess,
    SessionPolicy,
    anonymous_key,
    claim_owner,
    owner_fields,
    used_by_another_tenant,
)
from ..stores import default_store
from ..tenancy import tenant_of_new_row
from .delivery import logged_after

logger = logging.getLogger("warlock_sessions.realtime")


class Admission(NamedTuple):
    """What a socket's connect decided: who the client is (``None``: nobody, refused); the
    logged events to replay when it may see the session already (else ``None``: it follows
    the session once its owner starts it); whether it sends what server code sends."""

    client: str | None
    logged: list[dict[str, Any]] | None
    trusted: bool


#: Nobody: the socket is refused.
REFUSED = Admission(None, None, False)


class Identified(Protocol):
    """The socket, as access is decided for it (``WarlockConsumer``)."""

    tenant: Any

    @property
    def requester(self) -> Requester: ...

    def client_in_its_tenant(self) -> str | None: ...


class SocketAccess:
    """One socket's client and its session: whether it may follow the session and what it may
    send (``speaks``: turns of its own, or the one its first frame would claim; ``hands_over``:
    staff who handle chats), and, for an id nobody used at connect, the owner row its first
    frame claims the id with (``claimant``) on the event loop."""

    def __init__(self, socket: Identified, session_id: str) -> None:
        self.socket = socket
        self.session_id = session_id
        self.speaks = True
        self.hands_over = False
        #: For an id nobody used at connect: the owner row's fields the first frame claims it
        #: with on the event loop, when the store can and the policy admits such an owner.
        self.claimant: dict[str, Any] | None = None
        self.first_claimant: dict[str, Any] | None = None  # what a released claim re-arms
        #: The visitor's identity being stored in their Django session (``loop_claimant``).
        self.identity_stored: asyncio.Future[Any] | None = None

    @property
    def requester(self) -> Requester:
        return self.socket.requester

    # -- at connect -------------------------------------------------------------------------

    def admitted(self, after_seq: int) -> Admission:
        """In one worker-thread call: who the client is, the logged events past ``after_seq``
        when it may see the session already, and whether it is trusted."""
        client = self.socket.client_in_its_tenant()
        if client is None:
            return REFUSED
        trusted = self.trusted()
        used = usage(self.session_id, default_store())
        if used.unused:
            # The first frame claims it. Who would own it is settled now, in this thread, so
            # the claim itself can wait for the event loop.
            self.claimant = self.first_claimant = self.prepared_claimant()
            return Admission(client, None, trusted)
        logged = logged_after(self.session_id, after_seq) if self.permitted(used.owner) else None
        return Admission(client, logged, trusted)

    async def admitted_on_loop(self, after_seq: int) -> Admission | None:
        """:meth:`admitted` without a worker thread, for an anonymous visitor whose Django
        session the auth middleware has read already, while the policy decides from the owner
        alone and the store is read on the event loop's connection (``claims.ausage``).
        ``None``: the thread decides, as it does whenever the policy or an auth backend turns
        out to ask the database (Django refuses that on the event loop)."""
        using = self.loop_alias()
        user, session = self.requester.user, self.requester.session
        if (
            using is None
            or tenancy.enabled()
            or (user is not None and user.is_authenticated)
            or (session is not None and not hasattr(session, "_session_cache"))  # not read yet
        ):
            return None
        try:
            client = self.socket.client_in_its_tenant()
            if client is None:
                return REFUSED
            trusted = self.trusted()
            async with loop_connection(using) as connection:
                used = await ausage(connection, self.session_id, using)
            if used is UNDECIDED:
                return None
            if used.unused:
                self.claimant = self.first_claimant = self.loop_claimant()
                return Admission(client, None, trusted)
            if not self.permitted(used.owner):
                return Admission(client, None, trusted)
        except SynchronousOnlyOperation:  # the policy or an auth backend asked the database
            return None
        except DatabaseError:  # the loop's connections (a pool full, a cut): as in a thread
            logger.warning("could not admit a socket on the event loop", exc_info=True)
            return None
        logged = await in_worker_thread(logged_after)(self.session_id, after_seq)
        return Admission(client, logged, trusted)

    def trusted(self) -> bool:
        """Whether the client sends what server code sends (asked once, at connect), and
        whether it takes and answers chats, kept in ``hands_over`` until the policy is asked
        about the session's owner (``permitted``): for staff on a chat not made yet."""
        policy: SessionPolicy = warlock_settings.PERMISSION()
        access = SessionAccess(self.session_id, None)
        self.hands_over = policy.can_act(self.requester, HANDOVER_ACTION, access)
        return policy.is_trusted(self.requester)

    def loop_alias(self) -> str | None:
        """The database whose event-loop connection a socket's admission and its first
        frame's claim can be settled on: the store's, on PostgreSQL with loop connections,
        and a policy that decides from the owner alone."""
        committer = committer_for(default_store()).on_event_loop()
        if (
            committer is None
            or not loop_connections_available(committer.using)
            or not warlock_settings.PERMISSION.decides_from_owner
        ):
            return None
        return committer.using

    def prepared_claimant(self) -> dict[str, Any] | None:
        """The owner row's fields the first frame may claim the id with on the event loop, if
        the store can and the policy decides from the owner alone and admits that owner."""
        if self.loop_alias() is None:
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

    # -- whenever the session may have changed hands ------------------------------------------

    def permitted(self, owner: SessionOwner | None) -> bool:
        """Whether the client may follow the session (see it, and send it turns or
        handovers); what it may send is kept in ``speaks`` and ``hands_over``."""
        access = SessionAccess(self.session_id, owner)
        policy: SessionPolicy = warlock_settings.PERMISSION()
        tenant = self.socket.tenant
        if owner is not None and isinstance(tenant, str) and owner.tenant != tenant:
            return False  # another tenant's, however the scope it is read in came to be
        if not policy.can_see(self.requester, access) or (
            owner is None
            and used_by_another_tenant(self.session_id, getattr(default_store(), "using", None))
        ):
            return False
        self.speaks = policy.can_act(self.requester, TURN_ACTION, access)
        self.hands_over = policy.can_act(self.requester, HANDOVER_ACTION, access)
        return self.speaks or self.hands_over

    def may_see_now(self) -> bool:
        return self.permitted(SessionOwner.of(self.session_id))

    def still_logged_after(self, seq: int) -> list[dict[str, Any]] | None:
        """The log past ``seq``, for a client that may still see the session (``None`` if not:
        it was deleted and perhaps started again by someone else, and no notice reached us)."""
        return logged_after(self.session_id, seq) if self.may_see_now() else None

    # -- the first frame's claim ----------------------------------------------------------------

    def claimed(self) -> tuple[bool, SessionOwner | None]:
        """Claim the session if nothing uses it (a socket never takes over a session that
        server code or staff made), then apply the policy. Returns whether the client may send
        to it, and the owner row this claim made (if it made one)."""
        store = default_store()
        claim = claim_new_session(self.requester, self.session_id, store)
        permitted = self.permitted(claim or SessionOwner.of(self.session_id))
        if claim is not None and not permitted:
            release_claim(claim, store)  # a claim the policy refuses is not kept
            return False, None
        return permitted, claim

    def adopted(self) -> bool:
        """Claim the session a turn of this socket has just made again, unless someone owns
        it already; whether the client may still send to it."""
        claim_owner(self.requester, self.session_id)
        return self.may_see_now()

    async def claim_on_loop(self) -> SessionOwner | None:
        """The claim of the id nobody used at connect, made on the event loop (no thread hop on
        a chat's first turn); ``None`` when it could not be (the id is used by now, or there is
        no prepared claimant): the claim in a worker thread decides."""
        fields, self.claimant = self.claimant, None
        using = self.loop_alias()
        if fields is None or using is None:
            return None
        identity_stored, self.identity_stored = self.identity_stored, None
        if identity_stored is not None and not await _succeeded(identity_stored):
            return None  # the claim in a thread stores it again, or reports the outage
        quota = warlock_settings.MAX_SESSIONS_PER_OWNER
        try:
            async with loop_connection(using) as connection:
                if connection is None:
                    return None
                claim = await aclaim(connection, self.session_id, fields, using, quota)
        except DatabaseError:  # a user deleted meanwhile, a connection lost: as in a thread
            logger.warning("could not claim %r on the event loop", self.session_id, exc_info=True)
            return None
        return None if claim is UNDECIDED else claim

    def may_claim_by_first_turn(self, host: Host) -> bool:
        """Whether the next frame's claim may be made by its turn's statement: the id was
        unused at connect, the client speaks, and ``host`` runs the turn on the event loop."""
        return self.claimant is not None and self.speaks and host.runs_on_loop()

    async def claimed_by_first_turn(
        self, host: Host, turn_input: dict[str, Any], context: Any
    ) -> tuple[HostedTurn, SessionOwner] | None:
        """The first frame's claim, its quota's count and its turn in one statement on the
        event loop (``claims.first_claim``), for an id nobody used at connect: the turn and
        the owner row it made. ``None`` when they were not made so (nothing was written): the
        claim and the turn then go their own ways (:meth:`claim_on_loop`, ``Host.ahandle``),
        which decide alike (``tests/test_claims.py``)."""
        fields, using = self.claimant, self.loop_alias()
        if fields is None or using is None or not self.may_claim_by_first_turn(host):
            return None
        if self.identity_stored is not None and not await _succeeded(self.identity_stored):
            return None  # claim_on_loop leaves it to the thread's claim
        condition = first_claim(
            self.session_id, fields, using, warlock_settings.MAX_SESSIONS_PER_OWNER
        )
        hosted, outcome = await host.ahandle_first(
            self.session_id, turn_input, context, condition=condition
        )
        claim = claimed_by(outcome, self.session_id, fields)
        if hosted is None or claim is None:
            return None
        self.claimant = self.identity_stored = None
        return hosted, claim

    async def release(self, claim: SessionOwner) -> None:
        """Undo this socket's claim after its first turn failed; its next frame claims again."""
        try:
            await in_worker_thread(release_claim)(claim, default_store())
        except Exception:  # the turn's own error is the one to report
            logger.warning("could not release the claim on %r", self.session_id, exc_info=True)
        self.claimant = self.first_claimant


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
