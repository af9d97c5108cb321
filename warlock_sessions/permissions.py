"""Who may do what with a session over HTTP and websockets (``WARLOCK_SESSIONS["PERMISSION"]``).

A policy is a :class:`SessionPolicy`: the API and the websockets ask it the same questions (may
this requester know the session exists, may they do this action to it, do they send what server
code sends), and the list endpoint which sessions they may list. The requester is a DRF request,
or for a socket a :class:`Requester` with the connection's user and Django session. The object
judged is a :class:`SessionAccess`: the session id and its owner record.
"""

from __future__ import annotations

import hashlib
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol, cast

from django.contrib.auth.models import AnonymousUser
from django.db import router
from django.http.request import HttpHeaders
from rest_framework.permissions import BasePermission, BasePermissionMetaclass

from . import tenancy
from .conf import Expected, expect, warlock_settings
from .errors import NewVisitorsThrottledError
from .models import (
    Conversation,
    Session,
    SessionEvent,
    SessionOwner,
    SessionQuerySet,
)
from .models.quotas import create_counted

#: Actions that write a raw blob or remove a session: never an end user's.
ADMIN_ACTIONS = {"update": "change", "partial_update": "change", "destroy": "delete"}
READ_ACTIONS = frozenset({"list", "retrieve", "events", "history"})


#: What a socket may do once admitted, as the policy's action name.
TURN_ACTION = "turn"
#: Taking a chat handed to people, answering in the bot's place, handing it back (a
#: ``handover`` input, from staff), as the policy's action name.
HANDOVER_ACTION = "handover"


class Owner(Protocol):
    """What ``is_owner`` reads: a ``SessionOwner`` row, or a ``Conversation`` header."""

    user_id: Any
    anonymous_key: str


@dataclass(frozen=True)
class SessionAccess:
    """What a policy judges: the session's (or conversation's) id and its owner, and which of
    the two it is (``model``: ``"session"`` or ``"conversation"``, as the model permissions
    name them)."""

    session_id: str
    owner: Owner | None
    model: str = "session"


@dataclass(frozen=True)
class Requester:
    """Who makes a request outside DRF (a websocket): its user and Django session, and the
    connection's ASGI scope (its headers and path, for a ``TENANT_RESOLVER``)."""

    user: Any
    session: Any
    scope: Any = None


#: Where an anonymous visitor's identity is kept in their Django session: the session key it
#: had when they first claimed a session. Kept as data, it survives ``login()`` cycling the
#: key; and every tab of the visitor, however they race, writes the same value.
VISITOR_KEY = "warlock_visitor"
#: The longest visitor identity an owner row holds.
MAX_VISITOR_KEY = 64


def anonymous_key(request: Any, *, create: bool = False) -> str:
    """The identity of an anonymous visitor: the one their Django session keeps, else its key.
    With ``create`` the identity is stored in the session (saved, created if need be), so it
    outlives a login; a new one only while the client's address has not had
    ``MAX_NEW_VISITORS_PER_ADDRESS`` this hour. Reading never creates a session row."""
    session = getattr(request, "session", None)  # a DRF request passes on Django's
    if session is None:
        return ""
    key = session.get(VISITOR_KEY)
    if key is None and create:
        admit_new_visitor(request)
        if not session.session_key:
            session.save()  # a visitor with no session yet gets one
        key = session[VISITOR_KEY] = visitor_key(session.session_key)
        try:
            session.save()
        except BaseException:
            del session[VISITOR_KEY]  # not stored: whoever asks next must store it again
            raise
    return key or visitor_key(session.session_key or "")


class SocketRequest:
    """What DRF's throttles read of a request (the user, the client's address), for a socket:
    its frames and its new visitors count against the same throttles, in the same buckets, as
    an HTTP request of the same client."""

    method = "POST"

    def __init__(self, scope: Any) -> None:
        self.user = scope.get("user") or AnonymousUser()
        client = scope.get("client") or ("",)
        self.META = {"REMOTE_ADDR": client[0] or ""}
        forwarded = tenancy.scope_headers(scope).get(b"x-forwarded-for")
        if forwarded is not None:
            self.META["HTTP_X_FORWARDED_FOR"] = forwarded
        self.headers = HttpHeaders(self.META)
        self._request = self


def admit_new_visitor(request: Any) -> None:
    """``NewVisitorsThrottledError`` when ``request``'s address has had its new visitors for
    the hour; else counts one more. ``request``: an HTTP request, or a socket's ``Requester``."""
    # Imported here: DRF's throttling module reads the throttle rates when first imported.
    from .throttling import NewVisitorThrottle

    client: Any = request
    if not hasattr(request, "META"):  # a socket's Requester
        client = SocketRequest(getattr(request, "scope", None) or {})
    throttle, view = NewVisitorThrottle(), cast(Any, None)  # no view: the rate is the setting's
    if not throttle.allow_request(client, view):
        raise NewVisitorsThrottledError(throttle.wait())


