"""Steps: every live run moves through its steps until it asks, waits, ends or hits the step
limit, and the talk step the model must speak for is chosen (``advance``). One executor per
step kind.
"""

from __future__ import annotations

from collections.abc import Mapping

from .agent import ActionContext
from .durations import parse_duration
from .fields import given_up, is_known, pending_fields, required_of
from .flows import Flow, Step
from .handover import hand_over
from .isotime import iso_from_ms
from .lifecycle import end_run, enter, finish_flow, follow, park, resume_suspended
from .ports import (
    IdleRequest,
    TalkRequest,
)
from .session import Run
from .state import TurnState, next_label
from .templates import label_language, localized, render_deep

#: What the user is told when a field is given up and neither the step nor the field says.
DEFAULT_GIVE_UP = {
    "en": "Sorry, I couldn't get your {label}, so let's go on without it.",
    "pt": "Desculpe, não consegui entender: {label}. Vamos seguir sem isso.",
}
#: What follows the question again once a ``required`` field's asks are used up, unless the
#: field's ``stuck`` says: with a way to a person (the agent's handover interrupt), or none.
DEFAULT_STUCK = {
    "en": "I need your {label} to go on: could you say it another way?",
    "pt": "Preciso disto para continuar: {label}. Pode dizer de outro jeito?",
}
DEFAULT_STUCK_PERSON = {
    "en": "I need your {label} to go on: could you say it another way? Or ask to talk to "
    "a person, and a colleague will help.",
    "pt": "Preciso disto para continuar: {label}. Pode dizer de outro jeito? Ou peça para "
    "falar com uma pessoa, e um colega ajuda.",
}
#: Said in place of the question when a field ``required: "handover"`` goes to people.
DEFAULT_STUCK_HANDOVER = {
    "en": "I'll get a colleague to help with your {label}: someone will answer here shortly.",
    "pt": "Vou chamar um colega para ajudar com isto: {label}. Alguém vai responder em breve.",
}

# A wait this short before a say or talk step is a pause in the conversation, not a timer: it
# rides on the next message as ``afterMs`` (the host delays that send) instead of costing a wake,
# a worker round trip and a second turn.
SHORT_WAIT_MS = 10_000
# A flow that jumps in a circle without asking or waiting would spin the turn forever.
MAX_STEPS_PER_TURN = 50
# A wait for an event without ``upTo`` still ends: a flow must never wait for good.
DEFAULT_EVENT_WAIT_MS = 30 * 86_400_000


def advance(state: TurnState) -> TalkRequest | IdleRequest | None:
    if state.ignored or state.with_people:
        return None
    resume_suspended(state)
    state.queue = list(state.runs)
    drain(state)
    return speaker(state)


def speaker(state: TurnState) -> TalkRequest | IdleRequest | None:
    if state.silenced is not None or state.with_people:
        return None
    talk = state.talk
    if talk is not None:
        if state.kind == "message" and any(rid != talk.run["id"] for rid in state.spoke_by):
            state.outcome(
                talk.run,
                talk.step.outcome_kind,
                "skipped",
                key=state.step_key(talk.run, talk.step),
                code="another-reply",
            )
            state.talk = None
            return None
        return talk
    idle = state.agent.idle
    if (
        state.kind == "message"
        and state.asker() is None
        and isinstance(idle, Mapping)  # not "silent"
        and not state.spoke_by
    ):
        return IdleRequest(idle=idle)
    return None


def drain(state: TurnState) -> None:
    while state.queue and not state.with_people:
        run = state.queue.pop(0)
        if state.live(run):
            move(state, run)


def move(state: TurnState, run: Run) -> None:
    if run["status"] in ("waiting", "suspended"):
        return
    if run["status"] == "asking" and state.kind != "message" and not state.handed_back:
        return  # an asker re-speaks only when the lead writes, or people hand it back
    flow = state.flows.get(run["flowId"])
    if flow is None:
        end_run(state, run, "skipped", "flow-gone")
        return
    if not premise_holds(state, run, flow):
        return
    resuming = run["status"] == "asking"
    run["status"] = "running"
    if run["stepId"] is None:
        if not flow.steps:
            finish_flow(state, run, flow)
            return
        enter(run, flow.steps[0].id)
    steps = 0
    while run["status"] == "running" and state.live(run):
        if steps >= MAX_STEPS_PER_TURN:
            end_run(state, run, "failed", "step-loop")
            return
        step = flow.step(run["stepId"])
        if step is None:
            end_run(state, run, "skipped", "step-gone")
            return
        execute(state, run, flow, step, resuming and steps == 0)
        steps += 1


