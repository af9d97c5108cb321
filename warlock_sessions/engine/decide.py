"""Decide: for a message, what to ask the model (``understand_request``) and what to do with
its answer (``decide``): route the message to a flow, start mentioned flows, write the fields
it carried and fire the asking step's branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .fields import coerce_field, extract_mode, is_known
from .flows import Flow, Step, Trigger
from .handover import hand_over
from .lifecycle import draft_run, end_run, follow, repeat_allows, start_run
from .ports import (
    BranchQuestion,
    Understanding,
    UnderstandRequest,
)
from .session import Run
from .state import TurnState, next_label

#: The step id in the key of an interrupt question ('#' is never in a step's id).
INTERRUPTS = "#interrupts"
#: The run id in the key of an agent's own interrupt ('*' is never in a run's id).
AGENT = "*"
ROUTE_MIN = 40
ROUTE_STICKY = 15


def message_flows(state: TurnState, catch_all: bool) -> list[Flow]:
    """Message flows (with phrases, or the ``[]`` catch-alls) passing ``if`` and ``repeat``."""
    out = []
    for flow in state.flows.values():
        trigger = next(
            (t for t in flow.triggers if t.kind == "message" and (not t.phrases) == catch_all),
            None,
        )
        if trigger is None:
            continue
        if trigger.condition is not None and not state.holds(
            trigger.condition, draft_run(state, flow, "message", state.trigger_key)
        ):
            continue
        if not repeat_allows(state, flow, trigger, state.trigger_key):
            continue
        out.append(flow)
    return out


def mention_flows(state: TurnState) -> list[tuple[Flow, Trigger]]:
    out = []
    for flow in state.flows.values():
        trigger = flow.trigger_of("mention")
        if trigger is not None:
            out.append((flow, trigger))
    return out


def starts_unscored(state: TurnState, eligible: list[Flow]) -> bool:
    """The lone eligible flow starts unscored when a low score would have nowhere to go."""
    return len(eligible) == 1 and state.agent.idle == "silent" and not message_flows(state, True)


def understand_request(state: TurnState) -> UnderstandRequest | None:
    """What to ask the model about this message, or ``None`` when there is nothing to ask
    (then the model is not called at all)."""
    if not _model_reads(state):
        return None
    floor = state.floor_run()
    floor_flow = state.flows.get(floor["flowId"]) if floor else None
    eligible = message_flows(state, False)
    scored = [] if floor is None and starts_unscored(state, eligible) else eligible
    mentioned = [
        flow
        for flow, trigger in mention_flows(state)
        if trigger.phrases and repeat_allows(state, flow, trigger, state.trigger_key)
    ]
    branches = _agent_questions(state) + _branch_questions(floor, floor_flow)
    fields = _fields_to_extract(state, ([floor_flow] if floor_flow else []) + eligible)
    for name in _amendable(floor, floor_flow):
        if extract_mode(state.agent.fields[name]) == "anywhere":
            fields[name] = state.agent.fields[name]
    if not (scored or mentioned or branches or fields):
        return None
    return UnderstandRequest(
        text=state.what["text"],
        history=state.history(),
        context=state.context,
        data=state.session["data"],
        now=state.now,
        floor_run=floor,
        floor_flow=floor_flow,
        message_flows=scored,
        mention_flows=mentioned,
        branches=branches,
        fields=fields,
        language=state.language,
    )


def _model_reads(state: TurnState) -> bool:
    """A message the model reads: not ignored, not held for people, and not silenced unless
    silence allows it."""
    if state.ignored or state.kind != "message" or state.with_people:
        return False
    return state.silenced is None or state.understand_allowed


def _agent_questions(state: TurnState) -> list[BranchQuestion]:
    """The agent's own interrupts ("talk to a person"), heard whatever runs or none."""
    if state.silenced is not None:
        return []
    return [
        BranchQuestion(AGENT, INTERRUPTS, index, interrupt["when"])
        for index, interrupt in enumerate(state.agent.interrupts)
    ]


def _branch_questions(floor: Run | None, floor_flow: Flow | None) -> list[BranchQuestion]:
    """The floor flow's interrupts and the ``when`` branches of the step that holds the floor,
    as yes/no questions."""
    if floor is None or floor_flow is None:
        return []
    questions = [
        BranchQuestion(floor["id"], INTERRUPTS, index, interrupt["when"])
        for index, interrupt in enumerate(floor_flow.raw.get("interrupts") or [])
    ]
    step = floor_flow.step(floor["stepId"])
    if step is None or step.kind != "talk":
        return questions
    return questions + [
        BranchQuestion(floor["id"], step.id, index, branch["when"])
        for index, branch in enumerate(step.raw.get("branches") or [])
        if "when" in branch
    ]


def _amendable(run: Run | None, flow: Flow | None) -> list[str]:
    """The fields the step ``run`` asks lets the user change while it asks (its ``amend``):
    a confirmation's "make it friday instead"."""
    step = flow.step(run["stepId"]) if run is not None and flow is not None else None
    if run is None or step is None or step.kind != "talk" or run["status"] != "asking":
        return []
    return list(step.raw.get("amend") or [])


