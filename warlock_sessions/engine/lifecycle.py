"""Runs come and go: start (with its claim), the draft used to test a trigger's ``if``, end,
park and unpark on a wake, suspend and resume an asker, and where a run goes after a step
(``follow``): the next step, a jump, the flow's end, or a chained flow.

Every phase calls into this module; it calls no phase.
"""

from __future__ import annotations

from typing import Any, Literal

from .flows import Flow, Step, Trigger
from .isotime import iso_from_ms, ms_from_iso
from .session import Run, TriggerKind, Waiting
from .state import KEEP, TurnState
from .templates import render

MAX_HOP = 5  # chained flows (a flow starting a flow) per input, against loops
ONCE_KINDS = ("message", "mention", "silence")


def take_floor(state: TurnState, run: Run) -> None:
    if not state.live(run) or state.floor_from_ingest:
        return
    state.floor_from_ingest = True
    state.floor_run_id = run["id"]


def new_run(
    state: TurnState,
    flow: Flow,
    kind: TriggerKind,
    key: str,
    dedupe_key: str,
    payload: Any,
    hop: int,
) -> Run:
    """A run of ``flow`` before its first step; ``payload`` becomes its ``input``."""
    run: Run = {
        "id": f"{flow.id}#{key}",
        "flowId": flow.id,
        "anchor": state.anchor_of(flow),
        "dedupeKey": dedupe_key,
        "stepId": None,
        "status": "running",
        "trigger": {"kind": kind, "key": key},
        "hop": hop,
        "startedAt": state.now_iso,
        "asked": {},
        "visits": {},
        "outcomes": [],
    }
    if payload is not None:
        run["input"] = payload
    return run


def draft_run(
    state: TurnState, flow: Flow, kind: TriggerKind, key: str, payload: Any = None
) -> Run:
    """A run that is never stored, to test a trigger's ``if`` before starting the real one."""
    return new_run(state, flow, kind, key, f"{flow.id}:{state.anchor_of(flow)}:", payload, 0)


def start_run(
    state: TurnState,
    flow: Flow,
    kind: TriggerKind,
    key: str,
    *,
    trigger: Trigger | None = None,
    payload: Any = None,
    hop: int = 0,
    keep_data: bool = False,
) -> Run | None:
    """Start a run of ``flow`` unless its trigger's ``if``, its claim, the hop limit or a live
    run of the same flow and anchor refuses (each refusal but the ``if`` is a skipped line).

    The claim is the exactly-once guard: ``once`` flows claim ``flow:anchor:`` for good, and
    ``always`` flows claim per trigger key, so a replayed trigger never starts a second run.
    """
    anchor = state.anchor_of(flow)
    repeat = trigger.repeat if trigger else ("once" if kind in ONCE_KINDS else "always")
    nonce = key if repeat == "always" else ""
    run = new_run(state, flow, kind, key, f"{flow.id}:{anchor}:{nonce}", payload, hop)
    if payload is not None:
        run["trigger"]["payload"] = payload
    condition = trigger.condition if trigger is not None else None
    if condition is not None and not state.holds(condition, run):
        return None
    live = next((r for r in state.runs if r["flowId"] == flow.id and r["anchor"] == anchor), None)
    refusal = _refusal(state, flow, anchor, repeat, run, live)
    if refusal is not None:
        state.skip(flow.id, anchor, key, refusal)
        return None
    if live is not None:
        end_run(state, live, "replaced")
    _claim(state, flow, run, always=bool(nonce))
    if not keep_data:
        for name in flow.clear_on_start:
            state.session["data"].pop(name, None)
    state.runs.append(run)
    state.started.append(
        {"runId": run["id"], "flowId": flow.id, "anchor": anchor, "dedupeKey": run["dedupeKey"]}
    )
    _await_event_trigger(state, run, trigger)
    return run


