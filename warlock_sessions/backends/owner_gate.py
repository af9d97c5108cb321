"""One claim at a time per owner: counting an owner's rows against a quota and inserting one
more is one decision (``MAX_SESSIONS_PER_OWNER``, ``MAX_CONVERSATIONS_PER_OWNER``). Counted
then inserted without it, 12 requests at once under a quota of 5 made 12 rows."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from ..models import SessionLockRow

#: Takes the transaction-scoped advisory lock of an owner's key (PostgreSQL). Held to the
#: transaction's end, and taken in a statement before the count: a statement sees only what
#: was committed when it began.
ADVISORY_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


def owner_key(user_id: Any, anonymous_key: str) -> str:
    """An owner (a user's id, or a visitor's key) as a lock's key: a digest, so no row or log
    names them."""
    who = f"user:{user_id}" if user_id is not None else f"visitor:{anonymous_key}"
    return "owner:" + hashlib.sha256(who.encode()).hexdigest()[:32]


@contextmanager
def owner_gate(owner: dict[str, Any], using: str, limit: int | None) -> Iterator[None]:
    """A transaction on ``using`` that no other claim of ``owner`` (``owner_fields``: a
    ``user`` or an ``anonymous_key``) runs beside, for counting their rows against ``limit``
    and inserting one more. On PostgreSQL an advisory lock; elsewhere a gate row of the locks
    table, inserted and deleted inside the transaction: a second claimant's insert waits for
    the first to commit (SQLite's write lock, another database's unique key), and nothing is
    left behind. No limit, no gate."""
    if limit is None:
        yield
        return
    user = owner.get("user")
    key = owner_key(getattr(user, "pk", None), owner.get("anonymous_key") or "")
    with transaction.atomic(using=using):
        connection = connections[using]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(ADVISORY_LOCK, [key])
            yield
            return
        gates = SessionLockRow.objects.using(using)
        gates.create(key=key, token="quota", expires_at=timezone.now())
        yield
        gates.filter(key=key).delete()
