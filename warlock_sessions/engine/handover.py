"""A session with people: an agent hands it over (an interrupt's or a step's ``handover``, or
a ``request`` from server code), staff take it, answer in the bot's place and hand it back.

While it is with people (``metadata["handover"]``) the bot says nothing and nothing moves on
its own: a message is recorded for the transcript and answered by nobody but staff, a wake is
held and fired again when the session is handed back, and an event or a start is refused. On
the hand-back the run that was asking asks again, and a run parked on a handover step goes on.
"""

from __future__ import annotations

from typing import Any

from .session import Run, Session
from .state import TurnState

#: What a ``handover`` input does: ``request`` (server code hands the session over), ``take``
#: (a person answers it from now on; hands it over first when the bot had it), ``reply`` (a
#: person's message, taking it first when needed) and ``release`` (back to the bot).
ACTIONS = ("request", "take", "reply", "release")


#: Who has a session that people have.
STATUSES = ("waiting", "taken")


def handover_of(session: Session | None) -> dict[str, Any] | None:
    """The session's handover record while people have it: ``{status: "waiting"|"taken",
    since, reason?, by?, takenAt?, held?}``; ``None`` while the bot has it. A record of
    another shape (a blob written by hand) is none: the bot has the session, and the next
    hand-over writes a proper one."""
    record = session["metadata"].get("handover") if session is not None else None
    if not isinstance(record, dict) or record.get("status") not in STATUSES:
        return None
    held = record.get("held", [])
    texts = all(isinstance(record.get(name, ""), str) for name in ("since", "by", "reason"))
    if not texts or not isinstance(held, list) or not all(isinstance(k, str) for k in held):
        return None
    return record


def hand_over(state: TurnState, reason: str | None, run: Run | None = None) -> None:
    """Give the session to people (nothing when they have it already); the bot stops here."""
    state.with_people = True
    if handover_of(state.session) is not None:
        return
    # A hand-written record of another shape is replaced (no wake was ever held by it).
    record: dict[str, Any] = {"status": "waiting", "since": state.now_iso}
    if reason:
        record["reason"] = reason
    state.session["metadata"]["handover"] = record
    state.outcome(run, "handover", "ok", code="handed-over", detail=reason or None)


def holds(state: TurnState) -> bool:
    """Whether the input waits for people instead of reaching the bot (called before it is
    ingested): a held message is recorded, a held wake kept for the hand-back, and an event or
    a start refused (``with-people``, nothing changed)."""
    record = handover_of(state.session)
    if record is None or state.kind == "handover":
        return False
    state.with_people = True
    if state.kind == "wake":
        held = record.setdefault("held", [])
        if state.what["key"] not in held:
            held.append(state.what["key"])
        state.outcome(None, "handover", "held", key=state.what["key"], code="wake-held")
    elif state.kind != "message":
        state.ignore("with-people", state.what["key"])
    return True


def apply_handover(state: TurnState) -> None:
    """A ``handover`` input (staff or server code: the trust model keeps it from end users)."""
    action, by = state.what["action"], state.what.get("by")
    record = handover_of(state.session)
    if action == "release":
        if record is None:
            state.ignore("not-handed-over", state.what["key"])
            return
        del state.session["metadata"]["handover"]
        state.handed_back = True
        # A wake that came due meanwhile fires now; the run it wakes decides, as it would have.
        state.schedule += [{"key": key, "at": state.now_iso} for key in record.get("held", [])]
        state.outcome(None, "handover", "ok", code="handed-back", detail=by)
        return
    hand_over(state, state.what.get("reason"))
    if action == "request":
        return
    record = handover_of(state.session)
    assert record is not None  # hand_over made it
    if record["status"] != "taken" or record.get("by") != by:
        record.update(status="taken", by=by, takenAt=state.now_iso)
        state.outcome(None, "handover", "ok", code="handover-taken", detail=by)
    if action == "reply":
        state.emit(state.what["text"], "verbatim", f"handover:{state.what['key']}", by=by)
