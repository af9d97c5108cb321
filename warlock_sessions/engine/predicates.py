"""Code predicates: a callable runs as is; a spec dict is AND over its keys.

``equals`` ({field: value}), ``known`` ([fields]), ``silenced`` (bool), ``running`` (a list of
flow ids: some other live run is of one of them; or a bool: whether any other run is live),
``input`` and ``context`` ({"dotted.path": value}: the run's input, which for an event flow is
the event's payload, or the host's context, holds that value there) are built in, so a flow
needs no Python to branch on what an event carried; any other key names one of the agent's
``conditions``, called as ``condition(ctx, arg)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .fields import is_known

BUILT_IN = frozenset({"equals", "known", "silenced", "running", "input", "context"})


@dataclass(frozen=True)
class PredicateContext:
    """What a predicate sees. ``data`` is the session's (read it, do not write it)."""

    context: Any
    data: Mapping[str, Any]
    input: Any
    run: Mapping[str, Any] | None
    silenced: str | None
    now: datetime
    #: The session's live runs (the judged ``run`` among them, when it is live).
    runs: tuple[Mapping[str, Any], ...] = ()


Predicate = Callable[[PredicateContext], bool] | Mapping[str, Any]
Condition = Callable[[PredicateContext, Any], bool]


def evaluate(
    predicate: Predicate, ctx: PredicateContext, conditions: Mapping[str, Condition]
) -> bool:
    if callable(predicate):
        return bool(predicate(ctx))
    for name, arg in predicate.items():
        if name == "equals":
            holds = all(json_equal(ctx.data.get(field), value) for field, value in arg.items())
        elif name == "known":
            holds = all(is_known(ctx.data.get(field)) for field in arg)
        elif name == "silenced":
            holds = (ctx.silenced is not None) == bool(arg)
        elif name == "running":
            holds = _running(ctx, arg)
        elif name in ("input", "context"):
            root = ctx.input if name == "input" else ctx.context
            holds = all(json_equal(_at(root, path), value) for path, value in arg.items())
        else:
            holds = bool(conditions[name](ctx, arg))
        if not holds:
            return False
    return True


def _at(root: Any, path: str) -> Any:
    """The value at a dotted ``path`` in JSON-like ``root`` (``None`` where there is none)."""
    current = root
    for key in path.split("."):
        if isinstance(current, Mapping):
            current = current.get(key)
        elif isinstance(current, list | tuple) and key.isdigit() and int(key) < len(current):
            current = current[int(key)]
        else:
            return None
    return current


def _running(ctx: PredicateContext, flows: Any) -> bool:
    judged = ctx.run.get("id") if ctx.run is not None else None
    others = [run["flowId"] for run in ctx.runs if run["id"] != judged]
    if isinstance(flows, bool):
        return bool(others) == flows
    return any(flow in flows for flow in others)


def json_equal(a: Any, b: Any) -> bool:
    """Deep equality of JSON values that, unlike ``==``, never equates ``True`` with ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list | tuple) or isinstance(b, dict | list | tuple):
        return False
    return bool(a == b)
