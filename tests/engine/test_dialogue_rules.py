"""The dialogue rules every model gets from the engine: the last answer is read before the ask
limit, a give-up is told, placeholders never reach the user, interrupts, a changed mind at a
confirmation, field constraints. Scripted with the FakeModel, so they hold whatever the model."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.engine import Agent, FakeModel, Spoken, Understanding
from warlock_sessions.engine.fields import coerce_field
from warlock_sessions.engine.templates import render, render_deep
from warlock_sessions.errors import FlowConfigurationError
from warlock_sessions.testing import Dialogue

EMAIL = {"email": {"type": "string", "format": "email", "label": "e-mail"}}


def asking_agent(**step: Any) -> Agent:
    return Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [
                    {"id": "q", "collect": ["email"], "maxAsks": 2, **step},
                    {"id": "bye", "say": "Bye {{data.email|then}}."},
                ],
            }
        ],
        fields=EMAIL,
        model=FakeModel(),
        name="lead",
    )


def scripted(agent: Agent, *speak: Spoken, understand: int = 0) -> Dialogue:
    model = FakeModel(understand=[Understanding()] * understand, speak=list(speak))
    return Dialogue(agent, model=model)


def test_the_answer_to_the_last_ask_is_read_and_can_still_give_the_value() -> None:
    dialogue = scripted(
        asking_agent(),
        Spoken(message="Your e-mail?"),
        Spoken(message="Again: your e-mail?"),
        Spoken(message="", fields={"email": "a@b.co"}),
        understand=2,
    )
    dialogue.say("hi")
    dialogue.say("?")
    assert dialogue.say("a@b.co") == ["Bye a@b.co."]
    assert dialogue.data == {"email": "a@b.co"}
    final = dialogue.model.requests["speak"][-1].talk  # type: ignore[union-attr]
    assert (final.answering, list(final.pending), list(final.final)) == (
        True,
        ["email"],
        ["email"],
    )


def test_a_field_given_up_is_told_before_the_reply_and_the_flow_goes_on() -> None:
    dialogue = scripted(
        asking_agent(),
        Spoken(message="Your e-mail?"),
        Spoken(message="Again?"),
        Spoken(message="Going on."),
        understand=2,
    )
    dialogue.say("hi")
    dialogue.say("?")
    assert dialogue.say("??") == [
        "Sorry, I couldn't get your e-mail, so let's go on without it.",
        "Going on.",
        "Bye then.",
    ]
    assert dialogue.codes.count("max-asks") == 1
    assert dialogue.last is not None
    assert dialogue.last.messages[0]["key"] == "lead#m1:q:1:gave-up:email"


def test_the_step_sentence_and_target_for_a_give_up() -> None:
    agent = asking_agent(giveUp="No e-mail then.", onGiveUp="end")
    dialogue = scripted(
        agent, Spoken(message="E-mail?"), Spoken(message="E-mail?"), Spoken(), understand=2
    )
    dialogue.say("hi")
    dialogue.say("?")
    assert dialogue.say("??") == ["No e-mail then."]
    assert dialogue.runs == []


def test_asks_count_the_same_for_a_step_reached_after_a_reply() -> None:
    """The reply that answered one step asks the next: that is the next step's first ask."""
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [
                    {"id": "a", "collect": ["name"]},
                    {"id": "b", "collect": ["email"], "maxAsks": 2},
                ],
            }
        ],
        fields={"name": {"type": "string"}, **EMAIL},
        model=FakeModel(),
        name="lead",
    )
    dialogue = scripted(
        agent,
        Spoken(message="Name?"),
        Spoken(message="And your e-mail?", fields={"name": "Ana"}),
        Spoken(message="E-mail?"),
        Spoken(message="Ok."),
        understand=3,
    )
    dialogue.say("hi")
    dialogue.say("Ana")
    assert dialogue.session is not None
    assert dialogue.session["runs"][0]["asked"]["email"] == 1
    dialogue.say("?")
    assert dialogue.say("??")[0].startswith("Sorry, I couldn't get your e-mail")


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("Hi {{data.email}}", "give it a fallback"),
        ("Hi {{ data.email }}!", "give it a fallback"),
    ],
)
def test_a_text_reading_a_field_that_may_be_given_up_needs_a_fallback(
    template: str, why: str
) -> None:
    with pytest.raises(FlowConfigurationError, match=why) as caught:
        asking_agent(question=template)
    assert "flows[0].steps[0].question" in str(caught.value)


