"""Settle: what the model said (or why it could not) is applied: the talk step's message and
fields, or a retry on the ladder; then suspended askers resume and the silence timer is armed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .agent import tool_id
from .decide import write_field
from .fields import pending_fields, required_of
from .handover import handover_of
from .isotime import iso_from_ms, ms_from_iso
from .lifecycle import draft_run, end_run, follow, park, repeat_allows, resume_suspended, stay_at
from .ports import (
    Deferral,
    IdleRequest,
    SpeakRequest,
    Spoken,
    TalkRequest,
)
from .state import TurnState
from .steps import drain, give_up, given_up_before, stuck, tell_stuck

# When the model cannot speak (rate limit, outage), the talk step retries at growing
# intervals: most outages last minutes, so the first retries come soon, and the later ones
# spread out to ride a long outage without hammering the provider. After the last rung the
# run fails: a question nobody can put must not keep the conversation asking forever.
RETRY_LADDER_MS = (60_000, 300_000, 900_000, 3_600_000, 21_600_000)


def speak_request(state: TurnState, talk: TalkRequest | IdleRequest) -> SpeakRequest:
    agent = state.agent
    if isinstance(talk, IdleRequest):
        own_instructions = list(talk.idle.get("instructions") or [])
        allowed = talk.idle.get("tools")
        run = None
    else:
        own_instructions = [
            *(talk.flow.raw.get("instructions") or []),
            *(talk.step.raw.get("instructions") or []),
        ]
        allowed = talk.step.raw.get("tools", talk.flow.raw.get("tools"))
        run = talk.run
    instructions = [
        item
        for item in [*agent.instructions, *own_instructions]
        if not (isinstance(item, Mapping) and "if" in item) or state.holds(item["if"], run)
    ]
    tools = [tool for tool in agent.tools if allowed is None or tool_id(tool) in allowed]
    return SpeakRequest(
        talk=talk,
        input_kind=state.kind,
        text=state.what.get("text") if state.kind == "message" else None,
        context=state.context,
        data=state.session["data"],
        history=state.history(),
        now=state.now,
        instructions=instructions,
        tools=tools,
        fields=agent.fields,
        language=state.language,
    )


def settle(state: TurnState, outcome: Spoken | Deferral | None) -> None:
    if state.ignored:
        return
    state.speak_done = True
    talk = state.talk
    state.talk = None
    if isinstance(outcome, Deferral):
        state.llm_calls += outcome.llm_calls
        if talk is not None:
            defer_talk(state, talk, outcome)
        else:
            state.outcome(None, "idle", "deferred", code=outcome.code, llmCalls=outcome.llm_calls)
    elif isinstance(outcome, Spoken):
        state.llm_calls += outcome.llm_calls
        if talk is not None:
            apply_spoken(state, talk, outcome)
            drain(state)
        else:
            key = f"idle:{state.trigger_key}"
            if outcome.message:
                state.emit(outcome.message, "ai", key)
            state.session["data"].update(outcome.data)
            state.outcome(None, "idle", "ok", key=key, llmCalls=outcome.llm_calls)
    if state.spoke:
        state.session["lastAssistantAt"] = state.now_iso
    resume_suspended(state)
    arm_silence(state)


def apply_spoken(state: TurnState, talk: TalkRequest, spoken: Spoken) -> None:
    """The model spoke for a talk step: write the fields it heard; a field whose last answer
    this was and that is still unknown is given up, told before the model's reply (which,
    told the field was ``final``, goes on to what comes next)."""
    run, flow, step = talk.run, talk.flow, talk.step
    message_key = state.message_key(run, step)  # as asked, before a give-up counts past it
    for name, raw in spoken.fields.items():
        write_field(state, name, raw)
    state.session["data"].update(spoken.data)
    required = required_of(state.agent.fields, step.collect)
    data = state.session["data"]
    retrying = pending_fields(step.collect, step.max_asks, data, run["asked"], False, required)
    gave_up = give_up(state, run, step) if step.collect else []
    before = given_up_before(state, run, step) if step.collect else []
    target = step.raw.get("onGiveUp", step.then) if gave_up or before else step.then
    missing = stuck(state, run, step) if talk.answering else []
    _reply(state, talk, spoken, message_key, missing)
    if not state.live(run):
        return
    # A field given up with an onGiveUp goes there, whatever else the step still asks, but
    # for a required field: that is never left unknown, and the step asks on for it.
    leaves = gave_up and "onGiveUp" in step.raw and not set(retrying) & required
    if retrying and not leaves:
        _ask_again(state, talk, spoken, retrying, missing)
        return
    if run.get("staying"):
        stay_at(run, step)
        return
    run["status"] = "running"
    follow(state, run, flow, step, target)
    if state.live(run) and run["status"] == "running":
        state.queue.append(run)


def _reply(
    state: TurnState, talk: TalkRequest, spoken: Spoken, key: str, missing: list[str]
) -> None:
    """The model's reply and its line; not the question again when a required field goes
    to people."""
    run, step = talk.run, talk.step
    handing = any(state.agent.fields[name]["required"] == "handover" for name in missing)
    if spoken.message and not handing:
        state.emit(spoken.message, "ai", key, run, step)
    state.outcome(
        run,
        step.outcome_kind,
        "ok",
        step_id=step.id,
        key=state.step_key(run, step),
        llmCalls=spoken.llm_calls,
    )


def _ask_again(
    state: TurnState, talk: TalkRequest, spoken: Spoken, retrying: list[str], missing: list[str]
) -> None:
    """The step asks on. Only a question the user was shown counts (the size asked alone
    leaves the flavour's asks for when it is asked); asking again after people had the chat
    uses up no ask. A required field whose asks are used up is told how to go on."""
    run = talk.run
    shown = set(retrying if spoken.asked is None else spoken.asked) & set(retrying)
    for name in set() if state.handed_back else shown:
        run["asked"][name] = run["asked"].get(name, 0) + 1
    run["status"] = "asking"
    if missing:
        tell_stuck(state, run, talk.step, missing)


def defer_talk(state: TurnState, talk: TalkRequest, deferred: Deferral) -> None:
    """The model could not speak: park the run for the next rung of the retry ladder (or the
    provider's reset time, if later), or end it as failed when the failure is not retryable
    or the ladder is spent. The retry re-runs the step at the same visit, so its keys repeat."""
    run, step = talk.run, talk.step
    key = state.step_key(run, step)
    attempt = 0
    for line in reversed(run["outcomes"]):
        if line["status"] != "deferred" or line.get("stepId") != step.id:
            break
        attempt += 1
    retryable = deferred.retryable
    if state.agent.should_retry is not None:
        retryable = bool(state.agent.should_retry(deferred))
    if not retryable or attempt >= len(RETRY_LADDER_MS):
        state.outcome(run, step.outcome_kind, "failed", key=key, code=deferred.code)
        end_run(state, run, "failed")
        return
    at = state.now_ms + RETRY_LADDER_MS[attempt]
    if deferred.reset_at_ms is not None and deferred.reset_at_ms > at:
        at = deferred.reset_at_ms
    visit = run["visits"].get(step.id, 0)
    # The answer this turn brought was never read: its last ask does not count, so the
    # retry asks again instead of giving the field up unread.
    for name in talk.final:
        run["asked"][name] = step.max_asks - 1
    park(state, run, "timer", f"{run['id']}:{step.id}:{visit}:retry:{at}", at)
    state.outcome(
        run,
        step.outcome_kind,
        "deferred",
        key=key,
        code=deferred.code,
        until=iso_from_ms(at),
    )


def arm_silence(state: TurnState) -> None:
    """Time the silence after the assistant spoke (spec: only when it spoke this turn).
    The silence timed before is retired once it cannot fire: the user wrote, or the
    assistant spoke again and the flow was not re-armed (its ``if`` no longer holds)."""
    previous = state.original.get("lastAssistantAt") if state.original else None
    spoke = state.session.get("lastAssistantAt") != previous
    wakes = silence_wakes(state, previous) if spoke else []
    state.schedule.extend(wakes)
    wrote = state.session.get("lastUserAt") != (
        state.original.get("lastUserAt") if state.original else None
    )
    if not previous or not (spoke or wrote):
        return
    kept = {wake.get("replaces") for wake in wakes}
    if state.kind == "wake":
        kept.add(state.what["key"])  # the host marks the fired wake itself
    at_ms = ms_from_iso(previous)
    state.retired += [
        key
        for flow in state.flows.values()
        if flow.trigger_of("silence") is not None
        and (key := f"silence:{flow.id}:{state.session['id']}:{at_ms}") not in kept
    ]


def silence_wakes(state: TurnState, previous: str | None = None) -> list[dict[str, Any]]:
    session = state.session
    last_assistant = session.get("lastAssistantAt")
    if not last_assistant or handover_of(session) is not None:
        return []  # people answer for the bot: its silences wait for the hand-back
    last_user = session.get("lastUserAt")
    if last_user and ms_from_iso(last_user) > ms_from_iso(last_assistant):
        return []
    ms = ms_from_iso(last_assistant)
    wakes = []
    for flow in state.flows.values():
        trigger = flow.trigger_of("silence")
        if trigger is None:
            continue
        key = str(ms)
        if trigger.condition is not None and not state.holds(
            trigger.condition, draft_run(state, flow, "silence", key)
        ):
            continue
        if not repeat_allows(state, flow, trigger, key):
            continue
        at = state.snap(ms + trigger.silence_ms, trigger.business_hours)
        wake: dict[str, Any] = {
            "key": f"silence:{flow.id}:{session['id']}:{ms}",
            "at": iso_from_ms(at),
        }
        if previous:
            wake["replaces"] = f"silence:{flow.id}:{session['id']}:{ms_from_iso(previous)}"
        wakes.append(wake)
    return wakes
