"""Collecting data a business depends on (issue 42 §4), on the offline RuleModel as a user
of the tutorial's pizza bot meets it: only questions the user was shown count as asks, an
answer is never read into a field nobody asked for, and a ``required`` field is never given
up silently (asked again with a way out, or handed to a person)."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.engine import Agent
from warlock_sessions.errors import FlowConfigurationError
from warlock_sessions.providers import RuleModel
from warlock_sessions.testing import Dialogue

SIZE = {"type": "string", "enum": ["small", "large"], "ask": "Small or large?"}
FLAVOUR = {
    "type": "string",
    "enum": ["margherita", "pepperoni"],
    "ask": "Which flavour: margherita or pepperoni?",
}
ADDRESS = {"type": "string", "ask": "Where should we bring it?"}
PERSON = {"when": "talk to a person", "say": "Getting a colleague.", "handover": True}


def pizza(size: dict[str, Any] | None = None, *, person: bool = True, **step: Any) -> Dialogue:
    fields = {"size": size or SIZE, "flavour": FLAVOUR, "address": ADDRESS}
    flows = [
        {
            "id": "order",
            "on": [{"message": ["pizza"]}],
            "steps": [
                {"id": "choose", "collect": ["size", "flavour", "address"], **step},
                {
                    "id": "done",
                    "say": "{{data.size|A}} {{data.flavour|pizza}} to {{data.address|you}}.",
                },
            ],
        }
    ]
    interrupts = [PERSON] if person else []
    return Dialogue(Agent(flows, fields=fields, model=RuleModel(), interrupts=interrupts))


def test_only_the_question_shown_counts_and_each_field_gets_its_own_asks() -> None:
    chat = pizza()
    assert chat.say("pizza") == ["Small or large?"]
    assert chat.say("giant") == ["Please choose one of: small, large. Small or large?"]
    assert chat.say("large") == ["Which flavour: margherita or pepperoni?"]  # asked once only
    assert chat.runs[0]["asked"] == {"size": 2, "flavour": 1}
    # The flavour was never given up for the size's wrong answers: it has its three asks.
    assert chat.say("hawaiian") == [
        "Please choose one of: margherita, pepperoni. Which flavour: margherita or pepperoni?"
    ]
    assert "max-asks" not in chat.codes


def test_a_given_up_field_shifts_no_answer_into_the_next_one() -> None:
    chat = pizza()
    chat.say("pizza")
    for wrong in ("giant", "enormous"):
        chat.say(wrong)
    replies = chat.say("huge")  # the size's last ask: given up, the flavour asked
    assert replies == [
        "Sorry, I couldn't get your size, so let's go on without it.",
        "Which flavour: margherita or pepperoni?",
    ]
    # "enormous" again answers the flavour's question: refused there, never the address.
    assert chat.say("enormous") == [
        "Please choose one of: margherita, pepperoni. Which flavour: margherita or pepperoni?"
    ]
    assert "address" not in chat.data


def test_a_required_field_is_asked_again_with_the_offer_of_a_person_never_given_up() -> None:
    chat = pizza({**SIZE, "required": True})
    chat.say("pizza")
    chat.say("giant")
    chat.say("enormous")
    replies = chat.say("huge")
    assert replies == [
        "Please choose one of: small, large. Small or large?",
        "I need your size to go on: could you say it another way? Or ask to talk to a "
        "person, and a colleague will help.",
    ]
    assert chat.codes == ["required-missing"]
    assert chat.say("massive")[-1].startswith("I need your size to go on")  # and again
    assert chat.say("large") == ["Which flavour: margherita or pepperoni?"]
    assert chat.data == {"size": "large"}


def test_a_required_field_of_an_agent_with_no_person_offers_another_way_only() -> None:
    chat = pizza(
        {**SIZE, "required": True, "stuck": "I can't make a pizza of no size."}, person=False
    )
    chat.say("pizza")
    chat.say("giant")
    chat.say("enormous")
    assert chat.say("huge")[-1] == "I can't make a pizza of no size."
    bare = pizza({**SIZE, "required": True}, person=False)
    for said in ("pizza", "giant", "enormous"):
        bare.say(said)
    assert bare.say("huge")[-1] == "I need your size to go on: could you say it another way?"


def test_a_required_field_marked_handover_goes_to_a_person_and_is_asked_again_after() -> None:
    chat = pizza({**SIZE, "required": "handover"})
    for said in ("pizza", "giant", "enormous"):
        chat.say(said)
    assert chat.say("huge") == [
        "I'll get a colleague to help with your size: someone will answer here shortly."
    ]
    assert chat.codes == ["required-missing", "handed-over"]
    handover = chat.session["metadata"]["handover"]  # type: ignore[index]
    assert (handover["status"], handover["reason"]) == ("waiting", "could not get size")
    assert chat.step_of("order") == "choose"  # the run waits where it was
    released = chat.send(handover={"action": "release", "key": "r1", "by": "Rita"})
    assert released == ["Small or large?"]


@pytest.mark.parametrize("value", ["yes", 1, {"handover": True}])
def test_required_takes_true_false_or_handover(value: Any) -> None:
    with pytest.raises(FlowConfigurationError) as caught:
        pizza({**SIZE, "required": value})
    assert caught.value.path == "fields.size.required"


def test_a_sentence_may_read_a_required_field_without_a_fallback() -> None:
    """It is never given up: after its step it is known."""
    chat = pizza({**SIZE, "required": True})
    flow = chat.agent.flows["order"].raw
    Agent(
        [{**flow, "steps": [*flow["steps"][:1], {"id": "done", "say": "A {{data.size}} one."}]}],
        fields={"size": {**SIZE, "required": True}, "flavour": FLAVOUR, "address": ADDRESS},
        model=RuleModel(),
    )
    with pytest.raises(FlowConfigurationError, match="give it a fallback"):
        Agent(
            [{**flow, "steps": [*flow["steps"][:1], {"id": "done", "say": "A {{data.size}}."}]}],
            fields={"size": SIZE, "flavour": FLAVOUR, "address": ADDRESS},
            model=RuleModel(),
        )


def test_a_required_field_keeps_its_step_asking_though_another_goes_to_on_give_up() -> None:
    """The flavour given up with an onGiveUp does not leave the size unknown behind it: the
    step asks on for the size, then goes where the give-up said."""
    fields = {"size": {**SIZE, "required": True}, "flavour": FLAVOUR, "address": ADDRESS}
    flows = [
        {
            "id": "order",
            "on": [{"message": ["pizza"]}],
            "steps": [
                {"id": "choose", "collect": ["flavour", "size"], "onGiveUp": "sorry"},
                {"id": "done", "say": "A {{data.size}} pizza.", "then": "end"},
                {"id": "sorry", "say": "A {{data.size}} pizza, flavour of the day."},
            ],
        }
    ]
    chat = Dialogue(Agent(flows, fields=fields, model=RuleModel(), interrupts=[PERSON]))
    chat.say("pizza")
    for wrong in ("hawaiian", "tuna", "kebab"):
        chat.say(wrong)
    assert chat.step_of("order") == "choose"  # the flavour given up, the size still asked
    assert chat.say("large") == ["A large pizza, flavour of the day."]


def test_a_sentence_before_a_required_field_is_asked_still_needs_a_fallback() -> None:
    flows = [
        {
            "id": "order",
            "on": [{"message": ["pizza"]}],
            "steps": [
                {"id": "hello", "say": "A {{data.size}} one?"},
                {"id": "choose", "collect": ["size"]},
            ],
        }
    ]
    with pytest.raises(FlowConfigurationError, match="give it a fallback"):
        Agent(flows, fields={"size": {**SIZE, "required": True}}, model=RuleModel())


def test_an_agent_interrupt_that_only_says_is_the_turn_s_one_reply() -> None:
    """No idle reply beside it."""
    agent = Agent(
        [],
        model=RuleModel(),
        idle={"prompt": "I can book."},
        interrupts=[{"when": "help me", "say": "You can book or cancel."}],
    )
    assert Dialogue(agent).say("help me") == ["You can book or cancel."]