def _fields_to_extract(state: TurnState, flows: list[Flow]) -> dict[str, Mapping[str, Any]]:
    """Unknown fields that ``flows`` collect and that may be taken from any message."""
    data = state.session["data"]
    fields: dict[str, Mapping[str, Any]] = {}
    for flow in flows:
        for step in flow.steps:
            if step.kind != "talk":
                continue
            for name in step.collect:
                definition = state.agent.fields[name]
                if not is_known(data.get(name)) and extract_mode(definition) == "anywhere":
                    fields[name] = definition
    return fields


def decide(state: TurnState, understanding: Understanding | None) -> None:
    """Act on the understanding: start mentioned flows, route the message, write the fields
    it carried and fire the asking step's branch."""
    if state.ignored or state.kind != "message":
        return
    if understanding is not None:
        state.llm_calls += understanding.llm_calls
        if understanding.language and not state.pinned_language():
            state.session["metadata"]["language"] = understanding.language
    asker = state.asker()
    if _interrupt(state, understanding):
        asker = None
    # A run that ingest put on the floor (a reply to a wait, an arrived event) keeps it.
    route = (
        None
        if state.floor_from_ingest or state.interrupted
        else _route(state, understanding, asker)
    )
    _start_mentions(state, understanding)
    if route is not None:
        _take_route(state, route)
    if not _write_fields(state, understanding, asker) and asker is not None:
        _answer_asker(state, asker, understanding)


def _answer_asker(state: TurnState, asker: Run, understanding: Understanding | None) -> None:
    """The message answers the asking step: fire its branch, if one holds."""
    if not state.live(asker) or asker["status"] != "asking":
        return
    flow = state.flows.get(asker["flowId"])
    step = flow.step(asker["stepId"]) if flow else None
    if flow is not None and step is not None and step.kind == "talk":
        fire_branch(state, asker, flow, step, understanding)


def _write_fields(state: TurnState, understanding: Understanding | None, asker: Run | None) -> bool:
    """Write the fields the message carried; ``True`` when that changed a value the asking
    step confirms, which then asks again (``amend``)."""
    flow = state.flows.get(asker["flowId"]) if asker is not None else None
    data = state.session["data"]
    before = {name: data.get(name) for name in _amendable(asker, flow)}
    for name, raw in (understanding.fields if understanding else {}).items():
        write_field(state, name, raw)
    if asker is None or flow is None or state.silenced is not None or not state.live(asker):
        return False
    amended = _amended(data, before, flow.step(asker["stepId"]))
    if not amended:
        return False
    _ask_again_amended(state, asker, flow, amended)
    return True


def _amended(data: dict[str, Any], before: dict[str, Any], step: Step | None) -> list[str]:
    """The amendable fields the message changed: those known before, and those the asking
    step does not collect (a first answer to a field it collects is no amendment)."""
    collected = step.collect if step is not None else []
    return [
        name
        for name, old in before.items()
        if is_known(data.get(name))
        and data[name] != old
        and (is_known(old) or name not in collected)
    ]


def _interrupt(state: TurnState, understanding: Understanding | None) -> bool:
    """The user asked to leave the flow that holds the floor ("cancel", "start over"): the
    first of its ``interrupts`` the model heard says its sentence and moves the run to its
    ``then`` (by default, the run ends). Else the first of the agent's own the model heard
    ("talk to a person") says its sentence and hands over, every run staying where it was."""
    if understanding is None or state.silenced is not None:
        return False  # while silenced the host speaks for the bot: nothing moves on its own
    floor = state.floor_run()
    flow = state.flows.get(floor["flowId"]) if floor else None
    if floor is not None and flow is not None:
        for index, interrupt in enumerate(flow.raw.get("interrupts") or []):
            if understanding.branches.get(f"{floor['id']}/{INTERRUPTS}/{index}") is True:
                _leave_flow(state, floor, flow, index, interrupt)
                return True
    for index, interrupt in enumerate(state.agent.interrupts):
        if understanding.branches.get(f"{AGENT}/{INTERRUPTS}/{index}") is True:
            state.interrupted = True
            key = f"{AGENT}:{INTERRUPTS}:{index}:{state.trigger_key}"
            state.outcome(None, "interrupt", "ok", key=key, code="agent-interrupted")
            if interrupt.get("say"):
                state.emit(state.render(interrupt["say"], None, "interrupt"), "verbatim", key)
                state.spoke_by.add(AGENT)  # the turn's reply: no idle speaker beside it
            if interrupt.get("handover"):
                hand_over(state, _reason(interrupt["handover"]))
            return True
    return False


def _reason(handover: Any) -> str | None:
    """An interrupt's ``handover``: ``True``, or the reason the inbox shows."""
    return handover if isinstance(handover, str) else None


