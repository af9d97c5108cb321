"""Builders of valid v4 session blobs for tests and benchmarks (pure Python, no Django).

Every builder returns a fresh dict that passes ``assert_session``; keyword arguments override
any key, so a test states only what it cares about.
"""

from __future__ import annotations

from typing import Any

from ..engine.isotime import iso_from_ms
from ..engine.session import Run, Session, StepOutcome, new_session

#: 2026-09-20T10:00:00.000Z, the engine spec's T0.
T0_MS = 1_789_898_400_000
T0 = iso_from_ms(T0_MS)


def run_blob(
    flow_id: str = "triagem",
    *,
    trigger_key: str = "m1",
    session_id: str = "s1",
    status: str = "asking",
    step_id: str | None = "quem",
    **overrides: Any,
) -> Run:
    """A live run of ``flow_id`` started by message ``trigger_key``, in ``status``.

    A ``waiting`` run gets a timer ``waiting`` entry and a ``suspended`` one a ``suspendedAt``,
    as the engine would write them.
    """
    run_id = f"{flow_id}#{trigger_key}"
    run: dict[str, Any] = {
        "id": run_id,
        "flowId": flow_id,
        "anchor": session_id,
        "dedupeKey": f"{flow_id}:{session_id}:",
        "stepId": step_id,
        "status": status,
        "trigger": {"kind": "message", "key": trigger_key},
        "hop": 0,
        "startedAt": T0,
        "asked": {},
        "visits": {step_id: 1} if step_id else {},
        "outcomes": [],
    }
    if status == "waiting":
        due = T0_MS + 86_400_000
        run["waiting"] = {
            "kind": "timer",
            "key": f"{run_id}:{step_id}:{due}",
            "until": iso_from_ms(due),
            "setAt": T0,
        }
    elif status == "suspended":
        run["suspendedAt"] = T0
    run.update(overrides)
    return run  # type: ignore[return-value]


def outcome_line(run: Run, index: int) -> StepOutcome:
    """One realistic outcome line of ``run`` (the engine keeps the last 50 per run)."""
    step = run["stepId"] or "start"
    return {
        "runId": run["id"],
        "stepId": step,
        "key": f"{run['id']}:{step}:{index + 1}",
        "kind": "collect",
        "status": "ok",
        "at": iso_from_ms(T0_MS + index * 60_000),
    }


def session_blob(
    session_id: str = "s1", *, runs: list[Run] | None = None, **overrides: Any
) -> Session:
    """A valid v4 session (version 0 unless overridden) holding ``runs`` with their claims."""
    session = new_session(session_id)
    session["runs"] = list(runs or [])
    session["claims"] = {run["dedupeKey"]: {"at": run["startedAt"]} for run in session["runs"]}
    session.update(overrides)  # type: ignore[typeddict-item]
    return session


def realistic_session(session_id: str = "s1") -> Session:
    """A ~20 KB session as a busy conversation leaves it.

    Three runs (asking, waiting, suspended) with 50 outcome lines each, 50 remembered message
    ids, 20 claims and a little collected data: the benchmark blob of the store and engine
    issues.
    """
    runs = [
        run_blob("triagem", trigger_key="m1", session_id=session_id, status="asking"),
        run_blob(
            "retomar",
            trigger_key="1789898400000",
            session_id=session_id,
            status="waiting",
            step_id="w1",
        ),
        run_blob(
            "funil",
            trigger_key="m7",
            session_id=session_id,
            status="suspended",
            step_id="orcamento",
        ),
    ]
    for run in runs:
        run["outcomes"] = [outcome_line(run, index) for index in range(50)]
        run["asked"] = {"nome": 1, "empresa": 2}
    session = session_blob(session_id, runs=runs)
    for index in range(20 - len(runs)):
        session["claims"][f"promo:{session_id}:ev{index}"] = {"at": iso_from_ms(T0_MS + index)}
    session["inputs"] = [f"wamid.HBgMNTUxMTk5OTk5OTk5FQIAEhgg{index:04d}" for index in range(50)]
    session["data"] = {
        "nome": "Ana Souza",
        "empresa": "Padaria Central",
        "orcamento": 1500.5,
        "email": "ana@example.com",
        "aceitaContato": True,
    }
    session["lastUserAt"] = iso_from_ms(T0_MS + 49 * 60_000)
    session["lastAssistantAt"] = iso_from_ms(T0_MS + 49 * 60_000 + 1200)
    session["metadata"] = {"channel": "whatsapp", "locale": "pt-BR"}
    return session
