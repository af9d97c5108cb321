"""Wakes a turn no longer wants are retired: a run's timer or retry once the run ends, and a
silence the user broke or the assistant did not re-arm; and the ``running`` predicate, with
which a silence flow fires only while some run waits on the user."""

from __future__ import annotations

from typing import Any

from example_project.demo.agents import booking_agent
from tests.engine.test_scenarios import HOUR, T0_MS, Host, S, U, payment_agent
from warlock_sessions.engine import Agent, FakeClock, turn
from warlock_sessions.engine.predicates import PredicateContext, evaluate
from warlock_sessions.testing import Dialogue


def test_an_event_that_arrives_retires_the_wait_timeout() -> None:
    host = Host(payment_agent())
    parked = host.turn(start={"flow": "pagamento", "key": "p1"}, session=None)
    (timeout,) = [wake["key"] for wake in parked.schedule]
    arrived = host.at(HOUR).turn(event={"name": "pago", "key": "e1"})
    assert timeout in arrived.retired


def test_a_reply_retires_the_timer_of_a_wait_with_else() -> None:
    agent = Agent(
        [
            {
                "id": "follow",
                "on": [{"message": ["start"]}],
                "steps": [
                    {"id": "w", "wait": "1h", "else": "thanks"},
                    {"id": "late", "say": "No reply."},
                    {"id": "thanks", "say": "Thanks for replying!"},
                ],
            }
        ]
    )
    host = Host(agent)
    parked = host.turn(
        message={"text": "start", "id": "m1"}, understand=(U(flows={"follow": 90}),), speak=(S(),)
    )
    (timer,) = [wake["key"] for wake in parked.schedule]
    replied = host.at(60_000).turn(message={"text": "here", "id": "m2"})
    assert "Thanks for replying!" in [message["text"] for message in replied.messages]
    assert timer in replied.retired


def test_a_fired_timer_is_not_retired_by_its_own_turn() -> None:
    agent = Agent(
        [
            {
                "id": "w",
                "on": [{"message": []}],
                "steps": [{"id": "wait", "wait": "1h"}, {"id": "s", "say": "done"}],
            }
        ]
    )
    host = Host(agent)
    parked = host.turn(message={"text": "hi", "id": "m1"}, speak=(S(),))
    (timer,) = [wake["key"] for wake in parked.schedule]
    fired = host.at(HOUR).turn(wake=timer)
    assert [run["reason"] for run in fired.ended] == ["end"]
    assert timer not in fired.retired


def silence_agent(condition: Any = None) -> Agent:
    trigger: dict[str, Any] = {"silence": "1h"}
    if condition is not None:
        trigger["if"] = condition
    return Agent(
        [
            {"id": "chat", "on": [{"message": []}], "steps": [{"id": "q", "prompt": "Hi"}]},
            {"id": "nudge", "on": [trigger], "steps": [{"id": "s", "say": "Still there?"}]},
        ],
    )


def test_a_silence_the_user_breaks_is_retired() -> None:
    host = Host(silence_agent())
    first = host.turn(message={"text": "hello", "id": "m1"}, speak=(S(),))
    (armed,) = [wake["key"] for wake in first.schedule]
    quiet = Host(silence_agent())
    quiet.store = host.store
    quiet.clock = host.clock
    # The user writes and the assistant stays silent (no speaker): the old silence is over.
    loaded = host.load()
    wrote = turn(
        agent=silence_agent(),
        session_id="s1",
        session=loaded,
        message={"text": "...", "id": "m2"},
        clock=FakeClock(T0_MS + 60_000),
        silenced="busy",
    )
    assert wrote.retired == [armed]


def test_speaking_again_replaces_the_silence_instead_of_retiring_it() -> None:
    host = Host(silence_agent())
    first = host.turn(message={"text": "hello", "id": "m1"}, speak=(S(),))
    (armed,) = [wake["key"] for wake in first.schedule]
    again = host.at(60_000).turn(message={"text": "more", "id": "m2"}, speak=(S("idle"),))
    assert [wake["replaces"] for wake in again.schedule] == [armed]
    assert again.retired == []


def test_running_holds_only_while_another_run_of_the_flows_is_live() -> None:
    def ctx(*runs: dict[str, Any], judged: Any = None) -> PredicateContext:
        return PredicateContext(
            context=None, data={}, input=None, run=judged, silenced=None, now=None, runs=runs
        )  # type: ignore[arg-type]

    booking = {"id": "booking#m1", "flowId": "booking"}
    nudge = {"id": "nudge#1", "flowId": "nudge"}
    assert evaluate({"running": ["booking"]}, ctx(booking, nudge, judged=nudge), {})
    assert not evaluate({"running": ["booking"]}, ctx(nudge, judged=nudge), {})
    assert evaluate({"running": False}, ctx(nudge, judged=nudge), {})
    assert evaluate({"running": True}, ctx(booking), {})


def test_the_demo_reminds_during_a_booking_and_not_after_it() -> None:
    dialogue = Dialogue(booking_agent(), session_id="demo", clock=FakeClock(T0_MS))
    dialogue.say("hi")
    dialogue.say("book")
    assert dialogue.last is not None
    assert [wake["key"].split(":")[1] for wake in dialogue.last.schedule] == ["reminder"]
    for text in ["Ana Souza", "ana@example.com", "2030-05-02 at 10am"]:
        dialogue.say(text)
    assert "Booked!" in dialogue.say("yes")[-1]
    last = dialogue.last
    assert last.schedule == []  # nobody is left to remind
    assert len(last.retired) == 1 and last.retired[0].startswith("silence:reminder:demo:")
    assert dialogue.wakes.size == 0
