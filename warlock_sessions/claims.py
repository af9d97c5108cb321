"""What uses a session id, and the claim of one nobody uses: one rule set, two implementations,
held to the same answers by one conformance suite (``tests/test_claims.py``).

The rules. An id is *used* when a session is stored under it or an owner row names it (in
any tenant: ids are one namespace). A *claim* makes its claimant the owner of an unused id,
unless they own ``MAX_SESSIONS_PER_OWNER`` sessions already in the current tenant
(``QuotaExceededError``, decided on their tally: ``models.quotas``); what a session its store
dropped left behind (its log, outbox, wakes) is forgotten first, so the new conversation
inherits none of it. Then the policy
decides on the id as it is (``permissions``).

The implementations:

* :func:`usage` and :func:`claim_new_session`: the ORM in a worker thread, on any database
  and any store;
* :func:`ausage` and :func:`aclaim`: one statement each on the event loop's own PostgreSQL
  connection (``backends.loop_connections``), so a chat's first message makes no thread hop.
  They answer :data:`UNDECIDED` where only the thread's can: a log left behind to forget, a
  claim that lost a race with another of the same id, and the usage of an id while
  tenants are on (the policy then reads the database). The caller asks the thread's then.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import IntegrityError, connections
from django.utils import timezone

from . import tenancy
from .backends.loop_connections import database
from .errors import QuotaExceededError
from .models import OwnerTally, SessionEvent, SessionOwner, forget_records
from .models import Session as SessionRow
from .models.quotas import tally_key
from .permissions import claim_owner, used_by_another_tenant
from .stores.base import Store
from .stores.db import SaveCondition


class Undecided(enum.Enum):
    """An answer the loop's implementation cannot give: ask the thread's."""

    UNDECIDED = "undecided"


UNDECIDED = Undecided.UNDECIDED


@dataclass(frozen=True)
class Usage:
    """What uses an id: its owner row (``None``: nobody owns it), and whether it is unused
    (no owner, and no session stored), which the first frame may claim."""

    owner: SessionOwner | None
    unused: bool


# -- in a worker thread -----------------------------------------------------------------------


def usage(session_id: str, store: Store) -> Usage:
    owner = SessionOwner.of(session_id)
    return Usage(owner, owner is None and store.load(session_id) is None)


def claim_new_session(request: Any, session_id: str, store: Store) -> SessionOwner | None:
    """Claim ``session_id`` for ``request`` if nothing uses it; returns the new owner row, or
    ``None`` (the policy then decides on the session as it is)."""
    if (
        SessionOwner.objects.filter(session_id=session_id).exists()  # the cheaper, and usual
        or store.load(session_id) is not None
        or used_by_another_tenant(session_id, getattr(store, "using", None))
    ):
        return None
    if SessionEvent.objects.filter(session_id=session_id).exists():  # every turn logs events
        forget_records(session_id)
    return claim_owner(request, session_id)


def release_claim(owner: SessionOwner, store: Store) -> None:
    """Undo a claim whose first turn failed, unless that turn (or another) made the session:
    a claim must not outlive the turn that justified it, or the claimant would own whatever
    server code later creates under the id."""
    if store.load(owner.session_id) is None:
        SessionOwner.objects.filter(session_id=owner.session_id, pk=owner.pk).delete()


# -- on the event loop's connection -----------------------------------------------------------


async def ausage(connection: Any, session_id: str, using: str) -> Usage | Undecided:
    """:func:`usage` in one statement on ``connection``."""
    if tenancy.current() is not None:
        return UNDECIDED
    with database(using).wrap_database_errors:
        cursor = await connection.execute(_statements(using, False)["usage"], [session_id] * 2)
        stored, owner_id, user_id, key, tenant = await cursor.fetchone()
    if owner_id is None:
        return Usage(None, not stored)
    owner = SessionOwner(
        pk=owner_id, session_id=session_id, user_id=user_id, anonymous_key=key, tenant=tenant
    )
    return Usage(owner, False)


async def aclaim(
    connection: Any,
    session_id: str,
    owner: dict[str, Any],
    using: str,
    quota: int | None = None,
) -> SessionOwner | Undecided | None:
    """:func:`claim_new_session` for ``owner`` (``user_id``, ``anonymous_key``) in one
    statement on ``connection``: the owner row and its owner's count (``models.quotas``)
    together, or neither."""
    sql = _statements(using, tenancy.current() is not None)
    try:
        with database(using).wrap_database_errors:
            cursor = await connection.execute(
                f"WITH {sql['claim']} SELECT {CLAIM_OUTCOME}",
                _claim_params(session_id, owner, using, quota),
            )
            claimed, used, logged = await cursor.fetchone()
    except IntegrityError:  # a claim of the same id committed meanwhile
        return UNDECIDED
    made = claimed_by((claimed,), session_id, owner)
    if made is not None:
        return made
    if used:
        return None
    if logged:
        return UNDECIDED  # a log left behind, which the thread's forgets first
    raise QuotaExceededError("sessions", quota or 0)


def first_claim(
    session_id: str, owner: dict[str, Any], using: str, quota: int | None = None
) -> SaveCondition:
    """:func:`aclaim`'s claim as the condition of a session's first save
    (``Host.ahandle_first``): the claim, the quota's count and the first turn in one
    statement, all or nothing. Its values are :func:`claimed_by`'s to read."""
    sql = _statements(using, tenancy.current() is not None)
    return SaveCondition(
        ctes=sql["claim"],
        params=_claim_params(session_id, owner, using, quota),
        gate="claimed",
        select=CLAIM_OUTCOME,
    )