def test_a_field_sentence_and_an_interrupt_sentence_are_checked_too() -> None:
    with pytest.raises(FlowConfigurationError, match=r"fields\.email\.ask"):
        Agent(
            [{"id": "f", "steps": [{"id": "q", "collect": ["email"]}]}],
            fields={"email": {"type": "string", "ask": "Still {{data.email}}?"}},
        )
    with pytest.raises(FlowConfigurationError, match=r"interrupts\[0\]\.say"):
        Agent(
            [
                {
                    "id": "f",
                    "interrupts": [{"when": "stop", "say": "Bye {{data.email}}"}],
                    "steps": [{"id": "q", "collect": ["email"]}],
                }
            ],
            fields=EMAIL,
        )


@pytest.mark.parametrize(
    ("template", "scope", "expected"),
    [
        ("Hi {{data.name|there}}!", {"data": {}}, "Hi there!"),
        ("Hi {{data.name|there}}!", {"data": {"name": "Ana"}}, "Hi Ana!"),
        ("Hi {{data.name| }}!", {"data": {}}, "Hi!"),
        ("Hi {{data.name}}, ok", {"data": {}}, "Hi, ok"),
        ("Hi {{data.name}}", {"data": {"name": None}}, "Hi"),
    ],
)
def test_a_person_never_reads_a_placeholder(
    template: str, scope: dict[str, Any], expected: str
) -> None:
    assert render(template, scope) == expected


def test_an_unresolved_placeholder_is_logged_and_code_keeps_it() -> None:
    heard: list[str] = []
    assert render("Oi {{data.x}}", {"data": {}}, unresolved=heard.append) == "Oi"
    assert heard == ["data.x"]
    assert render("{{data.x}}", {"data": {}}, keep_missing=True) == "{{data.x}}"

    agent = Agent(
        [{"id": "f", "on": [{"message": []}], "steps": [{"id": "s", "say": "Oi {{data.x}}!"}]}],
        fields={"x": {"type": "string"}},  # written by code, say, and never asked for
        name="f",
    )
    dialogue = Dialogue(agent)
    assert dialogue.say("hi") == ["Oi!"]
    assert "unresolved-placeholder" in dialogue.codes


def test_an_action_param_that_is_one_placeholder_is_its_value_or_null() -> None:
    scope = {"data": {"size": "large", "count": 2}, "context": {}}
    params = {"size": "{{data.size}}", "count": "{{ data.count }}", "flavour": "{{data.flavour}}"}
    params |= {"note": "for {{data.flavour}}", "kind": "{{data.kind|plain}}"}
    assert render_deep(params, scope) == {
        "size": "large",
        "count": 2,  # its type kept
        "flavour": None,  # given up: no literal "{{data.flavour}}" reaches the action
        "note": "for {{data.flavour}}",
        "kind": "plain",
    }


def interrupting_agent() -> Agent:
    return Agent(
        [
            {
                "id": "lead",
                "on": [{"message": ["book"]}],
                "interrupts": [
                    {"when": "cancel", "say": "Cancelled."},
                    {"when": "again", "then": {"step": "q", "clear": ["email"]}},
                ],
                "steps": [{"id": "q", "collect": ["email"]}, {"id": "w", "wait": "1h"}],
            }
        ],
        fields=EMAIL,
        model=FakeModel(),
        name="lead",
    )


def branch(index: int) -> Understanding:
    return Understanding(flows={"lead": 0}, branches={f"lead#m1/#interrupts/{index}": True})


def test_an_interrupt_ends_the_run_at_any_step_with_its_sentence() -> None:
    model = FakeModel(
        understand=[Understanding(flows={"lead": 100}), branch(0)],
        speak=[Spoken(message="E-mail?")],
    )
    dialogue = Dialogue(interrupting_agent(), model=model)
    dialogue.say("book")
    assert dialogue.say("cancel") == ["Cancelled."]
    assert dialogue.runs == [] and "interrupted" in dialogue.codes
    asked = model.requests["understand"][1].branches
    assert [question.key for question in asked] == [
        "lead#m1/#interrupts/0",
        "lead#m1/#interrupts/1",
    ]


def test_an_interrupt_can_move_the_run_and_the_step_asks_afresh() -> None:
    model = FakeModel(
        understand=[Understanding(flows={"lead": 100}), branch(1)],
        speak=[Spoken(message="E-mail?"), Spoken(message="From the top: e-mail?")],
    )
    dialogue = Dialogue(interrupting_agent(), model=model)
    dialogue.say("book")
    assert dialogue.say("again") == ["From the top: e-mail?"]
    assert dialogue.step_of("lead") == "q"


