"""The session's event log as a chat UI sees it: the events one committed turn adds, the frame
each event is sent as (websocket and events endpoint), and what of a session an end user may
read (what staff write for staff is kept from every view of theirs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine import TurnResult


def turn_events(
    result: TurnResult, version: int, turn_input: Mapping[str, Any]
) -> list[tuple[str, Any]]:
    """The events a chat UI sees for one committed turn, in order, ending with its summary. A
    message the user sent comes first (not a resend: that turn changed nothing), so every tab
    and the admin show both sides of the conversation. A person taking the chat or handing
    it back is told before what they or the bot then say; the bot handing over says "I'll get
    a colleague" before the notice that people have the chat."""
    events: list[tuple[str, Any]] = []
    said = turn_input.get("message")
    if said is not None and result.code != "duplicate-input":
        events.append(("message", {"role": "user", "text": said["text"], "id": said.get("id")}))
    events += [("run_started", started) for started in result.started]
    events += [("outcome", line) for line in result.outcomes]
    handovers = handover_events(result, turn_input)
    asked_for = all(event["status"] == "waiting" for _, event in handovers)
    events += [] if asked_for else handovers
    events += [("message", message) for message in result.messages]
    events += handovers if asked_for else []
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
                # The conversation's language as the engine knows it, for a UI's own words.
                "language": result.session["metadata"].get("language"),
            },
        )
    )
    return events


#: The handover outcomes a chat UI is told of, with the status each leaves the session in.
HANDOVER_STATUSES = {
    "handed-over": "waiting",
    "handover-taken": "taken",
    "handed-back": "released",
}


def handover_events(result: TurnResult, turn_input: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A ``handover`` event for each change of who answers the session: handed to people
    (``waiting``), taken by a person (``taken``, ``by``) or handed back (``released``), with
    the account that did it (``user``) when staff did."""
    record = result.session["metadata"].get("handover") or {}
    sent = turn_input.get("handover") or {}
    events: list[tuple[str, Any]] = []
    for line in result.outcomes:
        status = HANDOVER_STATUSES.get(line.get("code", ""))
        if status is None:
            continue
        event = {"status": status, "since": record.get("since"), "reason": record.get("reason")}
        if status != "waiting":
            event["by"] = line.get("detail")
        if sent.get("user") is not None:
            event["user"] = sent["user"]
        events.append(("handover", event))
    return events


#: What an end user may read of a handover record: who answers and since when. Its ``reason``
#: is what staff (or the flow's author) wrote for the inbox ("fraud suspect", "VIP customer"),
#: ``user`` the staff account that acted, ``held`` the wakes waiting for the hand-back.
HANDOVER_SEEN_BY_END_USERS = ("status", "since", "by", "takenAt")


def end_user_session(session: Mapping[str, Any]) -> dict[str, Any]:
    """``session`` as its end user may read it: the handover record, and each run's handover
    outcomes, without what is staff's."""
    seen = dict(session)
    record = session.get("metadata", {}).get("handover")
    if isinstance(record, Mapping):
        kept = {name: record[name] for name in HANDOVER_SEEN_BY_END_USERS if name in record}
        seen["metadata"] = {**session["metadata"], "handover": kept}
    runs = session.get("runs")
    if isinstance(runs, list):
        seen["runs"] = [end_user_run(run) for run in runs]
    return seen


def end_user_run(run: Any) -> Any:
    """A run (live, or as a turn's ``ended`` lists it) without its handover outcomes'
    ``detail``."""
    if isinstance(run, Mapping) and isinstance(run.get("outcomes"), list):
        return {**run, "outcomes": [end_user_outcome(line) for line in run["outcomes"]]}
    return run


def end_user_outcome(line: Any) -> Any:
    """An outcome line as an end user may read it: a handover's ``detail`` (its reason, the
    staff member) is staff's; the ``handover`` event says who answers."""
    if isinstance(line, Mapping) and line.get("code") in HANDOVER_STATUSES:
        return {name: value for name, value in line.items() if name != "detail"}
    return line


#: What of a turn's message belongs to the engine, not to the chat: the run and step that said it.
ENGINE_MESSAGE_KEYS = ("runId", "stepId")


def wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A bot's message as clients read it: what the chat shows, without the engine's run and
    step (the outcome lines name those)."""
    return {name: value for name, value in message.items() if name not in ENGINE_MESSAGE_KEYS}


def end_user_payload(kind: str, payload: Any) -> Any:
    """A logged event's payload as an end user may read it."""
    if kind == "outcome" and isinstance(payload, Mapping):
        return end_user_outcome(payload)
    if kind == "message" and isinstance(payload, Mapping):
        return wire_message(payload)
    if kind == "handover" and isinstance(payload, Mapping):
        return {name: value for name, value in payload.items() if name not in ("reason", "user")}
    return payload


def describe_input(turn_input: Mapping[str, Any]) -> dict[str, Any]:
    """The input as the turn event records it (no payloads: they may be large or private)."""
    kind = next(iter(turn_input))
    value = turn_input[kind]
    if kind == "message":
        return {"kind": kind, "id": value.get("id")}
    if kind == "wake":
        return {"kind": kind, "key": value}
    if kind == "handover":
        return {"kind": kind, "key": value["key"], "action": value["action"]}
    return {"kind": kind, "key": value.get("key"), "name": value.get("name") or value.get("flow")}


def event_frame(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event (``{seq, type, payload}``) as the websocket and the events endpoint show it."""
    return {
        "seq": event["seq"],
        "type": event["type"],
        **_frame_payload(event["type"], event["payload"]),
    }


def _frame_payload(kind: str, payload: Any) -> dict[str, Any]:
    if kind == "message" and payload.get("role") == "user":
        return {"role": "user", "text": payload["text"], "id": payload["id"]}
    if kind == "message" and payload.get("by") is not None:
        return {
            "role": "staff",
            "by": payload["by"],
            "key": payload["key"],
            "text": payload["text"],
            "kind": payload["kind"],
            "after_ms": payload["afterMs"],
        }
    if kind == "message":
        return {
            "role": "bot",
            "key": payload["key"],
            "text": payload["text"],
            "kind": payload["kind"],
            "after_ms": payload["afterMs"],
        }
    if kind == "turn":
        frame = {
            "version": payload["version"],
            "changed": payload["changed"],
            "outcomes": payload["outcomes"],
        }
        if payload.get("language"):
            frame["language"] = payload["language"]
        return frame
    if kind == "handover":  # the reason and the account are for staff: the log keeps them
        return {
            name: payload[name]
            for name in ("status", "by", "since")
            if payload.get(name) is not None
        }
    return {"data": end_user_payload(kind, payload)}
