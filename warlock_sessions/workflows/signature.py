"""Signatures: a run's snapshot records the fingerprint of the definition that saved it, so a
resume can refuse a changed definition (drift) before anything runs.

The hash is FNV-1a 32-bit over the UTF-16 code units of the fingerprint's compact JSON, in
insertion order, as 8 lowercase hex digits: exactly what the TypeScript upstream computes, so a
run saved by either side is recognised by the other (the golden vectors in the tests).
Intent keys are sorted by code point (upstream sorts with ``localeCompare``; the two agree on
ASCII letters of one case and digits, not on mixed case or ``_``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193


def fnv1a32(text: str) -> str:
    """FNV-1a 32-bit over ``text``'s UTF-16 code units, as JavaScript's ``charCodeAt`` sees them."""
    h = FNV_OFFSET
    units = text.encode("utf-16-le", "surrogatepass")
    for index in range(0, len(units), 2):
        h ^= units[index] | (units[index + 1] << 8)
        h = (h * FNV_PRIME) & 0xFFFFFFFF
    return f"{h:08x}"


def canonical(value: Any) -> str:
    """Compact JSON as ``JSON.stringify`` writes it (keys in insertion order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def signature_of(fingerprint: Any) -> str:
    return fnv1a32(canonical(fingerprint))


def step_fingerprint(step: Any) -> dict[str, Any]:
    """``{"n", "t", "a"?, "c"}`` of a workflow step: its name, kind (``parallel`` when it has a
    parallel list, even an empty one; else ``agent``, ``run`` or ``empty``), its agent's name
    (left out when it has no agent, as JSON drops ``undefined``) and its children."""
    parallel = getattr(step, "parallel", None)
    agent = getattr(step, "agent", None)
    if parallel is not None:
        kind = "parallel"
    elif agent is not None:
        kind = "agent"
    elif getattr(step, "run", None) is not None:
        kind = "run"
    else:
        kind = "empty"
    fingerprint: dict[str, Any] = {"n": step.name, "t": kind}
    if agent is not None and getattr(agent, "name", None) is not None:
        fingerprint["a"] = agent.name
    fingerprint["c"] = None if parallel is None else [step_fingerprint(c) for c in parallel]
    return fingerprint


def workflow_signature(name: str, version: str | None, steps: Iterable[Any]) -> str:
    return signature_of({"n": name, "v": version, "s": [step_fingerprint(s) for s in steps]})


def intents_fingerprint(intents: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"k", "d"?, "u"}]`` sorted by key. ``intents`` maps each key to ``{"d": description,
    "u": unit fingerprint}`` (a unit is ``{"t": "agent", "n"}``, ``{"t": "workflow", "n",
    "s"}`` or ``{"t": "callback"}``); an intent with no ``"d"`` leaves it out, as JSON drops
    upstream's ``undefined`` description of a callback given none."""
    return [
        {
            "k": key,
            **({"d": intents[key]["d"]} if "d" in intents[key] else {}),
            "u": intents[key]["u"],
        }
        for key in sorted(intents)
    ]


def routing_fingerprint(
    name: str,
    intents: Mapping[str, Mapping[str, Any]],
    *,
    router: str | None,
    route_callback: bool,
    evaluate: bool,
    initial: str | None,
    max_iterations: int | None,
) -> dict[str, Any]:
    """What supervisors and orchestrators both hash, in upstream's key order.
    ``max_iterations`` is the one given, ``None`` when omitted (upstream hashes ``null`` then,
    whatever the default it runs with)."""
    return {
        "n": name,
        "a": intents_fingerprint(intents),
        "r": router,
        "rc": int(route_callback),
        "e": int(evaluate),
        "i": initial,
        "m": max_iterations,
    }


def supervisor_signature(
    name: str,
    intents: Mapping[str, Mapping[str, Any]],
    *,
    classifier: Any = None,
    **routing: Any,
) -> str:
    """The routing fingerprint (``routing_fingerprint``'s keywords) and the classifier."""
    return signature_of({**routing_fingerprint(name, intents, **routing), "c": classifier})


def orchestrator_signature(
    name: str,
    intents: Mapping[str, Mapping[str, Any]],
    *,
    iterate: bool,
    history_window: Mapping[str, str | None] | None = None,
    **routing: Any,
) -> str:
    """The routing fingerprint, ``iterate`` and the shape of the history window
    (``{"router", "agents"}``, each ``"number"``, ``"callback"`` or ``None``; both ``None``
    when there is none)."""
    window = dict(history_window or {"router": None, "agents": None})
    fingerprint = routing_fingerprint(name, intents, **routing)
    return signature_of({**fingerprint, "it": int(iterate), "hw": window})


def agent_signature(
    name: str,
    provider: str | None,
    model: str | None,
    tools: Iterable[str],
    *,
    max_trips: int | None = None,
    output: bool = False,
    version: str | None = None,
) -> str:
    return signature_of(
        {
            "n": name,
            "p": provider,
            "m": model,
            "t": sorted(tools),
            "x": max_trips,
            "o": int(output),
            "v": version,
        }
    )
