"""What a committed turn writes besides the session (outbox rows, wakes, its event log and the
record of its input), and the two ways to write it: with the ORM inside a transaction
(``write_records``), or as common table expressions of the save's own PostgreSQL statement
(``statement_parts``)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.db import IntegrityError, transaction
from django.db.models import Max

from ..backends.loop_connections import database
from ..encryption import event_place, outbox_place, seal_json, seal_text, sealing
from ..engine.isotime import datetime_from_iso
from ..models import (
    AppliedInput,
    OutboundMessage,
    Session,
    SessionEvent,
    Wake,
    bucket_of,
    tenant_of_parent,
    work_of,
)

#: How many times an event batch is renumbered when another writer took its ``seq`` first
#: (only possible with a store outside the database, whose save and log are two transactions).
SEQ_ATTEMPTS = 5


def _json(rows: Any) -> str:
    """Rows as the JSON array text the statement unpacks: orjson, the same text as the
    stdlib's in a fraction of the time; the stdlib for what orjson will not write (an integer
    beyond 64 bits from a caller), as before."""
    try:
        return orjson.dumps(rows).decode()
    except TypeError:
        return json.dumps(rows, ensure_ascii=False)


@dataclass(frozen=True)
class TurnRecords:
    """What one committed turn writes besides the session: messages, wakes and events."""

    session_id: str
    agent: str
    now: datetime
    fired: str | None
    replaced: list[str]
    applied: str | None
    messages: list[dict[str, Any]]
    schedule: list[dict[str, Any]]
    events: list[tuple[str, Any]]
    delivered: bool
    #: The last ``seq`` of the session's log as its load saw it, when the load said: the
    #: statement then numbers the events itself, so sealed ones are bound to their ``seq``.
    last_seq: int | None = None
    #: The events as the turn's own client is shown them live (``events`` as said, before
    #: ``REDACT``); ``None``: as written.
    shown: list[tuple[str, Any]] | None = None

    @property
    def status(self) -> str:
        return (
            OutboundMessage.Status.DELIVERED if self.delivered else OutboundMessage.Status.PENDING
        )

    def numbered(self, first_seq: int) -> list[dict[str, Any]]:
        """The events as shown live, ``seq`` from ``first_seq`` on."""
        events = self.events if self.shown is None else self.shown
        return [
            {"seq": first_seq + index, "type": kind, "payload": payload}
            for index, (kind, payload) in enumerate(events)
        ]


def write_records(changes: TurnRecords, using: str, *, exclusive: bool) -> int:
    """Write ``changes`` with the ORM, inside the caller's transaction; returns the first seq.
    Every row is the session's tenant's, whoever's scope the turn ran in, and is read and
    numbered among all of the session's rows (``_base_manager``), as the statement does.

    ``exclusive``: the caller holds the session's row lock, so no other turn of this session
    can number events meanwhile; otherwise a clash on ``seq`` is renumbered and retried.
    """
    now = changes.now
    tenant = tenant_of_parent(Session, using, pk=changes.session_id)
    bucket = bucket_of(changes.session_id)
    if changes.applied:
        # Unique per session: an input applied before fails the whole transaction here.
        AppliedInput._base_manager.using(using).create(
            session_id=changes.session_id,
            input_key=changes.applied,
            created_at=now,
            tenant=tenant,
        )
    OutboundMessage._base_manager.using(using).bulk_create(
        [
            OutboundMessage(
                key=message["key"],
                session_id=changes.session_id,
                bucket=bucket,
                tenant=tenant,
                kind=message["kind"],
                text=seal_text(message["text"], *outbox_place(changes.session_id, message["key"])),
                after_ms=message["afterMs"],
                payload=seal_json(
                    message, *outbox_place(changes.session_id, message["key"], "payload")
                ),
                created_at=now,
                deliver_after=now + timedelta(milliseconds=message["afterMs"]),
                status=changes.status,
                delivered_at=now if changes.delivered else None,
            )
            for message in changes.messages
        ],
        ignore_conflicts=True,  # the same key is the same message: a replay never queues it twice
    )
    wakes = Wake._base_manager.using(using).filter(
        **work_of(changes.session_id), status=Wake.Status.PENDING
    )
    if changes.fired:
        wakes.filter(key=changes.fired).update(
            status=Wake.Status.FIRED, fired_at=now, lease_until=None
        )
    if changes.replaced:
        wakes.filter(key__in=changes.replaced).delete()
    if changes.schedule:
        Wake._base_manager.using(using).bulk_create(
            [
                Wake(
                    key=entry["key"],
                    session_id=changes.session_id,
                    bucket=bucket,
                    tenant=tenant,
                    agent=changes.agent,
                    due_at=datetime_from_iso(entry["at"]),
                    created_at=now,
                )
                for entry in changes.schedule
            ],
            update_conflicts=True,
            unique_fields=["session_id", "key", "bucket"],
            update_fields=["due_at", "agent", "status", "attempts", "lease_until"],
        )
    log = SessionEvent._base_manager.using(using)
    for attempt in range(1 if exclusive else SEQ_ATTEMPTS):
        last = log.filter(session_id=changes.session_id).aggregate(last=Max("seq"))["last"] or 0
        rows = [
            SessionEvent(
                session_id=changes.session_id,
                tenant=tenant,
                seq=last + index,
                type=kind,
                payload=seal_json(payload, *event_place(changes.session_id, last + index)),
                created_at=now,
            )
            for index, (kind, payload) in enumerate(changes.events, start=1)
        ]
        if exclusive:
            log.bulk_create(rows)
            return last + 1
        try:
            with transaction.atomic(using=using):
                log.bulk_create(rows)
            return last + 1
        except IntegrityError:  # another writer numbered events of this session first
            if attempt == SEQ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


#: What every write in ``statement_parts`` is guarded by: the session save took effect.
SAVED = "EXISTS (SELECT 1 FROM saved)"
#: The tenant of every row those parts write: the saved session's (``tenancy``), whoever's
#: scope the turn ran in (an operator's turn on a tenant's session is that tenant's).
TENANT = "(SELECT tenant FROM saved)"
#: The final select that returns the first ``seq`` those parts wrote.
FIRST_SEQ = "(SELECT MIN(seq) FROM events)"


def statement_parts(changes: TurnRecords, using: str) -> tuple[tuple[str, ...], list[Any]]:
    """``changes`` as PostgreSQL common table expressions for ``DjangoStore.together``:
    one statement writes the session and all of this, or (on a conflict) nothing.

    The rows travel as one JSON array per table, so the SQL text depends only on which writes
    a turn has (a handful of shapes, built once) and a turn binds a few parameters, not a few
    per row."""
    now = changes.now
    sealed = sealing()
    if sealed and changes.last_seq is None:
        raise ValueError("a sealed log is written in one statement only from a numbered load")
    params: list[Any] = []
    bucket = bucket_of(changes.session_id)
    if changes.applied:
        params += [changes.session_id, changes.applied, now]
    if changes.messages:
        params += [
            changes.session_id,
            bucket,
            changes.status,
            now,
            now,
            now if changes.delivered else None,
            _json(_sealed_messages(changes) if sealed else changes.messages),
        ]
    if changes.fired:
        params += [now, bucket, changes.session_id, changes.fired]
    if changes.replaced:
        params += [bucket, changes.session_id, changes.replaced]
    if changes.schedule:
        params += [
            changes.session_id,
            bucket,
            changes.agent,
            now,
            _json(changes.schedule),
        ]
    if sealed:
        assert changes.last_seq is not None
        first = changes.last_seq + 1
        events = [
            [kind, seal_json(payload, *event_place(changes.session_id, first + index))]
            for index, (kind, payload) in enumerate(changes.events)
        ]
        params += [changes.session_id, first, now, _json(events)]
    else:
        params += [changes.session_id, now, _json(changes.events), changes.session_id]
    shape = (
        bool(changes.applied),
        bool(changes.messages),
        bool(changes.fired),
        bool(changes.replaced),
        bool(changes.schedule),
        sealed,
    )
    return _statement_parts(using, *shape), params


def _sealed_messages(changes: TurnRecords) -> list[dict[str, Any]]:
    """The outbox rows' values as the sealed statement reads them: text and message sealed."""
    return [
        {
            "key": message["key"],
            "kind": message["kind"],
            "afterMs": message["afterMs"],
            "text": seal_text(message["text"], *outbox_place(changes.session_id, message["key"])),
            "sealed": seal_json(
                message, *outbox_place(changes.session_id, message["key"], "payload")
            ),
        }
        for message in changes.messages
    ]