def premise_holds(state: TurnState, run: Run, flow: Flow) -> bool:
    if (
        run["trigger"]["kind"] == "silence"
        and state.kind == "wake"
        and state.lead_wrote_since(run["startedAt"], flow)
    ):
        end_run(state, run, "skipped", "customer-replied")
        return False
    if flow.premise is not None:
        ok = state.holds(flow.premise, run)
    else:
        same = [t for t in flow.triggers if t.kind == run["trigger"]["kind"]]
        ok = not same or any(t.condition is None or state.holds(t.condition, run) for t in same)
    if not ok:
        end_run(state, run, "skipped", "premise-changed")
    return ok


def execute(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    EXECUTORS[step.kind](state, run, flow, step, resuming)


def _execute_talk(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    """Ask for the step's missing fields: its fixed ``question`` the first time, otherwise the
    model speaks in Settle. Only one run asks at a time, so another asker is suspended."""
    pending: list[str] = []
    answering = resuming and state.kind == "message"
    if step.collect:
        required = required_of(state.agent.fields, step.collect)
        pending = pending_fields(
            step.collect, step.max_asks, state.session["data"], run["asked"], answering, required
        )
        if not pending and not run.get("staying"):
            _pass_known(state, run, flow, step, resuming)
            return
    if state.silenced is not None:
        if resuming:
            run["status"] = "asking"
        else:
            end_run(
                state,
                run,
                "skipped",
                "silenced",
                kind=step.outcome_kind,
                detail=state.silenced or None,
            )
        return
    _take_the_question(state, run)
    if state.speak_done:
        if state.messages and state.messages[-1]["kind"] == "ai" and not resuming:
            _count_asked_ahead(run, pending)
        return
    if _asks_first_time(run, step, pending):
        _ask_fixed_question(state, run, step, pending)
    else:
        state.talk = _talk_request(state, run, flow, step, pending, answering)


def _talk_request(
    state: TurnState, run: Run, flow: Flow, step: Step, pending: list[str], answering: bool
) -> TalkRequest:
    """What the model is asked to say for the step: the fields on their last ask (never a
    required one), and what else the message gave that its constraints refused."""
    required = required_of(state.agent.fields, step.collect)
    final = [
        name
        for name in pending
        if run["asked"].get(name, 0) >= step.max_asks and name not in required
    ]
    refused = {
        name: why for name, why in state.refused.items() if name not in pending and answering
    }
    return TalkRequest(
        run=run,
        flow=flow,
        step=step,
        pending=pending,
        answering=answering,
        final=final,
        refused=refused,
    )


def _take_the_question(state: TurnState, run: Run) -> None:
    """Only one run asks at a time: any other asker is suspended."""
    for other in state.runs:
        if other is not run and other["status"] == "asking":
            other["status"] = "suspended"
            other["suspendedAt"] = state.now_iso
    run["status"] = "asking"


def _count_asked_ahead(run: Run, pending: list[str]) -> None:
    """The model's reply was the last thing said before the run came to this step; a model's
    reply asks what comes next, so that counts as this step's first ask like any other."""
    for name in pending:
        run["asked"][name] = max(run["asked"].get(name, 0), 1)


def _pass_known(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    """Every field is known (or given up): the step passes without asking."""
    key = state.step_key(run, step)
    gave_up = give_up(state, run, step) or given_up_before(state, run, step)
    target = step.raw.get("onGiveUp", step.then) if gave_up else step.then
    if resuming:
        state.outcome(run, step.outcome_kind, "ok", key=key, next=next_label(target))
    else:
        state.outcome(
            run,
            step.outcome_kind,
            "skipped",
            key=key,
            code="already-known",
            next=next_label(target),
        )
    follow(state, run, flow, step, target)


def _asks_first_time(run: Run, step: Step, pending: list[str]) -> bool:
    """The fixed ``question`` is for the first ask of every field; re-asks go to the model."""
    return (
        bool(step.raw.get("question"))
        and pending == step.collect
        and all(run["asked"].get(name, 0) == 0 for name in pending)
    )


def _ask_fixed_question(state: TurnState, run: Run, step: Step, pending: list[str]) -> None:
    state.emit(
        state.render(step.raw["question"], run, step.outcome_kind),
        "verbatim",
        state.message_key(run, step),
        run,
        step,
    )
    for name in pending:
        run["asked"][name] = run["asked"].get(name, 0) + 1
    state.outcome(run, step.outcome_kind, "ok", key=state.step_key(run, step), code="asked-fixed")


def _execute_say(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    if state.silenced is not None:
        end_run(state, run, "skipped", "silenced", kind="say", detail=state.silenced or None)
        return
    key = state.step_key(run, step)
    if step.raw.get("once"):
        claim = f"{flow.id}:{step.id}:{state.session['id']}"
        if state.claim_at(claim) is not None:
            state.outcome(
                run, "say", "skipped", key=key, code="already-sent", next=next_label(step.then)
            )
            follow(state, run, flow, step, step.then)
            return
        state.session["claims"][claim] = {"at": state.now_iso}
    state.emit(
        state.render(step.raw["say"], run, "say"),
        "verbatim",
        key,
        run,
        step,
        media=step.raw.get("media"),
    )
    state.outcome(run, "say", "ok", key=key, next=next_label(step.then))
    follow(state, run, flow, step, step.then)


def _execute_do(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    key = state.step_key(run, step)
    action = state.agent.actions.get(step.raw["do"])
    params = render_deep(step.raw.get("with") or {}, state.scope(run))
    ctx = ActionContext(
        context=state.context,
        data=state.session["data"],
        input=run.get("input"),
        run=run,
        key=key,
        dedupe_key=run["dedupeKey"],
        silenced=state.silenced,
        now=state.now,
    )
    try:
        result = action(params, ctx) if action else {"failed": f"unknown action {step.raw['do']!r}"}
    except Exception as error:  # an action's failure is the run's outcome, never the turn's
        result = {"failed": str(error) or type(error).__name__}
    if result is None:
        result = {"ok": True}
    if "ok" in result:
        if result.get("spoke"):
            state.spoke_by.add(run["id"])
            state.spoke = True
        # The outcome line keeps what an action said (as text, when it is not JSON).
        state.outcome(
            run, "do", "ok", key=key, detail=result.get("detail"), next=next_label(step.then)
        )
        follow(state, run, flow, step, step.then)
    elif "skipped" in result:
        state.outcome(
            run,
            "do",
            "skipped",
            key=key,
            code="action-skipped",
            detail=str(result["skipped"]),
            next=next_label(step.then),
        )
        follow(state, run, flow, step, step.then)
    elif "defer" in result:
        at = state.now_ms + parse_duration(result["defer"], f"action {step.raw['do']!r} defer")
        park(state, run, "timer", f"{run['id']}:{step.id}:{at}", at)
        state.outcome(
            run,
            "do",
            "deferred",
            key=key,
            code="action-deferred",
            detail=result.get("detail"),
            until=iso_from_ms(at),
        )
    else:
        target = step.raw.get("onFail", step.then)
        state.outcome(
            run,
            "do",
            "failed",
            key=key,
            code="action-failed",
            detail=str(result.get("failed", "")),
            next=next_label(target),
        )
        follow(state, run, flow, step, target)


def _execute_wait(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    key = state.step_key(run, step)
    ms = parse_duration(step.raw["wait"])
    if ms <= SHORT_WAIT_MS:
        following = peek(flow, step)
        if following is not None and following.kind in ("say", "talk"):
            state.after_ms += ms
            state.outcome(
                run,
                "wait",
                "ok",
                key=key,
                code="inline-delay",
                detail=f"{ms}ms",
                next=next_label(step.then),
            )
            follow(state, run, flow, step, step.then)
            return
    at = state.snap(state.now_ms + ms, bool(step.raw.get("businessHours")))
    park(state, run, "timer", f"{run['id']}:{step.id}:{at}", at)
    state.outcome(run, "wait", "waiting", key=key, until=iso_from_ms(at))


def _execute_wait_event(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    key = state.step_key(run, step)
    wait = step.raw["wait"]
    up_to = parse_duration(wait["upTo"]) if "upTo" in wait else DEFAULT_EVENT_WAIT_MS
    at = state.now_ms + up_to
    park(state, run, "event", f"{run['id']}:{step.id}:{at}", at, event=wait["event"])
    state.outcome(
        run,
        "wait",
        "waiting",
        key=key,
        code="awaiting-event",
        detail=wait["event"],
        until=iso_from_ms(at),
    )


def _execute_handover(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    """Give the session to people and wait at this step; handed back, go on to ``then``."""
    if resuming:
        follow(state, run, flow, step, step.then)
        return
    reason = step.raw["handover"]
    hand_over(state, reason if isinstance(reason, str) else None, run)
    run["status"] = "asking"


def _execute_if(state: TurnState, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
    key = state.step_key(run, step)
    target = step.then if state.holds(step.raw["if"], run) else step.raw.get("else", "end")
    state.outcome(run, "if", "ok", key=key, next=next_label(target))
    follow(state, run, flow, step, target)


def peek(flow: Flow, step: Step) -> Step | None:
    target = step.then
    if target is None:
        return flow.after(step)
    if isinstance(target, str):
        return None if target == "end" else flow.step(target)
    return flow.step(target["step"]) if "step" in target else None


def give_up(state: TurnState, run: Run, step: Step) -> list[str]:
    """Give up the step's fields asked ``max_asks`` times and still unknown: a max-asks line
    each, and the user is told (the step's or the field's ``giveUp`` sentence, or the default)
    unless silenced. Returns the fields given up (the run then goes to ``onGiveUp``)."""
    required = required_of(state.agent.fields, step.collect)
    data = state.session["data"]
    names = given_up(step.collect, step.max_asks, data, run["asked"], required)
    if not names:
        return names
    key = state.step_key(run, step)
    for name in names:
        run["asked"][name] = step.max_asks + 1
        state.outcome(run, "collect", "skipped", key=key, code="max-asks", detail=name)
    if state.silenced is None:
        state.emit(
            give_up_sentence(state, run, step, names),
            "verbatim",
            f"{key}:gave-up:{'+'.join(names)}",
            run,
            step,
        )
    return names


def give_up_sentence(state: TurnState, run: Run, step: Step, names: list[str]) -> str:
    if "giveUp" in step.raw:
        return state.render(step.raw["giveUp"], run, "collect")
    sentences = []
    for name in names:
        definition = state.agent.fields[name]
        if "giveUp" in definition:
            sentences.append(state.render(definition["giveUp"], run, "collect"))
        else:
            language = label_language([definition.get("label")], state.language)
            label = localized(definition.get("label") or name, language)
            sentences.append(localized(DEFAULT_GIVE_UP, language).format(label=label))
    return " ".join(dict.fromkeys(sentences))


def given_up_before(state: TurnState, run: Run, step: Step) -> list[str]:
    """The step's fields given up on an earlier turn (their give-up told): the step goes to
    its ``onGiveUp`` when it is done, though a required field kept it asking meanwhile."""
    data = state.session["data"]
    return [
        name
        for name in step.collect
        if not is_known(data.get(name)) and run["asked"].get(name, 0) > step.max_asks
    ]


def stuck(state: TurnState, run: Run, step: Step) -> list[str]:
    """The step's ``required`` fields still unknown although asked ``max_asks`` times: not
    given up, asked again with a way out (``tell_stuck``)."""
    data, required = state.session["data"], required_of(state.agent.fields, step.collect)
    return [
        name
        for name in step.collect
        if name in required
        and not is_known(data.get(name))
        and run["asked"].get(name, 0) >= step.max_asks
    ]


def tell_stuck(state: TurnState, run: Run, step: Step, names: list[str]) -> None:
    """A required field is still missing after its asks: a field ``required: "handover"`` goes
    to people (the run waits at the step and asks again when handed back); any other is
    asked again (the model's reply) with the offer of another way, or of a person when the
    agent can hand over. The field's ``stuck`` sentence says it in its own words."""
    definitions = [state.agent.fields[name] for name in names]
    handing = any(definition["required"] == "handover" for definition in definitions)
    if handing:
        sentences = DEFAULT_STUCK_HANDOVER
    elif any(interrupt.get("handover") for interrupt in state.agent.interrupts):
        sentences = DEFAULT_STUCK_PERSON
    else:
        sentences = DEFAULT_STUCK
    definition = definitions[0]
    if "stuck" in definition:
        said = state.render(definition["stuck"], run, "collect")
    else:
        language = label_language([definition.get("label")], state.language)
        label = localized(definition.get("label") or names[0], language)
        said = localized(sentences, language).format(label=label)
    asks = run["asked"].get(names[0], 0)
    key = f"{state.step_key(run, step)}:stuck:{'+'.join(names)}:{asks}"
    state.outcome(run, "collect", "ok", key=key, code="required-missing", detail=names[0])
    if state.silenced is None:
        state.emit(said, "verbatim", key, run, step)
    if handing:
        hand_over(state, f"could not get {names[0]}", run)


EXECUTORS = {
    "talk": _execute_talk,
    "say": _execute_say,
    "do": _execute_do,
    "wait": _execute_wait,
    "wait_event": _execute_wait_event,
    "if": _execute_if,
    "handover": _execute_handover,
}