def visitor_key(session_key: str) -> str:
    """A Django session's key as the visitor's identity: itself, or a digest of it when it is
    longer than an owner row holds (``signed_cookies`` sessions: the key is the whole cookie)."""
    if len(session_key) <= MAX_VISITOR_KEY:
        return session_key
    return hashlib.sha256(session_key.encode()).hexdigest()[:MAX_VISITOR_KEY]


def adopt_visitor_sessions(user: Any, request: Any) -> int:
    """Give ``user`` the sessions and conversations they started as an anonymous visitor (on
    login): they go on under their account. Returns how many were adopted."""
    key = anonymous_key(request)
    if not key or not getattr(user, "pk", None):
        return 0
    return sum(  # their quota counts go with them (OwnedQuerySet.update)
        model.objects.filter(user=None, anonymous_key=key).update(user=user, anonymous_key="")
        for model in (SessionOwner, Conversation)
    )


def claim_owner(request: Any, session_id: str) -> SessionOwner | None:
    """Make whoever makes ``request`` (its user, or for an anonymous visitor their Django
    session) the owner of a session nobody owns yet, returning the new owner row; when someone
    else owns it already (or won a concurrent claim) return ``None`` and let the policy
    decide. ``QuotaExceededError`` when they own ``MAX_SESSIONS_PER_OWNER`` sessions already.
    ``request`` is a DRF request or anything with ``user`` and ``session``."""
    using = router.db_for_write(SessionOwner) or "default"
    limit = warlock_settings.MAX_SESSIONS_PER_OWNER
    row = create_counted(SessionOwner, using, limit, session_id=session_id, **owner_fields(request))
    return row if isinstance(row, SessionOwner) else None


def owner_fields(request: Any) -> dict[str, Any]:
    """Who makes ``request``, as an owner row holds it: its ``user``, or for an anonymous
    visitor their ``anonymous_key`` (kept in their Django session, created if need be)."""
    user = request.user if request.user and request.user.is_authenticated else None
    return {"user": user, "anonymous_key": "" if user else anonymous_key(request, create=True)}


def used_by_another_tenant(session_id: str, using: str | None = None) -> bool:
    """Whether a tenant other than the current scope's keeps ``session_id`` (a session, its
    owner or its log). Ids are one namespace: such an id is answered as one the requester may
    not see, and never claimed. Always false outside every tenant's scope."""
    tenant = tenancy.current()
    if tenant is None:
        return False
    return any(
        model._base_manager.db_manager(using)
        .filter(**{field: session_id})
        .exclude(tenant=tenant)
        .exists()
        for model, field in (
            (SessionOwner, "session_id"),
            (Session, "id"),
            (SessionEvent, "session_id"),
        )
    )


def is_owner(request: Any, owner: Owner | None) -> bool:
    if owner is None:
        return False
    if request.user and request.user.is_authenticated:
        return bool(owner.user_id == request.user.pk)
    return (
        owner.user_id is None
        and bool(owner.anonymous_key)
        and owner.anonymous_key == anonymous_key(request)
    )


# The stubs type DRF's `|` on permission classes apart from type's union `|`; at run time
# DRF's wins, as it does on every BasePermission.
class _PolicyMeta(BasePermissionMetaclass, ABCMeta):  # type: ignore[misc]
    """DRF's permission metaclass (``&``, ``|`` on classes) with abstract methods."""


