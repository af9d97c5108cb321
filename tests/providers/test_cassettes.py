"""The provider on real servers' recorded answers (tests/providers/cassettes, made by
``make test-llm``): served again from 127.0.0.1, each scenario must send the same requests and
make the same of the answers as it did against llama-cpp-python."""

from __future__ import annotations

import pytest

from warlock_sessions.providers import OpenAICompatibleModel

from . import cassettes
from .llm_scenarios import SCENARIOS, model_options
from .openai_server import OpenAIServer

NAMES = cassettes.names()


def test_every_scenario_has_its_cassette() -> None:
    assert sorted(SCENARIOS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_a_recorded_exchange_replays_to_the_same_outcome(name: str, server: OpenAIServer) -> None:
    cassette = cassettes.load(name)
    cassettes.replay(server.script, cassette)
    scenario, options = SCENARIOS[name]
    model = OpenAICompatibleModel(
        server.url,
        options.get("model", "gemma-3-270m"),
        timeout=10,
        deadline=60,
        **model_options(options),
    )
    assert scenario(model) == cassette["outcome"]
    sent = [request["body"] for request in server.script.requests]
    assert sent == [exchange["request"] for exchange in cassette["exchanges"]]
