"""A session with people (engine.handover): handed over by an interrupt, a step or server code;
the bot silent while people have it (messages recorded, wakes held, events refused); staff
take it and answer; handed back, the asker asks again and a handover step goes on. Pure
turns on the offline RuleModel and a fake clock, so every key repeats on replay."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.engine import Agent, FakeClock, Session, TurnResult, turn
from warlock_sessions.errors import FlowConfigurationError, InvalidInputError
from warlock_sessions.providers import RuleModel

FIELDS = {"name": {"type": "string", "format": "name", "ask": "What's your name?"}}


def agent_with(interrupt: dict[str, Any] | None = None, steps: list[Any] | None = None) -> Agent:
    return Agent(
        [
            {
                "id": "booking",
                "on": [{"message": ["book"]}],
                "interrupts": [
                    interrupt
                    or {"when": "talk to a person", "say": "Getting a colleague.", "handover": True}
                ],
                "steps": steps
                or [
                    {"id": "ask", "collect": ["name"]},
                    {"id": "bye", "say": "Booked, {{data.name|friend}}."},
                ],
            },
            {
                "id": "nudge",
                "on": [{"silence": "2m"}],
                "steps": [{"id": "n", "say": "Still there?"}],
            },
            {
                "id": "offer",
                "on": [{"event": "discount"}],
                "steps": [{"id": "o", "say": "10% off"}],
            },
        ],
        fields=FIELDS,
        model=RuleModel(),
        name="booking",
    )


class Chat:
    def __init__(self, agent: Agent) -> None:
        self.agent, self.clock, self.session = agent, FakeClock(), None
        self.seen = 0

    def __call__(self, **input: Any) -> TurnResult:
        self.clock.advance(1000)
        result = turn(
            agent=self.agent,
            session_id="s1",
            session=self.session,
            clock=self.clock,
            **input,
        )
        if result.changed:
            saved: Session = dict(result.session)  # type: ignore[assignment]
            saved["version"] += 1
            self.session = saved
        return result

    def say(self, text: str) -> TurnResult:
        self.seen += 1
        return self(message={"text": text, "id": f"m{self.seen}"})

    @property
    def handover(self) -> Any:
        assert self.session is not None
        return self.session["metadata"].get("handover")


def codes(result: TurnResult) -> list[str]:
    return [line["code"] for line in result.outcomes if line.get("code")]


def texts(result: TurnResult) -> list[str]:
    return [message["text"] for message in result.messages]


def test_an_interrupt_hands_over_and_the_run_waits_where_it_was() -> None:
    chat = Chat(agent_with())
    assert texts(chat.say("book")) == ["What's your name?"]
    result = chat.say("talk to a person")
    assert texts(result) == ["Getting a colleague."]
    assert codes(result) == ["interrupted", "handed-over"]
    assert chat.handover == {"status": "waiting", "since": "2026-09-20T10:00:02.000Z"}
    assert chat.session is not None
    [run] = chat.session["runs"]
    assert (run["stepId"], run["status"]) == ("ask", "asking")
    assert result.schedule == []  # no reminder while people have it


def test_while_with_people_the_bot_says_nothing_and_holds_what_would_speak() -> None:
    chat = Chat(agent_with())
    chat.say("book")
    chat.say("talk to a person")
    held = chat.say("Maria Silva")
    assert (texts(held), codes(held), held.changed) == ([], ["with-people"], True)
    assert held.llm_calls == 0
    assert chat.session is not None and chat.session["data"] == {}  # nobody read it
    assert chat.session["lastUserAt"] == "2026-09-20T10:00:03.000Z"
    refused = chat(event={"name": "discount", "key": "d1"})
    assert (refused.changed, refused.code) == (False, "with-people")
    wake = chat(wake="some-timer")
    assert (codes(wake), texts(wake)) == (["wake-held"], [])
    chat(wake="some-timer")  # fired twice, held once
    assert chat.handover["held"] == ["some-timer"]


def test_staff_take_answer_and_hand_back_and_the_asker_asks_again() -> None:
    chat = Chat(agent_with())
    chat.say("book")
    chat.say("talk to a person")
    taken = chat(handover={"action": "take", "key": "t1", "by": "Ana"})
    assert codes(taken) == ["handover-taken"]
    assert chat.handover["status"] == "taken" and chat.handover["by"] == "Ana"
    again = chat(handover={"action": "take", "key": "t2", "by": "Ana"})
    assert again.changed is False  # already hers: nothing to record
    reply = chat(handover={"action": "reply", "key": "r1", "by": "Ana", "text": "Hi, Ana here."})
    assert reply.messages == [
        {
            "text": "Hi, Ana here.",
            "kind": "verbatim",
            "by": "Ana",
            "afterMs": 0,
            "key": "handover:r1",
        }
    ]
    chat(wake="timer-1")
    back = chat(handover={"action": "release", "key": "h1", "by": "Ana"})
    assert codes(back)[0] == "handed-back"
    assert texts(back) == ["What's your name?"]  # where it was
    assert {"key": "timer-1", "at": "2026-09-20T10:00:07.000Z"} in back.schedule
    assert chat.handover is None
    assert texts(chat.say("Maria Silva")) == ["Booked, Maria Silva."]
    twice = chat(handover={"action": "release", "key": "h2"})
    assert (twice.changed, twice.code) == (False, "not-handed-over")


def test_a_reply_or_take_on_a_session_the_bot_has_hands_it_over_first() -> None:
    chat = Chat(agent_with())
    chat.say("book")
    reply = chat(handover={"action": "reply", "key": "r1", "by": "Rui", "text": "I'll help."})
    assert codes(reply) == ["handed-over", "handover-taken"]
    assert texts(reply) == ["I'll help."]
    assert texts(chat.say("thanks")) == []


def test_server_code_requests_a_person_with_a_reason() -> None:
    chat = Chat(agent_with())
    chat.say("book")
    result = chat(handover={"action": "request", "key": "q1", "reason": "VIP"})
    assert codes(result) == ["handed-over"]
    assert chat.handover["reason"] == "VIP"
    assert chat(handover={"action": "request", "key": "q2"}).changed is False


def test_a_handover_step_waits_there_and_goes_on_when_handed_back() -> None:
    steps = [
        {"id": "hi", "say": "Let me find someone."},
        {"id": "person", "handover": "a booking by phone"},
        {"id": "after", "say": "Back with the bot."},
    ]
    chat = Chat(agent_with(steps=steps))
    first = chat.say("book")
    assert texts(first) == ["Let me find someone."]
    assert chat.handover["reason"] == "a booking by phone"
    back = chat(handover={"action": "release", "key": "h1"})
    assert texts(back) == ["Back with the bot."]


def test_a_handover_needs_no_session_for_nothing() -> None:
    chat = Chat(agent_with())
    result = chat(handover={"action": "take", "key": "t1", "by": "Ana"})
    assert (result.changed, result.code) == (False, "no-session")


def test_a_replay_mints_the_same_keys() -> None:
    first, second = Chat(agent_with()), Chat(agent_with())
    for chat in (first, second):
        chat.say("book")
        chat.say("talk to a person")
    input = {"action": "reply", "key": "r1", "by": "Ana", "text": "Hello"}
    assert first(handover=input).as_dict() == second(handover=input).as_dict()


@pytest.mark.parametrize(
    ("handover", "field"),
    [
        ({"action": "grab", "key": "k"}, "handover.action"),
        ({"action": "take", "key": ""}, "handover.key"),
        ({"action": "take", "key": "k"}, "handover.by"),
        ({"action": "reply", "key": "k", "by": "Ana"}, "handover.text"),
        ({"action": "reply", "key": "k", "by": "Ana", "text": "  "}, "handover.text"),
        ({"action": "release", "key": "k", "text": "hi"}, "handover.text"),
    ],
)
def test_a_bad_handover_input_is_named(handover: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError, match=field.replace(".", r"\.")):
        turn(agent=agent_with(), session_id="s1", handover=handover)


@pytest.mark.parametrize(
    ("interrupt", "steps", "path"),
    [
        ({"when": "human", "handover": "  "}, None, "interrupts[0].handover"),
        (None, [{"id": "p", "handover": 3}], "steps[0].handover"),
        (None, [{"id": "p", "handover": True, "say": "x"}], "steps[0]"),
        (None, [{"id": "p", "handover": True, "ask": "x"}], "steps[0].ask: unknown key"),
    ],
)
def test_a_bad_handover_key_is_refused_with_its_path(
    interrupt: dict[str, Any] | None, steps: list[Any] | None, path: str
) -> None:
    with pytest.raises(FlowConfigurationError, match=path.replace("[", r"\[").replace("]", r"\]")):
        agent_with(interrupt=interrupt, steps=steps)


def test_asking_again_after_a_hand_back_uses_up_no_ask() -> None:
    chat = Chat(agent_with())
    chat.say("book")
    for round in range(4):  # more hand-backs than maxAsks
        chat(handover={"action": "request", "key": f"q{round}"})
        assert texts(chat(handover={"action": "release", "key": f"h{round}"})) == [
            "What's your name?"
        ]
    assert texts(chat.say("Maria Silva")) == ["Booked, Maria Silva."]


@pytest.mark.parametrize(
    "record",
    [{}, {"status": "done"}, {"status": {"a": 1}}, {"status": "waiting", "held": "abc"}, 5],
)
def test_a_handover_record_of_another_shape_is_none(record: Any) -> None:
    chat = Chat(agent_with())
    chat.say("book")
    assert chat.session is not None
    chat.session["metadata"]["handover"] = record  # a blob written by hand
    assert texts(chat.say("Maria Silva")) == ["Booked, Maria Silva."]  # the bot has it
    chat.say("book")
    reply = chat(handover={"action": "reply", "key": "r1", "by": "Ana", "text": "Hi"})
    assert codes(reply) == ["handed-over", "handover-taken"]  # a proper record replaces it
    assert chat.handover["status"] == "taken"


def test_a_reply_given_while_people_had_it_answers_a_reply_wait_at_the_hand_back() -> None:
    steps = [
        {"id": "hi", "say": "Will you come?"},
        {"id": "w", "wait": "1d", "else": "yes"},
        {"id": "no", "say": "No answer."},
        {"id": "yes", "say": "Thanks for replying."},
    ]
    chat = Chat(agent_with(steps=steps))
    chat.say("book")
    chat(handover={"action": "request", "key": "q1"})
    chat.say("I will")
    assert texts(chat(handover={"action": "release", "key": "h1"})) == ["Thanks for replying."]


PERSON = {
    "when": "talk to a person|falar com atendente",
    "say": {"en": "Getting a colleague.", "pt": "Vou chamar um colega."},
    "handover": "asked for a person",
}


def agent_asking_anywhere() -> Agent:
    """A greeting, a booking and the agent's own "talk to a person", heard in any state."""
    named = {"name": {**FIELDS["name"], "label": {"en": "name", "pt": "nome"}}}
    return Agent(
        [
            {"id": "hello", "on": [{"message": []}], "steps": [{"id": "hi", "say": "Hello!"}]},
            {
                "id": "booking",
                "on": [{"message": ["book", "marcar"]}],
                "interrupts": [{"when": "cancel|cancelar", "say": "Cancelled."}],
                "steps": [
                    {"id": "ask", "collect": ["name"]},
                    {"id": "bye", "say": "Booked, {{data.name|friend}}."},
                ],
            },
        ],
        fields=named,
        model=RuleModel(),
        interrupts=[PERSON],
    )


