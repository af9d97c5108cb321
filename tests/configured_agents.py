"""Agents referenced by import string from test settings."""

from warlock_sessions.engine import Agent
from warlock_sessions.providers import RuleModel

FLOWS = [{"id": "oi", "on": [{"message": []}], "steps": [{"id": "s", "say": "Oi!"}]}]

ready_agent = Agent(FLOWS, model=RuleModel())


def build_agent() -> Agent:
    return Agent(FLOWS)


def broken_agent() -> Agent:
    return Agent([{"id": "x", "steps": [{"id": "w", "wait": "2x"}]}])


not_an_agent = {"flows": FLOWS}
