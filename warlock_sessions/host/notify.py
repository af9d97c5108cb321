"""What happens only after a turn commits: its signals and the push of its events to the
session's channel-layer group; telling a deleted session's sockets; and telling a
conversation's other sockets that it changed."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings

from .. import signals
from ..backends.outages import OutageLog
from ..engine import TurnResult
from ..models import forget_records
from ..tracing import span
from .events import event_frame

logger = logging.getLogger("warlock_sessions.host")
#: Pushes to the channel layer: lossy by design, so one outage is a few lines, not one a turn.
push_outage = OutageLog(logger, "pushing events to the channel layer (sockets read the log)")


def group_name(session_id: str) -> str:
    """The channel-layer group of a session (group names allow only a short ASCII alphabet)."""
    return "warlock_session_" + hashlib.sha256(session_id.encode()).hexdigest()[:40]


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
    with span("warlock push", {"warlock.session.id": session_id, "warlock.events": len(events)}):
        try:
            await layer.group_send(
                group_name(session_id),
                {
                    "type": "warlock.events",
                    "session_id": session_id,
                    "events": [event_frame(event) for event in events],
                },
            )
        except Exception as error:
            push_outage.failed(error)
        else:
            push_outage.succeeded()


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
    tell_followers([session_id])


def tell_followers(session_ids: list[str]) -> None:
    """Close the sockets following ``session_ids``, which were deleted: whatever comes under
    those ids next is someone else's. (Through the channel layer: a socket it does not reach
    learns of it from its next turn, which finds the session gone.)"""
    if _channel_layer() is not None and session_ids:
        from asgiref.sync import async_to_sync

        async_to_sync(_announce_forgotten)(session_ids)


async def _announce_forgotten(session_ids: list[str]) -> None:
    layer = _channel_layer()
    for session_id in session_ids:
        try:
            await layer.group_send(group_name(session_id), {"type": "warlock.forgotten"})
        except Exception as error:
            push_outage.failed(error)
            return


def conversation_group(conversation_id: str) -> str:
    """The channel-layer group of a conversation's sockets."""
    return "warlock_conversation_" + hashlib.sha256(conversation_id.encode()).hexdigest()[:40]


async def aconversation_changed(conversation_id: str, sender: str = "") -> None:
    """A conversation's turn was stored: its other sockets (another tab, another device) are
    told, and read its history again (lossy, as every push: a tab that misses it sees the turn
    on its next load). ``sender``: the channel of the socket that made the turn, told nothing."""
    layer = _channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(
            conversation_group(conversation_id),
            {"type": "warlock.conversation_changed", "sender": sender},
        )
    except Exception as error:
        push_outage.failed(error)
    else:
        push_outage.succeeded()


def conversation_changed(conversation_id: str) -> None:
    """``aconversation_changed`` for synchronous code (the HTTP API's send, fork, truncate)."""
    if _channel_layer() is not None:
        from asgiref.sync import async_to_sync

        async_to_sync(aconversation_changed)(conversation_id)
