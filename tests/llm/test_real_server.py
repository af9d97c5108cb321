"""The provider against a real llama-cpp-python server: every scenario of
tests/providers/llm_scenarios.py recorded as a cassette (with its figures printed for
docs/providers.md), and the failures only a real process shows: a server paused, killed
mid-stream, or gone."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

import pytest

from tests.providers import cassettes
from tests.providers.llm_scenarios import SCENARIOS, model_options
from warlock_sessions.engine import ProviderError
from warlock_sessions.providers import OpenAICompatibleModel

from .conftest import LlamaServer, start_llama

MODEL_NAME = "gemma-3-270m"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_against_the_real_server_is_recorded(
    name: str, request: pytest.FixtureRequest
) -> None:
    scenario, options = SCENARIOS[name]
    server: LlamaServer = request.getfixturevalue(
        "llama_tools" if options.get("tools") else "llama"
    )
    recorder = cassettes.Recorder()
    model = OpenAICompatibleModel(
        server.url, options.get("model", MODEL_NAME), transport=recorder, timeout=60,
        deadline=120, **model_options(options),
    )  # fmt: skip
    started = time.monotonic()
    outcome = scenario(model)
    elapsed = time.monotonic() - started
    figures = {
        "scenario": name,
        "seconds": round(elapsed, 1),
        "calls": len(recorder.exchanges),
        "seconds_per_call": round(elapsed / max(1, len(recorder.exchanges)), 1),
        "tokens": _tokens(recorder.exchanges),
        "outcome": outcome,
    }
    print("\nLLM " + json.dumps(figures, ensure_ascii=False))
    _check(name, outcome)
    # Kept only once it holds: a server that crashed must not overwrite a good recording.
    cassettes.save(name, recorder.exchanges, outcome)


def _check(name: str, outcome: dict[str, Any]) -> None:
    """What must hold whatever the small model says."""
    if name.startswith("first_turn"):
        [turn] = outcome["turns"]
        # A reply the model rambled past max_tokens is a failure, not retried, never junk.
        assert turn.get("stored_values_fit") or "cut off at max_tokens" in turn["error"]
        assert outcome["structured_output"] == name.removeprefix("first_turn_")
    elif name == "summary":
        assert "summary" in outcome or outcome["error"] == "provider-invalid"  # cut at max
    elif name == "unknown_model":  # llama-cpp-python serves its one model whatever the name
        assert outcome == {"answered": True} or "cut off at max_tokens" in outcome["error"]
    elif name == "booking_conversation":
        turns = outcome["turns"]
        assert all(t.get("stored_values_fit") or "max_tokens" in t["error"] for t in turns)
        # Nothing the customer did not say is kept: the first message names no one.
        assert turns[0].get("data", {}) == {}
        assert outcome["structured_output"] == "json_object"  # json_schema refused, remembered
        assert turns[-1].get("language", "pt") == "pt"
    elif name == "tool_trip":
        # The call came by its own name (it was glued from every delta), and the second trip
        # was accepted (it was a 500 for its null content); what the model says there is its.
        assert [called for called, _ in outcome["calls"]] == ["calculate"]
        assert "second" in outcome
        assert outcome["second"] not in ("provider-unavailable", "provider-invalid")
    elif name == "streamed_reply":
        assert outcome["pieces"] > 1  # shown as it came
        if "error" in outcome:  # cut off at max_tokens: a failure, not retried
            assert (outcome["error"], outcome["retryable"]) == ("provider-invalid", False)
        else:
            assert outcome["pieces_join_to_the_text"]
    elif name == "context_overflow":
        assert outcome == {"code": "provider-context", "retryable": False}


def _tokens(exchanges: list[dict[str, Any]]) -> dict[str, int]:
    """Tokens the server reported (llama-cpp-python reports usage only unstreamed)."""
    total = {"prompt": 0, "completion": 0}
    for exchange in exchanges:
        try:
            usage = json.loads(exchange["body"]).get("usage") or {}
        except ValueError:
            continue
        total["prompt"] += usage.get("prompt_tokens") or 0
        total["completion"] += usage.get("completion_tokens") or 0
    return total


def test_a_paused_server_is_a_retryable_timeout_not_a_hang() -> None:
    server = start_llama()
    try:
        os.kill(server.process.pid, signal.SIGSTOP)
        model = OpenAICompatibleModel(server.url, MODEL_NAME, timeout=2, deadline=10)
        started = time.monotonic()
        with pytest.raises(ProviderError) as raised:
            model.chat([{"role": "user", "content": "hi"}], [], None)
        assert time.monotonic() - started < 6
        assert (raised.value.code, raised.value.retryable) == ("provider-unavailable", True)
    finally:
        server.stop()


def test_a_server_killed_mid_stream_is_a_retryable_failure() -> None:
    server = start_llama()
    model = OpenAICompatibleModel(server.url, MODEL_NAME, timeout=30, max_tokens=400)
    first_piece = threading.Event()

    def killed_at_the_first_piece(text: str) -> None:
        if not first_piece.is_set():
            first_piece.set()
            server.process.kill()

    try:
        with pytest.raises(ProviderError) as raised:
            model.chat(
                [
                    {"role": "system", "content": "You are a storyteller."},
                    {"role": "user", "content": "Tell me a long story about a lighthouse."},
                ],
                [],
                killed_at_the_first_piece,
            )
        assert first_piece.is_set()
        assert (raised.value.code, raised.value.retryable) == ("provider-unavailable", True)
    finally:
        server.stop()
    with pytest.raises(ProviderError, match="could not connect") as gone:
        model.chat([{"role": "user", "content": "hi"}], [], None)
    assert gone.value.retryable