@pytest.mark.parametrize(
    "interrupts",
    [[{"say": "x"}], [{"when": "x", "then": "nowhere"}], [{"when": "x", "go": "end"}], "x"],
)
def test_interrupts_are_checked_at_load(interrupts: Any) -> None:
    with pytest.raises(FlowConfigurationError, match="interrupts"):
        Agent([{"id": "f", "interrupts": interrupts, "steps": [{"id": "s", "say": "hi"}]}])


def test_a_changed_value_at_a_confirmation_updates_it_and_asks_again() -> None:
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [
                    {"id": "q", "collect": ["email"]},
                    {"id": "ok", "collect": ["sure"], "amend": ["email"]},
                ],
            }
        ],
        fields={**EMAIL, "sure": {"type": "boolean"}},
        model=FakeModel(),
        name="lead",
    )
    model = FakeModel(
        understand=[
            Understanding(fields={"email": "a@b.co"}),
            Understanding(fields={"email": "new@b.co"}),
        ],
        speak=[
            Spoken(message="E-mail?"),
            Spoken(message="a@b.co, right?"),
            Spoken(message="new@b.co, right?"),
        ],
    )
    dialogue = Dialogue(agent, model=model)
    dialogue.say("hi")
    dialogue.say("a@b.co")
    assert dialogue.say("no, use new@b.co") == ["new@b.co, right?"]
    assert dialogue.data["email"] == "new@b.co" and "amended" in dialogue.codes
    # The confirmation asks afresh, not as the re-ask of a bad answer.
    assert model.requests["understand"][1].fields.keys() == {"email"}
    assert model.requests["speak"][-1].talk.answering is False  # type: ignore[union-attr]


NOW = "2026-09-20T10:00:00.000Z"


@pytest.mark.parametrize(
    ("field", "raw", "expected"),
    [
        ({"type": "string", "format": "date", "min": "today"}, "2026-09-19", "out-of-range"),
        ({"type": "string", "format": "date", "min": "today"}, "2026-09-20", "2026-09-20"),
        ({"type": "string", "format": "date", "max": "2026-12-31"}, "2027-01-01", "out-of-range"),
        ({"type": "integer", "min": 1, "max": 12}, "13", "out-of-range"),
        ({"type": "integer", "min": 1, "max": 12}, "12", 12),
        ({"type": "number", "min": 0.5}, "0,4", "out-of-range"),
        ({"type": "string", "pattern": r"[A-Z]{3}-\d{4}"}, "ABC-1234", "ABC-1234"),
        ({"type": "string", "pattern": r"[A-Z]{3}-\d{4}"}, "ABC-1234x", "no-match"),
    ],
)
def test_field_constraints(field: dict[str, Any], raw: Any, expected: Any) -> None:
    from warlock_sessions.engine.isotime import ms_from_iso
    from warlock_sessions.testing import FakeClock

    now = FakeClock(ms_from_iso(NOW)).now()
    ok, value = coerce_field(field, raw, now)
    assert value == expected
    assert ok is (expected not in ("out-of-range", "no-match"))


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ({"type": "string", "format": "date", "min": "yesterday"}, "fields.f.min"),
        ({"type": "string", "min": 1}, "fields.f.min"),
        ({"type": "integer", "max": "3"}, "fields.f.max"),
        ({"type": "string", "pattern": "("}, "fields.f.pattern"),
        ({"type": "string", "invalid": 3}, "fields.f.invalid"),
    ],
)
def test_constraints_are_checked_at_load(field: dict[str, Any], path: str) -> None:
    with pytest.raises(FlowConfigurationError, match=path.replace(".", r"\.")):
        Agent([], fields={"f": field})


def test_an_event_flow_branches_on_its_payload_in_plain_json() -> None:
    agent = Agent(
        [
            {
                "id": "order",
                "on": [{"event": "order", "if": {"input": {"stage": "paid"}}}],
                "steps": [
                    {"id": "big", "if": {"input": {"order.items.0": "sofa"}}, "else": "small"},
                    {"id": "thanks", "say": "Your sofa is on its way.", "then": "end"},
                    {"id": "small", "say": "Your order is on its way."},
                ],
            },
            {
                "id": "vip",
                "on": [{"event": "order", "if": {"context": {"tier": "gold"}}}],
                "steps": [{"id": "hi", "say": "Gold thanks!"}],
            },
        ],
        name="shop",
    )
    dialogue = Dialogue(agent, context={"tier": "silver"})
    assert dialogue.event("order", {"stage": "cart"}) == []
    assert dialogue.event("order", {"stage": "paid", "order": {"items": ["sofa"]}}) == [
        "Your sofa is on its way."
    ]
    assert dialogue.event("order", {"stage": "paid", "order": {"items": []}}) == [
        "Your order is on its way."
    ]
    dialogue.context = {"tier": "gold"}
    assert dialogue.event("order", {"stage": "cart"}) == ["Gold thanks!"]


