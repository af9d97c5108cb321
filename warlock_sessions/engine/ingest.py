"""Ingest: the input is recorded before anything is decided. A message is de-duplicated by its
id and wakes the runs waiting for a reply; a wake resumes the run parked on it (or starts a
silence flow); an event wakes its waiters and starts its flows; a start starts its flow; a
handover input gives the session to people, or back (``handover``). While people have it, the
input waits for them instead (``handover.holds``).
"""

from __future__ import annotations

from .flows import Flow, Step
from .handover import apply_handover, holds
from .isotime import ms_from_iso
from .lifecycle import follow, start_run, take_floor, unpark
from .session import Run
from .state import KEEP, TurnState, next_label


def ingest(state: TurnState) -> None:
    if state.kind in ("wake", "handover") and state.original is None:
        state.ignore("no-session", state.what["key"])
        return
    if holds(state):
        if state.kind == "message" and _record_message(state):
            state.outcome(None, "handover", "held", key=state.trigger_key, code="with-people")
        return
    state.ingesting = True
    try:
        INGESTERS[state.kind](state)
    finally:
        state.ingesting = False


def _ingest_message(state: TurnState) -> None:
    if _record_message(state):
        resolve_reply_waits(state)


def _record_message(state: TurnState) -> bool:
    """The message is de-duplicated by its id and stamped as the lead's latest; ``False`` for
    one applied before (ignored)."""
    message_id = state.what.get("id")
    if message_id:
        inputs = state.session["inputs"]
        if message_id in inputs:
            state.ignore("duplicate-input", message_id)
            return False
        inputs.append(message_id)
        if len(inputs) > KEEP:
            del inputs[: len(inputs) - KEEP]
    state.session["lastUserAt"] = state.what["at"]
    return True


def _ingest_wake(state: TurnState) -> None:
    key = state.what["key"]
    if key.startswith("silence:"):
        silence_wake(state, key)
    else:
        run_wake(state, key)


def _ingest_event(state: TurnState) -> None:
    """A named event: it may count as the lead or the assistant speaking (its declared
    ``direction``), it wakes runs waiting for it, and it starts flows it triggers."""
    name = state.what["name"]
    direction = (state.agent.events.get(name) or {}).get("direction")
    if direction == "inbound":
        state.session["lastUserAt"] = state.now_iso
        resolve_reply_waits(state)
    elif direction == "outbound":
        state.session["lastAssistantAt"] = state.now_iso
    for run in list(state.runs):
        waiting = run.get("waiting")
        if waiting and waiting.get("kind") == "event" and waiting.get("event") == name:
            _event_arrived(state, run)
    _start_event_flows(state, name)


def _event_arrived(state: TurnState, run: Run) -> None:
    flow = state.flows.get(run["flowId"])
    step = flow.step(run["stepId"]) if flow else None
    run["status"] = "running"
    unpark(state, run)
    if flow is None or step is None:
        return  # move() reports the missing flow or step
    state.outcome(run, "wait", "ok", code="event-arrived", next=next_label(step.then))
    follow(state, run, flow, step, step.then)
    take_floor(state, run)


def _start_event_flows(state: TurnState, name: str) -> None:
    """Each flow starts at most once per event, by its first trigger on it that starts a run."""
    for flow in state.flows.values():
        for trigger in flow.triggers:
            if trigger.kind != "event" or trigger.event != name:
                continue
            started = start_run(
                state,
                flow,
                "event",
                state.what["key"],
                trigger=trigger,
                payload=state.what.get("payload"),
                hop=state.what.get("hop", 0),
            )
            if started is not None:
                break


def _ingest_start(state: TurnState) -> None:
    flow = state.flows.get(state.what["flow"])
    if flow is None:
        state.skip(state.what["flow"], state.session["id"], state.what["key"], "flow-gone")
        return
    start_run(
        state,
        flow,
        "start",
        state.what["key"],
        payload=state.what.get("input"),
        hop=state.what.get("hop", 0),
    )


