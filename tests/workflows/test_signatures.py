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
