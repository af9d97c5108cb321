"""Every name an agent's flows refer to, resolved when the agent is built: a field read by a
template (``{{data.size}}``), tested by a predicate (``equals``, ``known``) or cleared
(``clearOnStart``, a move's ``clear``), and a flow a predicate asks about (``running``). A
misspelt one loads as nothing today and misbehaves silently later (a size dropped from a
sentence, a confirmation that loops, a reminder that never fires), so it is refused with its
path and the closest name.

Data an action writes (``ctx.set``) is declared as a field too (``{"paid": {"type":
"boolean"}}``): a field no step collects is never asked for. Flow and step targets of moves
are checked with the flows themselves (``flows._Checker.next``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import FlowConfigurationError
from .flows import Flow, closest_hint
from .templates import placeholders

#: The scopes a template reads: the session's data, the host's context, the run's input.
SCOPES = ("data", "context", "input")
#: Keys of a step, a branch or an interrupt that hold a move (``{step, clear?}``).
MOVES = ("then", "else", "onFail", "onGiveUp")


def check_references(
    flows: Mapping[str, Flow],
    fields: Mapping[str, Any],
    interrupts: Sequence[Mapping[str, Any]] = (),
    idle: Any = None,
) -> None:
    """Raise ``FlowConfigurationError`` at the first reference to a field or flow the agent
    does not have."""
    texts: list[tuple[str, Any]] = [(f"fields.{name}", spec) for name, spec in fields.items()]
    texts += [(f"interrupts[{i}]", interrupt) for i, interrupt in enumerate(interrupts)]
    if isinstance(idle, Mapping):
        texts.append(("idle", idle))
    for index, flow in enumerate(flows.values()):
        texts.append((f"flows[{index}]", flow.raw))
        for path, predicate in _predicates(flow, f"flows[{index}]"):
            _check_predicate(predicate, path, fields, flows)
        for path, names in _cleared(flow, f"flows[{index}]"):
            for position, name in enumerate(names):
                _field(name, f"{path}[{position}]", fields, "clears")
    for root, value in texts:
        for path, text in _strings(value, root):
            _check_template(text, path, fields)


def _check_template(text: str, path: str, fields: Mapping[str, Any]) -> None:
    for placeholder, _fallback in placeholders(text):
        scope, _, rest = placeholder.partition(".")
        if scope not in SCOPES:
            raise FlowConfigurationError(
                path,
                f"{{{{{placeholder}}}}} reads {scope!r}, which no template has; "
                f"{closest_hint(scope, SCOPES, 'a template reads')}",
            )
        if scope == "data" and rest:  # ``{{data}}`` alone is the whole data (an action's)
            _field(rest.split(".")[0], path, fields, f"reads {{{{{placeholder}}}}}, but")


def _check_predicate(
    predicate: Any, path: str, fields: Mapping[str, Any], flows: Mapping[str, Flow]
) -> None:
    if not isinstance(predicate, Mapping):
        return  # a callable: code, not names
    for name in predicate.get("equals") or {}:
        _field(name, f"{path}.equals.{name}", fields, "tests")
    for position, name in enumerate(predicate.get("known") or []):
        _field(name, f"{path}.known[{position}]", fields, "tests")
    running = predicate.get("running")
    if isinstance(running, list | tuple):
        for position, flow_id in enumerate(running):
            if flow_id not in flows:
                raise FlowConfigurationError(
                    f"{path}.running[{position}]",
                    f"no flow {flow_id!r} on this agent; {closest_hint(flow_id, flows, 'flows')}",
                )


def _field(name: str, path: str, fields: Mapping[str, Any], what: str) -> None:
    if name in fields:
        return
    raise FlowConfigurationError(
        path,
        f"{what} no field {name!r} of the agent's; {closest_hint(name, fields, 'fields')} "
        "(data an action writes is declared as a field too)",
    )


def _predicates(flow: Flow, root: str) -> Iterator[tuple[str, Any]]:
    """Every predicate of ``flow``: its ``while``, its triggers' and its steps' ``if``, and its
    branches'."""
    raw = flow.raw
    if "while" in raw:
        yield f"{root}.while", raw["while"]
    for index, trigger in enumerate(raw.get("on") or []):
        if isinstance(trigger, Mapping) and "if" in trigger:
            yield f"{root}.on[{index}].if", trigger["if"]
    for index, step in enumerate(raw.get("steps") or []):
        where = f"{root}.steps[{index}]"
        if "if" in step:
            yield f"{where}.if", step["if"]
        for b, branch in enumerate(step.get("branches") or []):
            if "if" in branch:
                yield f"{where}.branches[{b}].if", branch["if"]


def _cleared(flow: Flow, root: str) -> Iterator[tuple[str, Sequence[str]]]:
    """Every list of fields ``flow`` forgets: on start, and on each move that says so."""
    raw = flow.raw
    yield f"{root}.clearOnStart", raw.get("clearOnStart") or []
    holders = [(f"{root}.interrupts[{i}]", x) for i, x in enumerate(raw.get("interrupts") or [])]
    for index, step in enumerate(raw.get("steps") or []):
        holders.append((f"{root}.steps[{index}]", step))
        branches = step.get("branches") or []
        holders += [(f"{root}.steps[{index}].branches[{b}]", x) for b, x in enumerate(branches)]
    for where, holder in holders:
        for key in MOVES:
            move = holder.get(key)
            if isinstance(move, Mapping) and "clear" in move:
                yield f"{where}.{key}.clear", move["clear"]


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` (a flow, a field, an interrupt), with its path."""
    if isinstance(value, str):
        if "{{" in value:
            yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
