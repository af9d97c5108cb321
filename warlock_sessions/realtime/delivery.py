"""What a session socket has sent its client: its session's events in ``seq`` order, each
once (:class:`DeliveryCursor`), and the log it catches up from (:func:`logged_after`). The
cursor knows nothing of sockets: the consumer sends what it says to and tells it what went."""

from __future__ import annotations

from typing import Any

from ..host.events import event_frame
from ..models import SessionEvent

#: Logged events read at a time, at connect and on every catch-up.
REPLAY_BATCH = 500
#: A socket's own latest frames remembered, to know their copies from the channel layer.
OWN_FRAMES_REMEMBERED = 64


def logged_after(session_id: str, seq: int) -> list[dict[str, Any]]:
    """The next :data:`REPLAY_BATCH` logged events of the session past ``seq``, as frames."""
    rows = SessionEvent.objects.filter(session_id=session_id, seq__gt=seq).order_by("seq")
    return [
        event_frame({"seq": row.seq, "type": row.type, "payload": row.opened_payload})
        for row in rows[:REPLAY_BATCH]
    ]


class DeliveryCursor:
    """Where a socket's client is in its session's event log: the last ``seq`` sent, the
    session's version in the last ``turn`` frame sent (versions only grow), and the socket's
    own latest frames, whose copies from the channel layer are expected again."""

    def __init__(self, after_seq: int = 0) -> None:
        self.last_seq = after_seq
        self.last_version = 0
        self.own_frames: dict[int, dict[str, Any]] = {}

    def restart(self) -> None:
        """The session was made again under its id: its log starts again from seq 1."""
        self.last_seq = self.last_version = 0
        self.own_frames.clear()

    def sent(self, event: dict[str, Any]) -> None:
        self.last_seq = event["seq"]
        if event["type"] == "turn":
            self.last_version = event.get("version", 0)

    def is_new(self, event: dict[str, Any]) -> bool:
        return bool(event["seq"] > self.last_seq)

    def is_next(self, event: dict[str, Any]) -> bool:
        return bool(event["seq"] == self.last_seq + 1)

    def skips(self, events: list[dict[str, Any]]) -> bool:
        """Whether ``events`` (in order) do not follow on from the last one sent: the layer
        dropped something, and the log has it."""
        return bool(events and events[0]["seq"] > self.last_seq + 1)

    def remember_own(self, frames: list[dict[str, Any]]) -> None:
        self.own_frames.update((frame["seq"], frame) for frame in frames)
        while len(self.own_frames) > OWN_FRAMES_REMEMBERED:
            del self.own_frames[next(iter(self.own_frames))]  # the oldest: seqs only grow

    def maybe_made_again(self, events: list[dict[str, Any]]) -> bool:
        """Whether ``events`` may be of a session made again under this id (deleted, perhaps
        started by someone else, and no notice reached this socket), so the client must be
        asked about again: numbered as ones already sent and not this socket's own coming
        back, a turn no newer than the last one sent, or, before any, others' events."""
        for event in events:
            if self.own_frames.get(event["seq"]) == event:
                continue
            if event["seq"] <= self.last_seq or self.last_seq == 0:
                return True
            if event["type"] == "turn" and event.get("version", 0) <= self.last_version:
                return True
        return False
