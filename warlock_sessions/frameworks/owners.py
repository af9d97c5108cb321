"""Who a framework's state belongs to, as this app's owner columns keep it."""

from __future__ import annotations

from typing import Any

from ..permissions import owner_fields


def owner_of(owner: Any) -> dict[str, Any] | None:
    """``owner`` as the owner columns hold it: a Django user, a request (its user, or its
    anonymous visitor's key), or ``None`` (server code's: nobody owns it). An anonymous user
    (``request.user`` of a visitor) is nobody: a visitor is known by their request."""
    if owner is None or getattr(owner, "is_authenticated", True) is False:
        return None
    if hasattr(owner, "session") and hasattr(owner, "user"):  # a request
        return owner_fields(owner)
    return {"user": owner, "anonymous_key": ""}