def test_payload_conditions_are_checked_at_load() -> None:
    with pytest.raises(FlowConfigurationError, match=r"on\[0\]\.if\.input"):
        Agent([{"id": "f", "on": [{"event": "e", "if": {"input": "paid"}}], "steps": []}])


SILENCED = {"reason": "human", "understand": True}


def test_a_silenced_turn_neither_interrupts_nor_restarts_a_confirmation() -> None:
    model = FakeModel(
        understand=[Understanding(flows={"lead": 100}), branch(0)],
        speak=[Spoken(message="E-mail?")],
    )
    dialogue = Dialogue(interrupting_agent(), model=model)
    dialogue.say("book")
    assert dialogue.send(message={"text": "cancel", "id": "x"}, silenced=SILENCED) == []
    assert dialogue.step_of("lead") == "q"

    booking = Dialogue(
        __import__("example_project.demo.agents", fromlist=["booking_agent"]).booking_agent()
    )
    for text in ["book", "Ana", "ana@example.com", "tomorrow at 3"]:
        booking.say(text)
    said = booking.send(message={"text": "make it friday", "id": "y"}, silenced=SILENCED)
    assert said == [] and booking.step_of("booking") == "confirm"


def test_a_field_both_collected_and_amendable_takes_its_first_answer() -> None:
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [{"id": "q", "collect": ["email"], "amend": ["email"]}],
            }
        ],
        fields=EMAIL,
        name="lead",
    )
    model = FakeModel(
        understand=[Understanding(fields={"email": "a@b.co"})],
        speak=[Spoken(message="E-mail?"), Spoken(message="Thanks.")],
    )
    dialogue = Dialogue(agent, model=model)
    dialogue.say("hi")
    dialogue.say("a@b.co")
    assert dialogue.data == {"email": "a@b.co"} and "amended" not in dialogue.codes


def test_a_last_answer_the_model_could_not_read_is_asked_for_again() -> None:
    from warlock_sessions.engine import Deferral

    agent = asking_agent()
    model = FakeModel(
        understand=[Understanding(), Understanding()],
        speak=[
            Spoken(message="E-mail?"),
            Spoken(message="Again?"),
            Deferral("provider-unavailable", True),
            Spoken(message="Sorry, once more: your e-mail?"),
        ],
    )
    dialogue = Dialogue(agent, model=model)
    dialogue.say("hi")
    dialogue.say("?")
    assert dialogue.say("a@b.co") == []  # the model failed: nothing read, nothing given up
    assert dialogue.advance("1m") == ["Sorry, once more: your e-mail?"]
    assert "max-asks" not in dialogue.codes


def test_a_say_between_two_asks_is_not_counted_as_an_ask() -> None:
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [
                    {"id": "a", "collect": ["name"]},
                    {"id": "hi", "say": "Nice to meet you."},
                    {"id": "b", "collect": ["email"]},
                ],
            }
        ],
        fields={"name": {"type": "string"}, **EMAIL},
        name="lead",
    )
    model = FakeModel(
        understand=[Understanding()],
        speak=[Spoken(message="Name?"), Spoken(fields={"name": "Ana"})],
    )
    dialogue = Dialogue(agent, model=model)
    dialogue.say("hi")
    assert dialogue.say("Ana") == ["Nice to meet you."]
    assert dialogue.session is not None
    assert dialogue.session["runs"][0]["asked"].get("email", 0) == 0


def test_on_give_up_wins_over_the_fields_still_asked() -> None:
    """The user asks to redo the e-mail (its asks start over) after the phone's last ask: the
    phone is given up while the e-mail is still asked, and onGiveUp goes first."""
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [
                    {
                        "id": "both",
                        "collect": ["phone", "email"],
                        "maxAsks": 2,
                        "onGiveUp": "human",
                        "branches": [
                            {"when": "redo", "then": {"step": "both", "clear": ["email"]}}
                        ],
                    },
                    {"id": "done", "say": "All set.", "then": "end"},
                    {"id": "human", "say": "A person will call you."},
                ],
            }
        ],
        fields={"phone": {"type": "string", "label": "phone"}, **EMAIL},
        name="lead",
    )
    model = FakeModel(
        understand=[Understanding(), Understanding(branches={"lead#m1/both/0": True})],
        speak=[Spoken(message="Phone and e-mail?"), Spoken(message="Again?"), Spoken()],
    )
    dialogue = Dialogue(agent, model=model)
    dialogue.say("hi")
    dialogue.say("?")
    assert dialogue.say("redo the e-mail") == [
        "Sorry, I couldn't get your phone, so let's go on without it.",
        "A person will call you.",
    ]


