"""The signatures reproduce upstream's golden vectors exactly (FNV-1a over UTF-16 code units)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from warlock_sessions.workflows import (
    Step,
    agent_signature,
    fnv1a32,
    supervisor_signature,
    workflow_signature,
)


@dataclass
class Named:
    name: str

    def execute(self, input: Any, *, history: list[Any] | None = None) -> Any:
        return input


def run(ctx: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("text", "digest"), [("", "811c9dc5"), ("a", "e40c292c"), ("é😀", "44cc4da1")]
)
def test_fnv1a32(text: str, digest: str) -> None:
    assert fnv1a32(text) == digest


@pytest.mark.parametrize(
    ("version", "steps", "digest"),
    [
        (None, [], "1f24a29c"),
        (None, [Step("a", run=run)], "82fd33fa"),
        (None, [Step("a", run=run), Step("b", run=run)], "61ec7463"),
        ("1", [Step("a", run=run), Step("b", run=run)], "be401e65"),
        (None, [Step("a", agent=Named("writer"))], "6c714b9c"),
        (
            None,
            [Step("fan", parallel=[Step("x", run=run), Step("y", agent=Named("z"))])],
            "e9eafb5d",
        ),
    ],
)
def test_workflow_signatures(version: str | None, steps: list[Step], digest: str) -> None:
    assert workflow_signature("wf", version, steps) == digest


def test_agent_and_supervisor_signatures() -> None:
    assert agent_signature("assistant", "openai", "gpt-4o", ["search", "calc"]) == "6b5221a3"
    intents = {
        "billing": {"d": "Billing questions", "u": {"t": "agent", "n": "billing"}},
        "triage": {"d": "Triage", "u": {"t": "callback"}},
    }
    assert (
        supervisor_signature(
            "support",
            intents,
            router="router",
            route_callback=False,
            evaluate=False,
            initial=None,
            max_iterations=None,
        )
        == "6b4af2b4"
    )


def test_an_empty_parallel_group_is_still_parallel() -> None:
    assert workflow_signature("wf", None, [Step("p", parallel=[])]) != workflow_signature(
        "wf", None, [Step("p")]
    )


class FaqBot:
    name = "faq-bot"
    description = "Answers FAQs"  # an agent's own description describes its intent

    def execute(self, input: Any, *, history: list[Any] | None = None) -> Any:
        return input


def support_intents() -> dict[str, Any]:
    from warlock_sessions.workflows import Intent

    # billing: a callback with no description (upstream leaves "d" out)
    return {"billing": run, "faq": FaqBot(), "triage": Intent(run, "Sorts requests")}


# Computed with upstream's algorithm (computeSignature, computeOrchestratorSignature) in Node:
# a callback's undefined description is left out, an omitted maxIterations is null, and an
# orchestrator with no historyWindow hashes {router: null, agents: null}.
UPSTREAM_VECTORS = {
    "orchestrator": "a2e95bd3",
    "orchestrator, iterate, max 5": "1db9988a",
    "supervisor": "33920780",
    "supervisor, max 3": "466b5714",
}


def test_supervisor_and_orchestrator_signatures_match_upstream_for_the_same_definition() -> None:
    """They hashed an omitted limit as 10, a callback with no description as "d": "" and an
    orchestrator's absent history window as a callback."""
    from warlock_sessions.workflows import Orchestrator, Supervisor

    def route(ctx: Any) -> None:
        return None

    computed = {
        "orchestrator": Orchestrator("support", support_intents(), route=route).signature,
        "orchestrator, iterate, max 5": Orchestrator(
            "support", support_intents(), route=route, iterate=True, max_iterations=5
        ).signature,
        "supervisor": Supervisor("support", route, support_intents()).signature,
        "supervisor, max 3": Supervisor(
            "support", route, support_intents(), max_iterations=3
        ).signature,
    }
    assert computed == UPSTREAM_VECTORS
    assert Supervisor("support", route, support_intents()).max_iterations == 10  # still runs 10


def test_runs_and_sessions_signed_by_0_2_go_on_without_force() -> None:
    """0.2 signed this definition "b1eb2cae" (supervisor) and "01f50dbd" (orchestrator)."""
    from warlock_sessions.checkpoints import MemoryCheckpointStore
    from warlock_sessions.snapshots import MemorySnapshotStore
    from warlock_sessions.workflows import Orchestrator, Supervisor
    from warlock_sessions.workflows.registry import drift_of

    store = MemorySnapshotStore()
    supervisor = Supervisor("support", lambda ctx: None, support_intents(), store=store)
    saved = {
        "runId": "old-run",
        "supervisorName": "support",
        "signature": "b1eb2cae",
        "input": None,
        "initialState": {},
        "iteration": -1,
        "snapshots": [],
        "status": "running",
        "startedAt": "2026-11-01T00:00:00.000Z",
    }
    store.save(saved)
    assert drift_of(saved) == "current"
    assert supervisor.resume("old-run").status == "completed"
    assert store.load("old-run")["signature"] == supervisor.signature  # type: ignore[index]
    assert drift_of({**saved, "signature": "0badc0de"}) == "drifted"

    checkpoints = MemoryCheckpointStore()
    orchestrator = Orchestrator(
        "support", support_intents(), route=lambda ctx: "billing", checkpoint_store=checkpoints
    )
    checkpoints.save(
        {
            "orchestrator_name": "support",
            "session_id": "s",
            "turn_index": 0,
            "state": {},
            "last_route": "billing",
            "signature": "01f50dbd",
            "version": None,
            "saved_at": "2026-11-01T00:00:00.000Z",
        }
    )
    turn = orchestrator.turn("s", "hi")
    assert (turn.turn_index, turn.status) == (1, "completed")
    assert checkpoints.load("support", "s")["signature"] == orchestrator.signature  # type: ignore[index]