def _claim(state: TurnState, flow: Flow, run: Run, *, always: bool) -> None:
    """Write the run's claim; an ``always`` flow keeps only its latest claims per anchor."""
    state.session["claims"][run["dedupeKey"]] = {"at": state.now_iso}
    if always:
        prune_always_claims(state, f"{flow.id}:{run['anchor']}:")


def _refusal(
    state: TurnState, flow: Flow, anchor: str, repeat: str | int, run: Run, live: Run | None
) -> str | None:
    """Why ``run`` may not start, as an outcome code (``None``: it may). ``live`` is the run of
    the same flow and anchor, if any; one still waiting on its trigger's ``after`` does not
    refuse: the newer trigger replaces it."""
    held_at = state.claim_at(run["dedupeKey"])
    if held_at is not None:
        if isinstance(repeat, str):
            return "already-claimed"
        if state.now_ms - ms_from_iso(held_at) < repeat:
            return "cooldown"
    if run["hop"] >= MAX_HOP:
        return "hop-limit"
    if live is not None:
        return None if _awaits_trigger(live) else "already-running"
    if f"{flow.id}:{anchor}" in state.active:
        return "already-running"
    return None


def _awaits_trigger(run: Run) -> bool:
    """Parked before its first step, on its trigger's ``after``."""
    return run["status"] == "waiting" and run["stepId"] is None


def _await_event_trigger(state: TurnState, run: Run, trigger: Trigger | None) -> None:
    """An event trigger's ``after`` (or business hours) parks the new run before its first
    step; the wake at that time lets it enter."""
    if trigger is None or trigger.kind != "event":
        return
    at = state.snap(state.now_ms + trigger.after_ms, trigger.business_hours)
    if trigger.has_after or at > state.now_ms:
        park(state, run, "timer", f"{run['id']}:start:{at}", at)
        state.outcome(run, "wait", "waiting", code="awaiting-trigger", until=iso_from_ms(at))


def prune_always_claims(state: TurnState, prefix: str) -> None:
    claims = state.session["claims"]
    keys = [key for key in claims if key.startswith(prefix) and len(key) > len(prefix)]
    for key in keys[: max(0, len(keys) - KEEP)]:
        del claims[key]


def repeat_allows(state: TurnState, flow: Flow, trigger: Trigger, key: str) -> bool:
    nonce = key if trigger.repeat == "always" else ""
    held_at = state.claim_at(f"{flow.id}:{state.anchor_of(flow)}:{nonce}")
    if held_at is None:
        return True
    if isinstance(trigger.repeat, str):
        return False
    return state.now_ms - ms_from_iso(held_at) >= trigger.repeat


def end_run(
    state: TurnState,
    run: Run,
    reason: str,
    code: str | None = None,
    *,
    kind: str | None = None,
    detail: str | None = None,
) -> None:
    runs = state.runs
    for index, candidate in enumerate(runs):
        if candidate is run:
            del runs[index]
            break
    if code is not None:
        flow = state.flows.get(run["flowId"])
        step = flow.step(run["stepId"]) if flow else None
        state.outcome(
            run,
            kind or (step.outcome_kind if step else "if"),
            "failed" if reason == "failed" else "skipped",
            code=code,
            detail=detail,
        )
    state.ended.append({**run, "reason": reason})
    unpark(state, run)
    if state.talk is not None and state.talk.run is run:
        state.talk = None


def unpark(state: TurnState, run: Run) -> None:
    """The run no longer waits: unless its own wake woke it, that wake is retired (it
    would only fire as a stale wake)."""
    waiting = run.pop("waiting", None)
    key = waiting.get("key") if waiting else None
    if key and not (state.kind == "wake" and key == state.what["key"]):
        state.retired.append(key)


def park(
    state: TurnState,
    run: Run,
    kind: Literal["timer", "event"],
    key: str,
    at_ms: int,
    event: str | None = None,
) -> None:
    """The run waits for the wake ``key`` at ``at_ms`` (or for ``event`` until then)."""
    run["status"] = "waiting"
    until = iso_from_ms(at_ms)
    # Keys in the order the blob has always written them (TypeScript hosts compare text).
    waiting: Waiting = (
        {"kind": kind, "key": key, "until": until, "setAt": state.now_iso}
        if event is None
        else {"kind": kind, "key": key, "event": event, "until": until, "setAt": state.now_iso}
    )
    run["waiting"] = waiting
    state.schedule.append({"key": key, "at": iso_from_ms(at_ms)})


