"""Agent.may_block: whether a turn may wait on I/O, so an async host keeps it off the loop."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.engine import Agent, FakeModel
from warlock_sessions.providers import OpenAICompatibleModel, RuleModel


class ModelSayingNothing:
    """A model that does not say whether it blocks."""

    def understand(self, request: Any) -> Any: ...

    def speak(self, request: Any) -> Any: ...


def test_an_agent_of_an_offline_model_and_data_alone_cannot_block() -> None:
    assert not Agent([], model=RuleModel()).may_block()
    assert not Agent([], model=FakeModel()).may_block()


@pytest.mark.parametrize(
    "own_code",
    [
        {"actions": {"anotar": lambda params, ctx: None}},
        {"conditions": {"vip": lambda ctx, arg: True}},
        {"business_hours": lambda moment, context: moment},
        {"should_retry": lambda deferral: False},
    ],
    ids=["actions", "conditions", "business_hours", "should_retry"],
)
def test_an_agent_calling_code_of_its_own_may_block(own_code: dict[str, Any]) -> None:
    assert Agent([], model=RuleModel(), **own_code).may_block()


def test_a_model_that_does_not_say_or_reaches_the_network_may_block() -> None:
    remote = OpenAICompatibleModel(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    assert Agent([], model=ModelSayingNothing()).may_block()
    assert Agent([], model=remote).may_block()
    assert Agent([]).may_block()  # no model yet: the turn fails wherever it runs


def test_the_model_a_host_passes_decides_over_the_agents_own() -> None:
    assert Agent([], model=ModelSayingNothing()).may_block(RuleModel()) is False
    assert Agent([], model=RuleModel()).may_block(ModelSayingNothing()) is True
