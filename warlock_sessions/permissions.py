"""Who may do what with a session over HTTP and websockets (``WARLOCK_SESSIONS["PERMISSION"]``).

The object a policy judges is a :class:`SessionAccess`: the session id and its owner record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .models import SessionOwner

#: Actions that write a raw blob or remove a session: never an end user's.
ADMIN_ACTIONS = {"update": "change", "partial_update": "change", "destroy": "delete"}
READ_ACTIONS = frozenset({"list", "retrieve", "events"})


@dataclass(frozen=True)
class SessionAccess:
    session_id: str
    owner: SessionOwner | None


def anonymous_key(request: Any) -> str:
    """The Django session key that identifies an anonymous visitor (created if missing)."""
    session = request._request.session if hasattr(request, "_request") else request.session
    if not session.session_key:
        session.save()
    return session.session_key or ""


def claim_owner(request: Any, session_id: str) -> SessionOwner | None:
    """Make whoever makes ``request`` (its user, or for an anonymous visitor their Django
    session) the owner of a session nobody owns yet, returning the new owner row; when someone
    else owns it already (or won a concurrent claim) return ``None`` and let the policy
    decide. ``request`` is a DRF request or anything with ``user`` and ``session``."""
    user = request.user if request.user and request.user.is_authenticated else None
    try:
        return SessionOwner.objects.create(
            session_id=session_id, user=user, anonymous_key="" if user else anonymous_key(request)
        )
    except IntegrityError:
        return None


def may_see(policy: Any, request: Any, access: SessionAccess) -> bool:
    """Whether ``policy`` admits the session exists to ``request`` (policies without
    ``can_see`` leave it to ``has_object_permission``)."""
    return not hasattr(policy, "can_see") or policy.can_see(request, access)


def is_owner(request: Request, owner: SessionOwner | None) -> bool:
    if owner is None:
        return False
    if request.user and request.user.is_authenticated:
        return owner.user_id == request.user.pk
    return (
        owner.user_id is None
        and bool(owner.anonymous_key)
        and owner.anonymous_key == anonymous_key(request)
    )


class OwnerOrStaff(BasePermission):
    """Staff may do anything. The owner of a session (the user, or for an anonymous visitor the
    Django session, that started it) may read it, its events, and send it turns. Writing a raw
    blob or deleting needs staff or the ``change_session``/``delete_session`` permissions (an
    end user must never write claims or data directly); ``change_session`` also allows turns and
    ``view_session`` reading. Everyone else gets 404, so a session's existence does not leak."""

    def has_object_permission(self, request: Request, view: Any, obj: SessionAccess) -> bool:
        user = request.user
        if user and user.is_staff:
            return True
        action = getattr(view, "action", "")
        needed = ADMIN_ACTIONS.get(action)
        if needed:
            return bool(user and user.has_perm(f"warlock_sessions.{needed}_session"))
        if user and user.has_perm("warlock_sessions.change_session"):
            return True  # whoever may write raw blobs may send turns
        if action in READ_ACTIONS and user and user.has_perm("warlock_sessions.view_session"):
            return True
        return is_owner(request, obj.owner)

    def can_see(self, request: Request, obj: SessionAccess) -> bool:
        """Whether to admit the session exists (404 otherwise)."""
        user = request.user
        return bool(
            user and (user.is_staff or user.has_perm("warlock_sessions.view_session"))
        ) or is_owner(request, obj.owner)
