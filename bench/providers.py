"""Provider benchmark: RuleModel understand + speak for one message on the 3-flow booking agent,
against one raw-psycopg load+save of a ~24 KB blob, in the same run.

The requests are the real ones a turn builds mid-conversation (captured once); the benchmark
times the model answering them. Target (issue 4): <= 0.1x the raw load+save.
"""

from __future__ import annotations

import argparse
from typing import Any

import psycopg

from bench.common import bench_database_url, measure, raw_jsonb_load_save, report, verdict
from example_project.demo.agents import booking_agent
from warlock_sessions.engine import FakeClock, turn
from warlock_sessions.providers import RuleModel, text
from warlock_sessions.testing import realistic_session


class Recording(RuleModel):
    """A RuleModel that keeps the last request each port received."""

    def understand(self, request: Any) -> Any:
        self.understand_request = request
        return super().understand(request)

    def speak(self, request: Any) -> Any:
        self.speak_request = request
        return super().speak(request)


def captured_requests() -> tuple[Any, Any]:
    agent = booking_agent()
    clock = FakeClock("2026-09-20T10:00:00.000Z")
    model = Recording()
    first = turn(
        agent=agent,
        session_id="b",
        message={"text": "I want to book", "id": "m1"},
        clock=clock,
        model=model,
    )
    clock.advance("30s")
    turn(
        agent=agent,
        session_id="b",
        session=first.session,
        clock=clock,
        model=model,
        message={"text": "My name is Ana Souza, mail me at ana@example.com", "id": "m2"},
    )
    return model.understand_request, model.speak_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    understand_request, speak_request = captured_requests()
    model = RuleModel()

    def understand_and_speak() -> None:
        model.understand(understand_request)
        model.speak(speak_request)

    def with_cold_caches() -> None:
        """As for a message whose every word is new to the process (the tokens and word
        matches are cached, and a conversation's words repeat)."""
        for cached in (text.tokens, text._same, text._by_ends):
            cached.cache_clear()
        understand_and_speak()

    with psycopg.connect(bench_database_url(), autocommit=True) as raw:
        samples = measure(
            {
                "raw-psycopg-load+save": raw_jsonb_load_save(raw, realistic_session("bench")),
                "RuleModel understand+speak": understand_and_speak,
                "RuleModel, cold caches": with_cold_caches,
            },
            iterations=args.iterations,
        )
    ratios = report(samples, baseline="raw-psycopg-load+save")
    print(verdict("RuleModel / raw load+save", ratios["RuleModel understand+speak"], 0.1))
    print(f"(cold caches: {ratios['RuleModel, cold caches']:.2f}x, not a target)")


if __name__ == "__main__":
    main()
