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


def booking_without_a_model() -> Agent:
    """The demo's booking agent, whose messages need understanding, with no model."""
    from example_project.demo.agents import booking_agent

    agent = booking_agent()
    agent.model = None
    return agent
