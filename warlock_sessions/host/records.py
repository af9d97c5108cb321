"""What a committed turn leaves behind: outbox rows, the session's event log and its wakes,
written inside the save's transaction; and what happens only after that commits: signals, the
channel-layer push and delivery."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from .. import signals
from ..conf import warlock_settings
from ..engine import TurnResult
from ..engine.isotime import ms_from_iso
from ..models import OutboundMessage, SessionEvent, Wake

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


def record_turn(
    *,
    session_id: str,
    agent_name: str,
    result: TurnResult,
    version: int,
    turn_input: Mapping[str, Any],
    using: str,
    now: datetime,
) -> list[SessionEvent]:
    """Write the turn's outbox rows, events and wakes. Call inside the save's transaction."""
    delivered_by_log = warlock_settings.DELIVER is None
    OutboundMessage.objects.using(using).bulk_create(
        [
            OutboundMessage(
                key=message["key"],
                session_id=session_id,
                kind=message["kind"],
                text=message["text"],
                after_ms=message["afterMs"],
                payload=message,
                created_at=now,
                deliver_after=now + timedelta(milliseconds=message["afterMs"]),
                status=OutboundMessage.Status.DELIVERED
                if delivered_by_log
                else OutboundMessage.Status.PENDING,
                delivered_at=now if delivered_by_log else None,
            )
            for message in result.messages
        ],
        ignore_conflicts=True,  # the same key is the same message: a replay never queues it twice
    )
    if "wake" in turn_input:
        Wake.objects.using(using).filter(
            session_id=session_id, key=turn_input["wake"], status=Wake.Status.PENDING
        ).update(status=Wake.Status.FIRED, fired_at=now, lease_until=None)
    replaced = [entry["replaces"] for entry in result.schedule if entry.get("replaces")]
    if replaced:
        Wake.objects.using(using).filter(
            session_id=session_id, key__in=replaced, status=Wake.Status.PENDING
        ).delete()
    if result.schedule:
        Wake.objects.using(using).bulk_create(
            [
                Wake(
                    key=entry["key"],
                    session_id=session_id,
                    agent=agent_name,
                    due_at=_moment(entry["at"]),
                    created_at=now,
                )
                for entry in result.schedule
            ],
            update_conflicts=True,
            unique_fields=["session_id", "key"],
            update_fields=["due_at", "session_id", "agent", "status", "attempts", "lease_until"],
        )
    return _append_events(session_id, turn_events(result, version, turn_input), using, now)


def _append_events(
    session_id: str, events: list[tuple[str, Any]], using: str, now: datetime
) -> list[SessionEvent]:
    for attempt in range(SEQ_ATTEMPTS):
        last = (
            SessionEvent.objects.using(using)
            .filter(session_id=session_id)
            .aggregate(last=Max("seq"))["last"]
            or 0
        )
        rows = [
            SessionEvent(
                session_id=session_id, seq=last + index, type=kind, payload=payload, created_at=now
            )
            for index, (kind, payload) in enumerate(events, start=1)
        ]
        try:
            with transaction.atomic(using=using):
                return SessionEvent.objects.using(using).bulk_create(rows)
        except IntegrityError:
            if attempt == SEQ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def event_frame(event: SessionEvent) -> dict[str, Any]:
    """An event as the websocket and the events endpoint show it."""
    return {"seq": event.seq, "type": event.type, **_frame_payload(event)}


def _frame_payload(event: SessionEvent) -> dict[str, Any]:
    payload = event.payload
    if event.type == "message":
        return {
            "key": payload["key"],
            "text": payload["text"],
            "kind": payload["kind"],
            "after_ms": payload["afterMs"],
        }
    if event.type == "turn":
        return {
            "version": payload["version"],
            "changed": payload["changed"],
            "outcomes": payload["outcomes"],
        }
    return {"data": payload}


def publish(
    *, session_id: str, result: TurnResult, version: int, events: list[SessionEvent]
) -> None:
    """After commit: signals, then the channel-layer push (lossy; the log is the truth)."""
    signals.session_saved.send(sender=None, session_id=session_id, version=version, result=result)
    for started in result.started:
        signals.run_started.send(sender=None, session_id=session_id, run=started)
    for ended in result.ended:
        signals.run_ended.send(
            sender=None, session_id=session_id, run=ended, reason=ended["reason"]
        )
    for message in result.messages:
        signals.message_out.send(sender=None, session_id=session_id, message=message)
    _push(session_id, events)


def _push(session_id: str, events: list[SessionEvent]) -> None:
    if not events or not getattr(settings, "CHANNEL_LAYERS", None):
        return
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(session_id),
            {
                "type": "warlock.events",
                "session_id": session_id,
                "events": [event_frame(event) for event in events],
            },
        )
    except Exception:  # the log already holds the events; a socket catches up with after_seq
        logger.warning(
            "could not push events of session %r to the channel layer", session_id, exc_info=True
        )