def resume_suspended(state: TurnState) -> None:
    if state.asker() is not None:
        return
    chosen: Run | None = None
    for run in state.runs:
        if run["status"] != "suspended":
            continue
        if chosen is None or (run.get("suspendedAt") or run["startedAt"]) >= (
            chosen.get("suspendedAt") or chosen["startedAt"]
        ):
            chosen = run
    if chosen is not None:
        chosen["status"] = "asking"
        chosen.pop("suspendedAt", None)


def follow(state: TurnState, run: Run, flow: Flow, step: Step, target: Any) -> None:
    if target is None:
        following = flow.after(step)
        if following is not None:
            enter(run, following.id)
        else:
            finish_flow(state, run, flow)
    elif isinstance(target, str):
        if target == "end":
            finish_flow(state, run, flow)
        else:
            jump(state, run, flow, target)
    elif "step" in target:
        for name in target.get("clear") or []:
            state.session["data"].pop(name, None)
            run["asked"].pop(name, None)
        jump(state, run, flow, target["step"])
    else:
        child_id = render(target["flow"], state.scope(run), keep_missing=True)
        key = state.step_key(run, step)
        end_run(state, run, "flow")
        chain(state, child_id, key, target.get("input", run.get("input")), run["hop"] + 1)


def chain(
    state: TurnState, flow_id: str, key: str, payload: Any, hop: int, keep_data: bool = False
) -> None:
    child = state.flows.get(flow_id)
    if child is None:
        state.skip(flow_id, state.session["id"], key, "flow-gone")
        return
    run = start_run(state, child, "flow", key, payload=payload, hop=hop, keep_data=keep_data)
    if run is None:
        return
    state.floor_run_id = run["id"]
    if state.ingesting:
        state.floor_from_ingest = True
    state.queue.append(run)


def jump(state: TurnState, run: Run, flow: Flow, step_id: str) -> None:
    if flow.step(step_id) is not None:
        enter(run, step_id)
    else:
        end_run(state, run, "skipped", "step-gone")


def enter(run: Run, step_id: str) -> None:
    run["stepId"] = step_id
    run["visits"][step_id] = run["visits"].get(step_id, 0) + 1
    run["status"] = "running"
    run.pop("waiting", None)
    run.pop("staying", None)


def stay_at(run: Run, step: Step) -> None:
    enter(run, step.id)
    run["staying"] = True
    run["status"] = "asking"


def stay_step(run: Run, flow: Flow) -> Step | None:
    for line in reversed(run["outcomes"]):
        if line["kind"] in ("prompt", "collect"):
            step = flow.step(line.get("stepId"))
            if step is not None and step.kind == "talk":
                return step
    return next((step for step in reversed(flow.steps) if step.kind == "talk"), None)


def finish_flow(state: TurnState, run: Run, flow: Flow) -> None:
    stay = stay_step(run, flow) if flow.on_end == "stay" else None
    if stay is not None:
        other = next((r for r in state.runs if r is not run and r["status"] == "asking"), None)
        stay_at(run, stay)
        unanswered = (
            state.kind == "message"
            and state.silenced is None
            and not state.speak_done
            and not state.spoke_by
        )
        if unanswered and (other is None or state.floor_run_id == run["id"]):
            run["status"] = "running"
        elif other is not None:
            run["status"] = "suspended"
            run["suspendedAt"] = state.now_iso
        return
    if flow.on_end == "reset" and flow.steps:
        key = state.step_key(run, flow.steps[-1])
        end_run(state, run, "reset")
        chain(state, flow.id, key, run.get("input"), run["hop"] + 1, keep_data=True)
        return
    end_run(state, run, "end")
