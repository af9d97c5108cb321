"""What a committed turn leaves behind: outbox rows, the session's event log and its wakes,
written inside the save's transaction; and what happens only after that commits: signals, the
channel-layer push and delivery."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import Max

from .. import signals
from ..conf import warlock_settings
from ..engine import TurnResult
from ..engine.isotime import ms_from_iso
from ..models import AppliedInput, OutboundMessage, SessionEvent, Wake, forget_records

logger = logging.getLogger("warlock_sessions.host")

#: How many times an event batch is renumbered when another writer took its ``seq`` first
#: (only possible with a store outside the database, whose save and log are two transactions).
SEQ_ATTEMPTS = 5


def group_name(session_id: str) -> str:
    """The channel-layer group of a session (group names allow only a short ASCII alphabet)."""
    return "warlock_session_" + hashlib.sha256(session_id.encode()).hexdigest()[:40]


def _moment(iso: str) -> datetime:
    return datetime.fromtimestamp(ms_from_iso(iso) / 1000, tz=UTC)


def describe_input(turn_input: Mapping[str, Any]) -> dict[str, Any]:
    """The input as the turn event records it (no payloads: they may be large or private)."""
    kind = next(iter(turn_input))
    value = turn_input[kind]
    if kind == "message":
        return {"kind": kind, "id": value.get("id")}
    if kind == "wake":
        return {"kind": kind, "key": value}
    return {"kind": kind, "key": value.get("key"), "name": value.get("name") or value.get("flow")}


def applied_key(turn_input: Mapping[str, Any]) -> str | None:
    """How the record of applied inputs names ``turn_input`` (a digest of its kind and id, so
    no two inputs share it and its length is bounded); ``None`` for an input without an id of
    its own (a message sent without ``id``) and for wakes (a wake row fires once)."""
    identity = input_identity(turn_input)
    if identity is None:
        return None
    return hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode()).hexdigest()


def input_identity(turn_input: Mapping[str, Any]) -> list[str] | None:
    kind = next(iter(turn_input))
    value = turn_input[kind]
    if kind == "message":
        return [kind, value["id"]] if value.get("id") else None
    if kind == "event":
        return [kind, value["name"], value["key"]]
    if kind == "start":
        return [kind, value["flow"], value["key"]]
    return None


def was_applied(session_id: str, turn_input: Mapping[str, Any], using: str) -> bool:
    """Whether the record of applied inputs has ``turn_input`` for the session."""
    key = applied_key(turn_input)
    return key is not None and (
        AppliedInput.objects.using(using).filter(session_id=session_id, input_key=key).exists()
    )


def forget_applied(session_id: str, using: str) -> None:
    AppliedInput.objects.using(using).filter(session_id=session_id).delete()


def turn_events(
    result: TurnResult, version: int, turn_input: Mapping[str, Any]
) -> list[tuple[str, Any]]:
    """The events a chat UI sees for one committed turn, in order, ending with its summary."""
    events: list[tuple[str, Any]] = [("run_started", started) for started in result.started]
    events += [("outcome", line) for line in result.outcomes]
    events += [("message", message) for message in result.messages]
    events += [
        ("run_ended", {"runId": run["id"], "flowId": run["flowId"], "reason": run["reason"]})
        for run in result.ended
    ]
    events.append(
        (
            "turn",
            {
                "version": version,
                "changed": result.changed,
                "input": describe_input(turn_input),
                "outcomes": [line["code"] for line in result.outcomes if line.get("code")],
                "llmCalls": result.llm_calls,
            },
        )
    )
    return events


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

    @property
    def status(self) -> str:
        return (
            OutboundMessage.Status.DELIVERED if self.delivered else OutboundMessage.Status.PENDING
        )

    def numbered(self, first_seq: int) -> list[dict[str, Any]]:
        """The events as written, ``seq`` from ``first_seq`` on."""
        return [
            {"seq": first_seq + index, "type": kind, "payload": payload}
            for index, (kind, payload) in enumerate(self.events)
        ]


def turn_records(
    *,
    session_id: str,
    agent_name: str,
    result: TurnResult,
    version: int,
    turn_input: Mapping[str, Any],
    now: datetime,
) -> TurnRecords:
    scheduled = {entry["key"] for entry in result.schedule}
    # One statement may not touch a row twice: a fired silence wake is often the very key the
    # new silence wake replaces, and a rescheduled key is upserted rather than retired.
    fired = turn_input.get("wake") if turn_input.get("wake") not in scheduled else None
    replaced = sorted(
        {entry["replaces"] for entry in result.schedule if entry.get("replaces")}.union(
            result.retired
        ).difference(scheduled, {fired})
    )
    return TurnRecords(
        session_id=session_id,
        agent=agent_name,
        now=now,
        fired=fired,
        replaced=replaced,
        applied=applied_key(turn_input),
        messages=result.messages,
        schedule=result.schedule,
        events=turn_events(result, version, turn_input),
        delivered=warlock_settings.DELIVER is None,
    )


def write_records(changes: TurnRecords, using: str, *, exclusive: bool) -> int:
    """Write ``changes`` with the ORM, inside the caller's transaction; returns the first seq.

    ``exclusive``: the caller holds the session's row lock, so no other turn of this session
    can number events meanwhile; otherwise a clash on ``seq`` is renumbered and retried.
    """
    now = changes.now
    if changes.applied:
        # Unique per session: an input applied before fails the whole transaction here.
        AppliedInput.objects.using(using).create(
            session_id=changes.session_id, input_key=changes.applied, created_at=now
        )
    OutboundMessage.objects.using(using).bulk_create(
        [
            OutboundMessage(
                key=message["key"],
                session_id=changes.session_id,
                kind=message["kind"],
                text=message["text"],
                after_ms=message["afterMs"],
                payload=message,
                created_at=now,
                deliver_after=now + timedelta(milliseconds=message["afterMs"]),
                status=changes.status,
                delivered_at=now if changes.delivered else None,
            )
            for message in changes.messages
        ],
        ignore_conflicts=True,  # the same key is the same message: a replay never queues it twice
    )
    wakes = Wake.objects.using(using).filter(
        session_id=changes.session_id, status=Wake.Status.PENDING
    )
    if changes.fired:
        wakes.filter(key=changes.fired).update(
            status=Wake.Status.FIRED, fired_at=now, lease_until=None
        )
    if changes.replaced:
        wakes.filter(key__in=changes.replaced).delete()
    if changes.schedule:
        Wake.objects.using(using).bulk_create(
            [
                Wake(
                    key=entry["key"],
                    session_id=changes.session_id,
                    agent=changes.agent,
                    due_at=_moment(entry["at"]),
                    created_at=now,
                )
                for entry in changes.schedule
            ],
            update_conflicts=True,
            unique_fields=["session_id", "key"],
            update_fields=["due_at", "agent", "status", "attempts", "lease_until"],
        )
    for attempt in range(1 if exclusive else SEQ_ATTEMPTS):
        last = (
            SessionEvent.objects.using(using)
            .filter(session_id=changes.session_id)
            .aggregate(last=Max("seq"))["last"]
            or 0
        )
        rows = [
            SessionEvent(
                session_id=changes.session_id,
                seq=last + index,
                type=kind,
                payload=payload,
                created_at=now,
            )
            for index, (kind, payload) in enumerate(changes.events, start=1)
        ]
        if exclusive:
            SessionEvent.objects.using(using).bulk_create(rows)
            return last + 1
        try:
            with transaction.atomic(using=using):
                SessionEvent.objects.using(using).bulk_create(rows)
            return last + 1
        except IntegrityError:  # another writer numbered events of this session first
            if attempt == SEQ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


#: What every write in ``statement_parts`` is guarded by: the session save took effect.
SAVED = "EXISTS (SELECT 1 FROM saved)"
#: The final select that returns the first ``seq`` those parts wrote.
FIRST_SEQ = "(SELECT MIN(seq) FROM events)"


def statement_parts(changes: TurnRecords, using: str) -> tuple[tuple[str, ...], list[Any]]:
    """``changes`` as PostgreSQL common table expressions for ``DjangoStore.save_together``:
    one statement writes the session and all of this, or (on a conflict) nothing.

    The rows travel as one JSON array per table, so the SQL text depends only on which writes
    a turn has (a handful of shapes, built once) and a turn binds a few parameters, not a few
    per row."""
    now = changes.now
    params: list[Any] = []
    if changes.applied:
        params += [changes.session_id, changes.applied, now]
    if changes.messages:
        params += [
            changes.session_id,
            changes.status,
            now,
            now,
            now if changes.delivered else None,
            json.dumps(changes.messages, ensure_ascii=False),
        ]
    if changes.fired:
        params += [now, changes.session_id, changes.fired]
    if changes.replaced:
        params += [changes.session_id, changes.replaced]
    if changes.schedule:
        params += [
            changes.session_id,
            changes.agent,
            now,
            json.dumps(changes.schedule, ensure_ascii=False),
        ]
    params += [changes.session_id, now, json.dumps(changes.events, ensure_ascii=False)]
    params.append(changes.session_id)
    shape = (
        bool(changes.applied),
        bool(changes.messages),
        bool(changes.fired),
        bool(changes.replaced),
        bool(changes.schedule),
    )
    return _statement_parts(using, *shape), params


@functools.cache
def _statement_parts(
    using: str, applied: bool, messages: bool, fired: bool, replaced: bool, schedule: bool
) -> tuple[str, ...]:
    table = {
        model: connections[using].ops.quote_name(model._meta.db_table)
        for model in (AppliedInput, OutboundMessage, SessionEvent, Wake)
    }
    parts: list[str] = []
    if applied:
        # No ON CONFLICT: an input applied before fails the statement, save included.
        parts.append(
            f"applied AS (INSERT INTO {table[AppliedInput]} (session_id, input_key, created_at) "
            f"SELECT %s, %s, %s WHERE {SAVED})"
        )
    if messages:
        parts.append(
            f"outbox AS (INSERT INTO {table[OutboundMessage]} (key, session_id, kind, text, "
            "after_ms, payload, status, attempts, last_error, created_at, deliver_after, "
            "delivered_at) SELECT m.value->>'key', %s, m.value->>'kind', m.value->>'text', "
            "(m.value->>'afterMs')::integer, m.value, %s, 0, '', %s, %s::timestamptz + "
            "(m.value->>'afterMs')::integer * interval '1 millisecond', %s::timestamptz "
            f"FROM jsonb_array_elements(%s::jsonb) AS m(value) WHERE {SAVED} "
            "ON CONFLICT (session_id, key) DO NOTHING)"
        )
    if fired:
        parts.append(
            f"fired AS (UPDATE {table[Wake]} SET status = 'fired', fired_at = %s, "
            "lease_until = NULL WHERE session_id = %s AND key = %s AND status = 'pending' "
            f"AND {SAVED})"
        )
    if replaced:
        parts.append(
            f"replaced AS (DELETE FROM {table[Wake]} WHERE session_id = %s "
            f"AND key = ANY(%s) AND status = 'pending' AND {SAVED})"
        )
    if schedule:
        parts.append(
            f"wakes AS (INSERT INTO {table[Wake]} (key, session_id, agent, due_at, status, "
            "attempts, last_error, created_at) SELECT w.value->>'key', %s, %s, "
            "(w.value->>'at')::timestamptz, 'pending', 0, '', %s "
            f"FROM jsonb_array_elements(%s::jsonb) AS w(value) WHERE {SAVED} "
            "ON CONFLICT (session_id, key) DO UPDATE SET due_at = EXCLUDED.due_at, "
            "agent = EXCLUDED.agent, status = 'pending', attempts = 0, lease_until = NULL)"
        )
    parts.append(
        f"events AS (INSERT INTO {table[SessionEvent]} (session_id, seq, type, payload, "
        "created_at) SELECT %s, base.last + e.ordinality, e.value->>0, e.value->1, %s "
        "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(value, ordinality) "
        f"CROSS JOIN (SELECT COALESCE(MAX(seq), 0) AS last FROM {table[SessionEvent]} "
        f"WHERE session_id = %s) AS base WHERE {SAVED} RETURNING seq)"
    )
    return tuple(parts)


def event_frame(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event (``{seq, type, payload}``) as the websocket and the events endpoint show it."""
    return {
        "seq": event["seq"],
        "type": event["type"],
        **_frame_payload(event["type"], event["payload"]),
    }