@pytest.mark.parametrize(
    "before",
    [[], ["hi"], ["book", "Ana"], ["marcar", "cancelar"], ["book"]],
    ids=["first message", "after hi", "after a booking", "after a cancel", "inside a booking"],
)
def test_asking_for_a_person_hands_over_from_any_state(before: list[str]) -> None:
    chat = Chat(agent_asking_anywhere())
    for text in before:
        chat.say(text)
    runs = [
        (run["flowId"], run["stepId"], run["status"])
        for run in (chat.session or {"runs": []})["runs"]
    ]
    portuguese = "marcar" in before
    result = chat.say("falar com atendente" if portuguese else "I want to talk to a person")
    said = "Vou chamar um colega." if portuguese else "Getting a colleague."
    assert [message["text"] for message in result.messages] == [said]
    assert chat.handover["status"] == "waiting"
    assert chat.handover["reason"] == "asked for a person"
    # Every run stays where it was: the booking asks again when the chat is handed back.
    assert [(r["flowId"], r["stepId"], r["status"]) for r in result.session["runs"]] == runs
    assert [line["code"] for line in result.outcomes if "code" in line] == [
        "agent-interrupted",
        "handed-over",
    ]


def test_a_flows_own_interrupt_is_heard_before_the_agents() -> None:
    agent = agent_asking_anywhere()
    agent.flows["booking"].raw["interrupts"].append(  # type: ignore[attr-defined]
        {"when": "talk to a person", "say": "The booking's own.", "handover": True}
    )
    chat = Chat(agent)
    chat.say("book")
    result = chat.say("talk to a person")
    assert [message["text"] for message in result.messages] == ["The booking's own."]