def claimed_by(
    outcome: tuple[Any, ...], session_id: str, owner: dict[str, Any]
) -> SessionOwner | None:
    """The owner row a :func:`first_claim` made, from the values it returned (``None``: it
    made none, and the claim is to be decided as :func:`aclaim` decides it)."""
    claimed = outcome[0] if outcome else None
    return (
        None if claimed is None else SessionOwner(pk=int(claimed), session_id=session_id, **owner)
    )


def _claim_params(
    session_id: str, owner: dict[str, Any], using: str, quota: int | None
) -> list[Any]:
    """The claim's parameters, in the order of its statement's placeholders."""
    tenant = tenancy.current()
    user_id, key = owner["user_id"], owner["anonymous_key"]
    now = database(using).ops.adapt_datetimefield_value(timezone.now())
    tally = tally_key("sessions", user_id, key, tenant or "")
    limit = MAX_COUNT if quota is None else quota
    scope = [] if tenant is None else [tenant]
    return [session_id] * 3 + [tally, limit, limit, session_id, user_id, key, now, *scope]


#: What a claim returns: the new owner row's id (``NULL``: none), whether the id was used,
#: and whether a log was left behind.
CLAIM_OUTCOME = "(SELECT * FROM claimed), (SELECT used FROM used), (SELECT logged FROM used)"
#: No quota, for the claim statement's comparisons.
MAX_COUNT = 2**31 - 1
#: The owner row's columns the claim statement fills, in the order of its parameters.
OWNER_COLUMNS = ("session_id", "user", "anonymous_key", "created_at")


@cache
def _statements(using: str, tenant: bool) -> dict[str, str]:
    """The loop's statements on ``using``'s tables (``tenant``: inside a tenant's scope, which
    each takes after its row's values)."""
    quote = connections[using].ops.quote_name
    owner, event, session = SessionOwner._meta, SessionEvent._meta, SessionRow._meta
    column = {field.name: quote(field.column or "") for field in owner.concrete_fields}
    owners, sessions = quote(owner.db_table), quote(session.db_table)
    stored = f"SELECT 1 FROM {sessions} WHERE {quote(session.get_field('id').column or '')} = %s"
    logged = (
        f"SELECT 1 FROM {quote(event.db_table)} "
        f"WHERE {quote(event.get_field('session_id').column or '')} = %s"
    )
    owned = f"SELECT 1 FROM {owners} WHERE {column['session_id']} = %s"
    claimed = [*OWNER_COLUMNS, *(["tenant"] if tenant else [])]
    tallies = quote(OwnerTally._meta.db_table)
    return {
        # The owner row of an id no session, log or owner uses yet (in any tenant), counted
        # on its owner's tally unless that holds the quota already; a claim of the same id
        # committed meanwhile fails the statement on the owner row's unique id, count and
        # all. Common table expressions, which CLAIM_OUTCOME reads.
        "claim": (
            f"used AS (SELECT EXISTS ({stored}) OR EXISTS ({owned}) AS used, "
            f"EXISTS ({logged}) AS logged), "
            f"counted AS (INSERT INTO {tallies} (key, count) SELECT %s, 1 FROM used "
            "WHERE NOT used.used AND NOT used.logged AND 0 < %s "
            f"ON CONFLICT (key) DO UPDATE SET count = {tallies}.count + 1 "
            f"WHERE {tallies}.count < %s RETURNING 1), "
            f"claimed AS (INSERT INTO {owners} ("
            + ", ".join(column[name] for name in claimed)
            + f") SELECT {', '.join(['%s'] * len(claimed))} FROM counted "
            f"RETURNING {column['id']})"
        ),
        # Whether the session is stored, and its owner row (NULLs when it has none).
        "usage": (
            f"SELECT EXISTS ({stored}), "
            + ", ".join(
                f"owner.{column[name]}" for name in ("id", "user", "anonymous_key", "tenant")
            )
            + f" FROM (SELECT 1) AS one LEFT JOIN {owners} AS owner "
            f"ON owner.{column['session_id']} = %s"
        ),
    }