class SessionPolicy(BasePermission, metaclass=_PolicyMeta):
    """The protocol of ``WARLOCK_SESSIONS["PERMISSION"]``. Subclass it (or
    :class:`OwnerOrStaff`) and answer the four questions; DRF's ``has_object_permission`` is
    answered from :meth:`can_act` with the viewset's action, so one policy rules both the
    API and the websockets. ``requester`` has ``user`` and ``session`` in every method.

    ``can_see`` and ``visible`` answer the same question, for one session and for a list: a
    policy that changes one must change the other (check ``W005``), or the list would show
    sessions that answer 404."""

    #: Whether the answers about a session depend only on the requester and the owner record,
    #: so a socket may ask at connect about the owner its first frame would make, and make it
    #: on the event loop without asking again. A policy that reads other state (a quota, a
    #: ban list) leaves this false: its sockets claim in a worker thread and ask at claim time.
    #: Such a policy is asked on the event loop at an anonymous visitor's connect, so it must
    #: not block there (a database read is refused by Django, and asked again in a thread).
    decides_from_owner = False

    @abstractmethod
    def can_see(self, requester: Any, access: SessionAccess) -> bool:
        """Whether to admit the session exists (everything else answers 404 / 4403)."""
        raise NotImplementedError

    @abstractmethod
    def can_act(self, requester: Any, action: str, access: SessionAccess) -> bool:
        """Whether ``action`` (``retrieve``, ``events``, ``turn``, ``update``,
        ``partial_update``, ``destroy``; for a conversation ``retrieve``, ``history``,
        ``send``, ``fork``, ``truncate``, ``resume``, ``destroy``) is allowed on a session or
        conversation the requester can see."""
        raise NotImplementedError

    @abstractmethod
    def visible(self, requester: Any, sessions: SessionQuerySet) -> SessionQuerySet:
        """The sessions the list endpoint shows to the requester (those ``can_see`` admits)."""
        raise NotImplementedError

    @abstractmethod
    def is_trusted(self, requester: Any) -> bool:
        """Whether the requester sends what server code sends (context, the agent, wakes,
        private events; see ``host.wire.check_allowed``); end users never should."""
        raise NotImplementedError

    def reads_staff_notes(self, requester: Any) -> bool:
        """Whether the requester reads what staff write for staff (a handover's reason, the
        staff account that acted): the session's own staff, never its end user. By default
        whoever is trusted to send what server code sends."""
        return self.is_trusted(requester)

    def has_object_permission(self, request: Any, view: Any, obj: SessionAccess) -> bool:
        return self.can_act(request, getattr(view, "action", "") or "", obj)


class OwnerOrStaff(SessionPolicy):
    """The owner of a session or conversation (the user, or for an anonymous visitor the Django
    session, that started it) may read it, its events, and send it turns. Everyone else, staff
    included, is held to Django's model permissions (``session`` or ``conversation``):
    ``view_*`` to read, ``change_*`` to send turns (of any kind: what server code sends) and
    write raw blobs, ``delete_*`` to delete, and ``handle_chats`` to take, answer and hand back
    chats handed to people. Superusers have every permission; being staff alone grants none.
    Everyone else gets 404, so a session's existence does not leak.

    A subclass that reads state besides the requester and the owner sets ``decides_from_owner``
    back to false."""

    decides_from_owner = True

    def can_act(self, requester: Any, action: str, access: SessionAccess) -> bool:
        user = requester.user
        if action == HANDOVER_ACTION:
            return has_permission(user, "handle_chats")
        needed = ADMIN_ACTIONS.get(action)
        if needed:
            return has_permission(user, f"{needed}_{access.model}")
        if has_permission(user, f"change_{access.model}"):
            return True  # whoever may write raw blobs may send turns
        if action in READ_ACTIONS and reads_all(user, access.model):
            return True
        return is_owner(requester, access.owner)

    def is_trusted(self, requester: Any) -> bool:
        """Holders of ``change_session`` send what server code sends."""
        return has_permission(requester.user, "change_session")

    def can_see(self, requester: Any, access: SessionAccess) -> bool:
        return reads_all(requester.user, access.model) or is_owner(requester, access.owner)

    def reads_staff_notes(self, requester: Any) -> bool:
        """Whoever reads every session (``view_session``), as the admin shows it to them."""
        return reads_all(requester.user)

    def visible(self, requester: Any, sessions: SessionQuerySet) -> SessionQuerySet:
        user = requester.user
        if reads_all(user):
            return sessions
        if user and user.is_authenticated:
            owned = SessionOwner.objects.filter(user=user)
        else:
            owned = SessionOwner.objects.filter(
                user=None, anonymous_key=anonymous_key(requester) or None
            )
        return sessions.filter(id__in=owned.values("session_id"))


def has_permission(user: Any, codename: str) -> bool:
    """Whether ``user`` (an active account) has this app's model permission ``codename``."""
    return bool(user and user.is_authenticated and user.has_perm(f"warlock_sessions.{codename}"))


def reads_all(user: Any, model: str = "session") -> bool:
    """Whether ``user`` reads every row of ``model`` (``view_*``)."""
    return has_permission(user, f"view_{model}")


expect(
    "PERMISSION",
    Expected(
        SessionPolicy,
        "a SessionPolicy class with every method",
        "warlock_sessions.E016",
        concrete=True,
        hint="Subclass warlock_sessions.permissions.SessionPolicy (or OwnerOrStaff): the API "
        "and the websockets both ask it can_see, can_act, visible and is_trusted.",
    ),
)
