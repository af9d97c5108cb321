"""docs/agents.md lists exactly the keys the loader takes, part by part: the page cannot
drift from the code that refuses every other key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from warlock_sessions.engine import flows

PAGE = (Path(__file__).parent.parent / "docs" / "agents.md").read_text()


def section(title: str) -> str:
    return PAGE.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def first_column_keys(text: str) -> set[str]:
    keys: set[str] = set()
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].startswith("`"):
            keys |= set(re.findall(r"`([A-Za-z]+)`", cells[0]))
    return keys


def test_fields_and_flows() -> None:
    assert first_column_keys(section("Field")) == flows.FIELD_KEYS
    assert first_column_keys(section("Flow")) == flows.FLOW_KEYS


@pytest.mark.parametrize("kind", sorted(flows.STEP_KEYS))
def test_each_kind_of_step(kind: str) -> None:
    listed = {"id", "then"}  # every step's, said above the table
    for line in section("Step").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == kind:
            listed |= set(re.findall(r"`([A-Za-z]+)`", cells[1]))
    assert listed == flows.STEP_KEYS[kind]


def test_the_smaller_shapes() -> None:
    rows = {
        cells[0]: set(re.findall(r"`([A-Za-z]+)`", cells[1]))
        for line in section("Smaller shapes").splitlines()
        if line.startswith("| ") and not line.startswith("| part")
        for cells in [[cell.strip() for cell in line.strip().strip("|").split("|")]]
    }
    assert rows["a talk branch"] == flows.TALK_BRANCH_KEYS
    assert rows["a wait branch"] == flows.WAIT_BRANCH_KEYS
    assert rows["an event wait"] == flows.EVENT_WAIT_KEYS
    assert rows["a move to a step"] == flows.NEXT_KEYS["step"]
    assert rows["a move to a flow"] == flows.NEXT_KEYS["flow"]


def test_triggers_interrupts_and_predicates() -> None:
    from warlock_sessions.engine.predicates import BUILT_IN

    trigger = set(flows.TRIGGER_KINDS) | {"if", "repeat", "after", "businessHours", "extract"}
    assert first_column_keys(section("Trigger")) == trigger
    shapes = section("Smaller shapes")
    interrupt = next(line for line in shapes.splitlines() if line.startswith("| an interrupt"))
    assert set(re.findall(r"`([A-Za-z]+)`", interrupt)) == flows.INTERRUPT_KEYS
    predicate = next(line for line in shapes.splitlines() if line.startswith("| a predicate"))
    assert set(re.findall(r"`([A-Za-z]+)`", predicate)) == set(BUILT_IN) | {"conditions"}