def _leave_flow(
    state: TurnState, floor: Run, flow: Flow, index: int, interrupt: Mapping[str, Any]
) -> None:
    state.interrupted = True
    handover = interrupt.get("handover")
    # Handed to people, the run stays where it was unless the interrupt moves it.
    target = interrupt.get("then", None if handover else "end")
    key = f"{floor['id']}:{INTERRUPTS}:{index}:{state.trigger_key}"
    state.outcome(floor, "interrupt", "ok", key=key, code="interrupted", next=next_label(target))
    step = flow.step(floor["stepId"])
    if interrupt.get("say"):
        said = state.render(interrupt["say"], floor, "interrupt")
        state.emit(said, "verbatim", key, floor, step)
        state.spoke_by.add(floor["id"])
    if target == "end" or step is None:
        end_run(state, floor, "interrupted")
    elif target is not None:
        floor["status"] = "running"
        state.floor_run_id = floor["id"]
        follow(state, floor, flow, step, target)
    if handover:
        hand_over(state, _reason(handover), floor)


def _ask_again_amended(state: TurnState, run: Run, flow: Flow, amended: list[str]) -> None:
    """The user changed a value the asking step confirms: the step starts over (a new visit,
    its own fields cleared) and so asks again with the new value."""
    step = flow.step(run["stepId"])
    assert step is not None  # _amendable found it
    state.outcome(
        run,
        step.outcome_kind,
        "ok",
        key=state.step_key(run, step),
        code="amended",
        detail=", ".join(amended),
    )
    run["status"] = "running"
    state.floor_run_id = run["id"]
    follow(state, run, flow, step, {"step": step.id, "clear": step.collect})


def _route(state: TurnState, understanding: Understanding | None, asker: Run | None) -> Flow | None:
    """The message flow this message starts, if any.

    A score of ``ROUTE_MIN`` is needed to start a flow at all. While a run is asking, another
    flow must also beat the asking flow's own score by ``ROUTE_STICKY``: an answer to a
    question often scores a little for other flows too, and a near tie must not abandon the
    question. With nothing asking and no flow scoring enough, a catch-all flow takes the message.
    """
    eligible = message_flows(state, False)
    scores = understanding.flows if understanding else {}
    if asker is not None:
        current = scores.get(asker["flowId"], 0)
        top = _best(scores, [f for f in eligible if f.id != asker["flowId"]])
        if top and top[1] >= current + ROUTE_STICKY and top[1] >= ROUTE_MIN:
            return top[0]
        return None
    if starts_unscored(state, eligible):
        return eligible[0]
    top = _best(scores, eligible)
    if top and top[1] >= ROUTE_MIN:
        return top[0]
    catch_alls = message_flows(state, True)
    return catch_alls[0] if catch_alls else None


def _best(scores: Mapping[str, float], flows: list[Flow]) -> tuple[Flow, float] | None:
    """The highest-scoring flow; the first one declared wins a tie."""
    top: tuple[Flow, float] | None = None
    for flow in flows:
        score = scores.get(flow.id, 0)
        if top is None or score > top[1]:
            top = (flow, score)
    return top


def _start_mentions(state: TurnState, understanding: Understanding | None) -> None:
    """Mention flows start beside whatever holds the floor: without phrases on every message,
    with phrases when the model heard them."""
    for flow, trigger in mention_flows(state):
        if not trigger.phrases:
            start_run(state, flow, "mention", state.trigger_key, trigger=trigger)
        elif understanding is not None and understanding.mentions.get(flow.id):
            start_run(
                state,
                flow,
                "mention",
                state.trigger_key,
                trigger=trigger,
                payload=understanding.extract.get(flow.id),
            )


def _take_route(state: TurnState, route: Flow) -> None:
    """The routed flow takes the floor: its suspended run resumes, or a new run starts."""
    suspended = next(
        (r for r in state.runs if r["flowId"] == route.id and r["status"] == "suspended"),
        None,
    )
    if suspended is not None:
        suspended["status"] = "running"
        suspended.pop("suspendedAt", None)
        state.floor_run_id = suspended["id"]
        return
    run = start_run(state, route, "message", state.trigger_key, trigger=route.trigger_of("message"))
    if run is not None:
        state.floor_run_id = run["id"]


def fire_branch(
    state: TurnState, run: Run, flow: Flow, step: Step, understanding: Understanding | None
) -> None:
    for index, branch in enumerate(step.raw.get("branches") or []):
        if "if" in branch:
            hit = not run.get("staying") and state.holds(branch["if"], run)
        else:
            key = f"{run['id']}/{step.id}/{index}"
            hit = understanding is not None and understanding.branches.get(key) is True
        if hit:
            state.outcome(
                run,
                step.outcome_kind,
                "ok",
                key=state.step_key(run, step),
                code="branch",
                next=next_label(branch["then"]),
            )
            run["status"] = "running"
            follow(state, run, flow, step, branch["then"])
            return


def write_field(state: TurnState, name: str, raw: Any) -> None:
    if raw is None:
        return
    definition = state.agent.fields.get(name)
    if definition is None:
        state.outcome(None, "collect", "skipped", code="unknown-field", detail=name)
        return
    ok, value = coerce_field(definition, raw, state.now)
    if not ok:
        state.outcome(None, "collect", "skipped", code=value, detail=name)
        state.refused[name] = value
        return
    state.session["data"][name] = value