def test_a_field_invalid_sentence_is_rendered() -> None:
    from warlock_sessions.providers import RuleModel

    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "steps": [{"id": "q", "collect": ["age"]}],
            }
        ],
        fields={
            "age": {
                "type": "integer",
                "min": 18,
                "invalid": "Sorry {{context.who|friend}}, you must be 18.",
            }
        },
        model=RuleModel(),
        name="lead",
    )
    dialogue = Dialogue(agent)
    dialogue.say("hi")
    assert dialogue.say("12")[0].startswith("Sorry friend, you must be 18.")


def test_a_runaway_pattern_is_stopped_and_counts_as_no_match() -> None:
    field = {"type": "string", "pattern": r"(\w+\s?)+$|(x+x+)+y"}
    assert coerce_field(field, "x" * 40) == (True, "x" * 40)
    assert coerce_field({"type": "string", "pattern": r"(x+x+)+y"}, "x" * 5000) == (
        False,
        "no-match",
    )


@pytest.mark.parametrize("raw", ["21/09/2030", "2030-13-45", "soon", "2026-09-25 17:43:08, "])
@pytest.mark.parametrize("bounds", [{"max": "2031-01-01"}, {}])
def test_a_date_must_be_a_real_iso_date_and_all_of_it(raw: str, bounds: dict[str, str]) -> None:
    """Any model's value: an LLM's "2026-09-25 17:43:08, " was stored (only the first ten
    characters were read); a value that is no date is a bad value, bounded or not."""
    field = {"type": "string", "format": "date", **bounds}
    assert coerce_field(field, raw) == (False, "bad-value")
    assert coerce_field(field, " 2030-09-21 ") == (True, "2030-09-21")  # kept as the date


@pytest.mark.parametrize(
    ("field_format", "good", "bad"),
    [
        ("email", "ana.souza@example.com.br", "string; email; e-mail"),
        ("email", "ana@example.com", "ana@example"),
        ("name", "Ana Souza", "string; name; {'en': 'name', 'pt': 'nome'}"),
        ("name", "D'Ávila-Souza", "12345"),
        ("phone", "+55 (11) 99999-1234", "call me"),
        # Real values a first version of these checks refused (a review found them).
        ("name", "ジョン・スミス", "string; name; nome"),
        ("name", "Col·lell", "Ana {name}"),
        ("name", "\u0645\u0647\u062f\u06cc\u200c\u0632\u0627\u062f\u0647", "ana@example.com"),
        ("name", "\u05d2\u05f3\u05d5\u05e8\u05d2\u05f3", "#1"),
        ("name", "John Smith, Jr.", "Ana; drop table"),
        ("name", "Ana\u00a0Souza", "Ana (the customer)"),
        ("phone", "030/12345678", "12-34"),
        ("phone", "(+44) 7700 900123", "+44 7700 ext"),
        ("phone", "+1 555-123-4567 ext. 89", "555 CALL ME"),
        ("email", "user@example.xn--p1ai", "user@example.123"),
    ],
)
def test_a_value_must_have_its_field_s_format_whichever_model_gave_it(
    field_format: str, good: str, bad: str
) -> None:
    """A small LLM echoed its prompt back as values; the engine stored them as given."""
    field = {"type": "string", "format": field_format}
    assert coerce_field(field, good) == (True, good)
    assert coerce_field(field, bad) == (False, "bad-value")


def test_a_text_behind_an_if_known_needs_no_fallback_and_a_pattern_needs_text() -> None:
    Agent(
        [
            {
                "id": "f",
                "steps": [
                    {"id": "q", "collect": ["email"]},
                    {"id": "k", "if": {"known": ["email"]}, "else": "end"},
                    {"id": "s", "say": "Sent to {{data.email}}."},
                ],
            }
        ],
        fields=EMAIL,
    )
    with pytest.raises(FlowConfigurationError, match=r"steps\[3\]\.say"):
        Agent(
            [
                {
                    "id": "f",
                    "steps": [
                        {"id": "q", "collect": ["email"]},
                        {"id": "k", "if": {"known": ["email"]}, "then": "s", "else": "s"},
                        {"id": "x", "say": "never"},
                        {"id": "s", "say": "Sent to {{data.email}}."},
                    ],
                }
            ],
            fields=EMAIL,
        )
    with pytest.raises(FlowConfigurationError, match=r"fields\.n\.pattern"):
        Agent([], fields={"n": {"type": "integer", "pattern": r"\d+"}})