def test_an_agent_interrupt_is_not_heard_while_silenced_nor_with_people() -> None:
    chat = Chat(agent_asking_anywhere())
    result = chat(message={"text": "talk to a person", "id": "quiet"}, silenced="staff typing")
    assert chat.handover is None
    assert not result.messages
    assert chat.say("talk to a person").messages
    result = chat.say("talk to a person")  # people have it: recorded, answered by nobody
    assert not result.messages


@pytest.mark.parametrize(
    ("interrupt", "path", "why"),
    [
        ({"when": "help", "say": "x", "then": "end"}, "interrupts[0].then", "moves no run"),
        ({"when": "help"}, "interrupts[0]", "a say, a handover or both"),
        ({"say": "x", "handover": True}, "interrupts[0].when", "what the user says"),
        ({"when": "help", "hnadover": True}, "interrupts[0].hnadover", "did you mean 'handover'"),
    ],
)
def test_a_bad_agent_interrupt_is_named(interrupt: dict[str, Any], path: str, why: str) -> None:
    with pytest.raises(FlowConfigurationError) as raised:
        Agent([], model=RuleModel(), interrupts=[interrupt])
    assert raised.value.path == path
    assert why in str(raised.value)


def test_an_agent_interrupt_s_sentence_reading_a_field_needs_a_fallback() -> None:
    """Heard in any state, the field may never have been asked."""
    said = {"when": "talk to a person", "say": "OK {{data.name}}.", "handover": True}
    flows = [
        {"id": "f", "on": [{"message": ["book"]}], "steps": [{"id": "s", "collect": ["name"]}]}
    ]
    with pytest.raises(FlowConfigurationError) as caught:
        Agent(flows, fields=FIELDS, model=RuleModel(), interrupts=[said])
    assert caught.value.path == "interrupts[0].say"
    fallback = {**said, "say": "OK {{data.name|}}."}
    Agent(flows, fields=FIELDS, model=RuleModel(), interrupts=[fallback])
