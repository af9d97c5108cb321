"""An agent's flows drawn as a Mermaid flowchart: steps, branches, waits, give-ups, interrupts
and chains to other flows, with the steps a session's runs are at highlighted.

The text is what ``manage.py warlock_flows graph`` writes and what the admin renders with the
Mermaid script served from this app's static files; GitHub and most wikis render it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .agent import Agent
from .flows import Flow, Step
from .templates import localized

#: What each kind of step looks like: Mermaid's node shapes.
_SHAPES = {
    "talk": ('["', '"]'),
    "say": ('>"', '"]'),
    "do": ('[["', '"]]'),
    "wait": ('{{"', '"}}'),
    "wait_event": ('{{"', '"}}'),
    "if": ('{"', '"}'),
}
_UNSAFE = re.compile(r'["<>&#`{}]')
_LABEL_LENGTH = 60


def mermaid(agent: Agent, current: Iterable[tuple[str, str | None]] = ()) -> str:
    """The flowchart of every flow of ``agent``; ``current`` lists the (flow id, step id)
    the session's runs are at (the step is ``None`` before a run's first step), and those
    nodes are highlighted."""
    flows = list(agent.flows.values())
    ids = {flow.id: f"f{index}" for index, flow in enumerate(flows)}
    lines = ["flowchart TD"]
    for flow in flows:
        lines += _flow_lines(flow, ids)
    lines += _agent_interrupt_lines(agent)
    lines.append("  classDef current fill:#ffe082,stroke:#e65100,stroke-width:3px")
    lines.append("  classDef ending fill:#eceff1,stroke:#90a4ae")
    for flow_id, step_id in current:
        if flow_id in ids:
            lines.append(f"  class {_node_of(ids, agent.flows[flow_id], step_id)} current")
    return "\n".join(lines) + "\n"


def _flow_lines(flow: Flow, ids: Mapping[str, str]) -> list[str]:
    me = ids[flow.id]
    lines = [f'  subgraph {me}_box["{_label(flow.id)}"]', "    direction TB"]
    lines.append(f'    {me}_on(["{_label(_triggers(flow))}"])')
    for step in flow.steps:
        opening, closing = _SHAPES[step.kind]
        lines.append(
            f"    {_step_node(ids, flow, step)}{opening}{_label(_describe(step))}{closing}"
        )
    lines.append(f'    {me}_end(("{_label(flow.on_end)}")):::ending')
    interrupts = list(enumerate(flow.raw.get("interrupts") or []))
    for index, interrupt in interrupts:
        said = "any step: " + interrupt["when"].replace("|", ", ")
        lines.append(f'    {me}_stop{index}[/"{_label(said)}"/]')
    lines.append("  end")
    first = flow.steps[0].id if flow.steps else "end"
    lines.append(f"  {me}_on --> {_target(ids, flow, first)}")
    for step in flow.steps:
        for label, target, dotted in _moves(flow, step):
            lines.append(
                _edge(_step_node(ids, flow, step), _target(ids, flow, target), label, dotted)
            )
    for index, interrupt in interrupts:
        if interrupt.get("handover") and "then" not in interrupt:
            lines.append(f'  {me}_stop{index} -.-> {me}_stop{index}_people[/"{PEOPLE}"/]')
            continue
        target = _target(ids, flow, interrupt.get("then", "end"))
        lines.append(_edge(f"{me}_stop{index}", target, "", True))
    return lines


#: Where a hand-over that moves no run leads.
PEOPLE = "to people: the run stays where it was"


def _agent_interrupt_lines(agent: Agent) -> list[str]:
    """The agent's own interrupts, heard in any state: what the user says, and where it leads
    (people, every run staying where it was, or only a sentence)."""
    lines = []
    for index, interrupt in enumerate(agent.interrupts):
        said = "any state: " + interrupt["when"].replace("|", ", ")
        lines.append(f'  agent_stop{index}[/"{_label(said)}"/]')
        if interrupt.get("handover"):
            where = "to people: every run stays where it was"
        else:
            where = "a sentence: every run stays where it was"
        lines.append(f'  agent_stop{index} -.-> agent_stop{index}_to[/"{where}"/]')
    return lines


def _triggers(flow: Flow) -> str:
    parts = []
    for trigger in flow.triggers:
        if trigger.kind in ("message", "mention"):
            said = ", ".join(trigger.phrases[:3]) + ("…" if len(trigger.phrases) > 3 else "")
            parts.append(f"{trigger.kind}: {said or 'any'}")
        elif trigger.kind == "silence":
            parts.append(f"silence {trigger.silence_ms // 1000}s")
        else:
            parts.append(f"event {trigger.event}")
    return "; ".join(parts) or "started from outside"


def _describe(step: Step) -> str:
    raw = step.raw
    if step.kind == "talk":
        what = f"ask {', '.join(step.collect)}" if step.collect else "talk"
    elif step.kind == "say":
        what = f"say: {localized(raw['say'], None)}"  # English, of several languages
    elif step.kind == "do":
        what = f"do {raw['do']}"
    elif step.kind == "wait":
        what = f"wait {raw['wait']}"
    elif step.kind == "wait_event":
        what = f"wait for {raw['wait']['event']}"
    else:
        what = f"if {_condition(raw['if'])}"
    return f"{step.id}: {what}"


def _condition(predicate: Any) -> str:
    if callable(predicate):
        return getattr(predicate, "__name__", "a condition")
    return ", ".join(
        f"{name} {json.dumps(value, ensure_ascii=False)}" for name, value in predicate.items()
    )


def _moves(flow: Flow, step: Step) -> Iterator[tuple[str, Any, bool]]:
    """Each way out of ``step``: (label, target, dotted)."""
    raw = step.raw
    then = step.then if step.then is not None else _next(flow, step)
    if step.kind == "if":
        yield "yes", then, False
        yield "no", raw.get("else", "end"), False
        return
    for branch in raw.get("branches") or []:
        yield branch.get("when") or _condition(branch["if"]), branch["then"], False
    if step.kind == "wait_event":
        yield raw["wait"]["event"], then, False
        yield "timeout", raw.get("else", "end"), True
        return
    if step.kind == "wait" and "else" in raw:
        yield "replied", raw["else"], False
        yield "no reply", then, False
        return
    yield "", then, False
    if "onFail" in raw:
        yield "fails", raw["onFail"], True
    if "onGiveUp" in raw:
        yield "gives up", raw["onGiveUp"], True


def _next(flow: Flow, step: Step) -> Any:
    following = flow.after(step)
    return following.id if following is not None else "end"


def _target(ids: Mapping[str, str], flow: Flow, target: Any) -> str:
    me = ids[flow.id]
    if target is None or target == "end":
        return f"{me}_end"
    if isinstance(target, str):
        return _node_of(ids, flow, target)
    if "step" in target:
        return _node_of(ids, flow, target["step"])
    other = ids.get(target["flow"])
    return f"{other}_on" if other else f"{me}_end"


def _step_node(ids: Mapping[str, str], flow: Flow, step: Step) -> str:
    return f"{ids[flow.id]}_s{flow.positions[step.id]}"


def _node_of(ids: Mapping[str, str], flow: Flow, step_id: str | None) -> str:
    """The node of step ``step_id``: the flow's start before its first step, its end when
    the step is gone."""
    if step_id is None:
        return f"{ids[flow.id]}_on"
    step = flow.step(step_id)
    return _step_node(ids, flow, step) if step is not None else f"{ids[flow.id]}_end"


def _edge(source: str, target: str, label: str, dotted: bool) -> str:
    arrow = "-.->" if dotted else "-->"
    text = f'|"{_label(label)}"|' if label else ""
    return f"  {source} {arrow}{text} {target}"


def _label(text: str) -> str:
    """Text safe inside a quoted Mermaid label, shortened."""
    text = " ".join(str(text).split())
    if len(text) > _LABEL_LENGTH:
        text = text[: _LABEL_LENGTH - 1] + "…"
    return _UNSAFE.sub(lambda match: f"#{ord(match[0])};", text)