@functools.cache
def _statement_parts(
    using: str,
    applied: bool,
    messages: bool,
    fired: bool,
    replaced: bool,
    schedule: bool,
    sealed: bool = False,
) -> tuple[str, ...]:
    table = {
        model: database(using).ops.quote_name(model._meta.db_table)
        for model in (AppliedInput, OutboundMessage, SessionEvent, Wake)
    }
    parts: list[str] = []
    if applied:
        # No ON CONFLICT: an input applied before fails the statement, save included.
        parts.append(
            f"applied AS (INSERT INTO {table[AppliedInput]} (session_id, input_key, created_at, "
            f"tenant) SELECT %s, %s, %s, {TENANT} WHERE {SAVED})"
        )
    if messages:
        payload = "m.value->'sealed'" if sealed else "m.value"
        parts.append(
            f"outbox AS (INSERT INTO {table[OutboundMessage]} (key, session_id, bucket, tenant, "
            "kind, text, after_ms, payload, status, attempts, last_error, created_at, "
            f"deliver_after, delivered_at) SELECT m.value->>'key', %s, %s, {TENANT}, "
            "m.value->>'kind', "
            "m.value->>'text', "
            f"(m.value->>'afterMs')::integer, {payload}, %s, 0, '', %s, %s::timestamptz + "
            "(m.value->>'afterMs')::integer * interval '1 millisecond', %s::timestamptz "
            f"FROM jsonb_array_elements(%s::jsonb) AS m(value) WHERE {SAVED} "
            "ON CONFLICT (session_id, key, bucket) DO NOTHING)"
        )
    if fired:
        parts.append(
            f"fired AS (UPDATE {table[Wake]} SET status = 'fired', fired_at = %s, "
            "lease_until = NULL WHERE bucket = %s AND session_id = %s AND key = %s "
            "AND status = 'pending' "
            f"AND {SAVED})"
        )
    if replaced:
        parts.append(
            f"replaced AS (DELETE FROM {table[Wake]} WHERE bucket = %s AND session_id = %s "
            f"AND key = ANY(%s) AND status = 'pending' AND {SAVED})"
        )
    if schedule:
        parts.append(
            f"wakes AS (INSERT INTO {table[Wake]} (key, session_id, bucket, tenant, agent, "
            "due_at, status, attempts, last_error, created_at) "
            f"SELECT w.value->>'key', %s, %s, {TENANT}, %s, "
            "(w.value->>'at')::timestamptz, 'pending', 0, '', %s "
            f"FROM jsonb_array_elements(%s::jsonb) AS w(value) WHERE {SAVED} "
            "ON CONFLICT (session_id, key, bucket) DO UPDATE SET due_at = EXCLUDED.due_at, "
            "agent = EXCLUDED.agent, status = 'pending', attempts = 0, lease_until = NULL)"
        )
    if sealed:
        # Numbered from the load's last seq, as each entry was sealed for its own: the save
        # took effect only if no other turn logged anything since that load.
        parts.append(
            f"events AS (INSERT INTO {table[SessionEvent]} (session_id, tenant, seq, type, "
            f"payload, created_at) SELECT %s, {TENANT}, %s::bigint + e.ordinality - 1, "
            "e.value->>0, e.value->1, %s "
            "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(value, ordinality) "
            f"WHERE {SAVED} RETURNING seq)"
        )
        return tuple(parts)
    parts.append(
        f"events AS (INSERT INTO {table[SessionEvent]} (session_id, tenant, seq, type, "
        f"payload, created_at) SELECT %s, {TENANT}, base.last + e.ordinality, e.value->>0, "
        "e.value->1, %s "
        "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(value, ordinality) "
        f"CROSS JOIN (SELECT COALESCE(MAX(seq), 0) AS last FROM {table[SessionEvent]} "
        f"WHERE session_id = %s) AS base WHERE {SAVED} RETURNING seq)"
    )
    return tuple(parts)