def _ingest_handover(state: TurnState) -> None:
    apply_handover(state)
    if state.handed_back:  # what the lead wrote meanwhile answers the runs waiting on it
        resolve_reply_waits(state, only_written_since=True)


def resolve_reply_waits(state: TurnState, only_written_since: bool = False) -> None:
    """The lead wrote: every run parked on a timer wait with ``else`` takes it (with
    ``only_written_since``: only those the lead wrote to since they began to wait)."""
    for run in list(state.runs):
        found = _reply_wait(state, run, only_written_since)
        if found is None:
            continue
        flow, step = found
        run["status"] = "running"
        unpark(state, run)
        branch = next(
            (b for b in step.raw.get("branches") or [] if state.holds(b["if"], run)), None
        )
        target = branch["then"] if branch else step.raw["else"]
        state.outcome(run, "wait", "ok", code="replied", next=next_label(target))
        follow(state, run, flow, step, target)
        take_floor(state, run)


def _reply_wait(state: TurnState, run: Run, only_written_since: bool) -> tuple[Flow, Step] | None:
    """The flow and the timer wait with ``else`` that ``run`` is parked on, if it is (and,
    with ``only_written_since``, the lead wrote to it since it began to wait)."""
    waiting = run.get("waiting")
    if run["status"] != "waiting" or not waiting or waiting.get("kind") != "timer":
        return None
    flow = state.flows.get(run["flowId"])
    if flow is None or run["stepId"] is None:
        return None
    if only_written_since and not state.lead_wrote_since(
        waiting.get("setAt", run["startedAt"]), flow
    ):
        return None
    step = flow.step(run["stepId"])
    if step is None or step.kind != "wait" or "else" not in step.raw:
        return None
    return flow, step


def run_wake(state: TurnState, key: str) -> None:
    run = next((r for r in state.runs if "waiting" in r and r["waiting"].get("key") == key), None)
    if run is None:
        state.ignore("stale-wake", key)
        return
    set_at = run["waiting"].get("setAt", run["startedAt"])
    run["status"] = "running"
    unpark(state, run)
    state.floor_run_id = run["id"]
    if run["stepId"] is None:
        return  # parked on its trigger's `after`: enters its first step in Run
    flow = state.flows.get(run["flowId"])
    step = flow.step(run["stepId"]) if flow else None
    if flow is None or step is None:
        return  # move() reports it
    if step.kind == "wait":
        replied = "else" in step.raw and state.lead_wrote_since(set_at, flow)
        target = step.raw["else"] if replied else step.then
        state.outcome(
            run,
            "wait",
            "ok",
            code="replied" if replied else "no-reply",
            next=next_label(target),
        )
        follow(state, run, flow, step, target)
    elif step.kind == "wait_event":
        target = step.raw.get("else", "end")
        state.outcome(run, "wait", "ok", code="no-event", next=next_label(target))
        follow(state, run, flow, step, target)


def silence_wake(state: TurnState, key: str) -> None:
    rest = key[len("silence:") :]
    flow_id = rest.split(":", 1)[0]
    ms_text = rest.rsplit(":", 1)[-1]
    flow = state.flows.get(flow_id)
    if flow is None:
        state.skip(flow_id, state.session["id"], ms_text, "flow-gone")
        return
    last_assistant = state.session.get("lastAssistantAt")
    if (
        not last_assistant
        or not ms_text.isdigit()
        or ms_from_iso(last_assistant) != int(ms_text)
        or state.lead_wrote_since(last_assistant, flow)
    ):
        state.ignore("silence-broken", key)
        return
    run = start_run(state, flow, "silence", ms_text, trigger=flow.trigger_of("silence"))
    if run is not None:
        state.floor_run_id = run["id"]


INGESTERS = {
    "message": _ingest_message,
    "wake": _ingest_wake,
    "event": _ingest_event,
    "start": _ingest_start,
    "handover": _ingest_handover,
}
