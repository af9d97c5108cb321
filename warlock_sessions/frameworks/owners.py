"""Who a framework's state belongs to, as this app's owner columns keep it."""

from __future__ import annotations

from typing import Any

from ..permissions import owner_fields


def owner_of(owner: Any) -> dict[str, Any] | None:
    """``owner`` as the owner columns hold it: a Django user, a request (its user, or its
    anonymous visitor's key), or ``None`` (server code's: nobody owns it)."""
    if owner is None:
        return None
    if hasattr(owner, "session") and hasattr(owner, "user"):  # a request
        return owner_fields(owner)
    return {"user": owner, "anonymous_key": ""}