def _frame_payload(kind: str, payload: Any) -> dict[str, Any]:
    if kind == "message":
        return {
            "key": payload["key"],
            "text": payload["text"],
            "kind": payload["kind"],
            "after_ms": payload["afterMs"],
        }
    if kind == "turn":
        return {
            "version": payload["version"],
            "changed": payload["changed"],
            "outcomes": payload["outcomes"],
        }
    return {"data": payload}


def announce(*, session_id: str, result: TurnResult, version: int) -> None:
    """After commit: the signals of a committed turn."""
    signals.session_saved.send(sender=None, session_id=session_id, version=version, result=result)
    for started in result.started:
        signals.run_started.send(sender=None, session_id=session_id, run=started)
    for ended in result.ended:
        signals.run_ended.send(
            sender=None, session_id=session_id, run=ended, reason=ended["reason"]
        )
    for message in result.messages:
        signals.message_out.send(sender=None, session_id=session_id, message=message)


def _channel_layer() -> Any:
    """The default channel layer, or ``None`` when the project has none."""
    if not getattr(settings, "CHANNEL_LAYERS", None):
        return None
    from channels.layers import get_channel_layer

    return get_channel_layer()


async def apush(session_id: str, events: list[dict[str, Any]]) -> None:
    """After commit: the events to the session's channel-layer group (lossy; the log is the
    truth, and a socket that missed some catches up from it)."""
    layer = _channel_layer() if events else None
    if layer is None:
        return
    try:
        await layer.group_send(
            group_name(session_id),
            {
                "type": "warlock.events",
                "session_id": session_id,
                "events": [event_frame(event) for event in events],
            },
        )
    except Exception:
        logger.warning(
            "could not push events of session %r to the channel layer", session_id, exc_info=True
        )


def push(session_id: str, events: list[dict[str, Any]]) -> None:
    """``apush`` for synchronous code; without a channel layer it costs nothing (no event loop
    is started for it)."""
    if events and _channel_layer() is not None:
        from asgiref.sync import async_to_sync

        async_to_sync(apush)(session_id, events)


def forget_session(session_id: str, using: str | None = None) -> None:
    """Remove what the host and API keep about a session besides its blob: event log, outbox,
    wakes, applied inputs and owner; and close the sockets following it. Every deletion (the
    API's, the admin's, deleting the model row) goes through here, so an id used again starts
    clean and nobody inherits the old conversation."""
    forget_records(session_id, using)
    if _channel_layer() is not None:
        from asgiref.sync import async_to_sync

        async_to_sync(_announce_forgotten)(session_id)


async def _announce_forgotten(session_id: str) -> None:
    try:
        await _channel_layer().group_send(group_name(session_id), {"type": "warlock.forgotten"})
    except Exception:
        logger.warning("could not tell the sockets of %r it was deleted", session_id, exc_info=True)
