"""RuleModel: recognisers on real utterances (EN and PT), routing, and the demo conversation."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from example_project.demo.agents import booking_agent
from warlock_sessions.engine import Agent, FakeClock, turn
from warlock_sessions.providers import RuleModel
from warlock_sessions.providers.recognisers import heard, language_of, value_for
from warlock_sessions.providers.text import fold, phrases_score
from warlock_sessions.testing import Dialogue

NOW = datetime(2026, 9, 20, 10, tzinfo=UTC)  # a Sunday


@pytest.mark.parametrize(
    ("field", "text", "language", "expected"),
    [
        (
            {"type": "string", "format": "email"},
            "it's Ana.Souza@Example.com.br thanks",
            "en",
            "ana.souza@example.com.br",
        ),
        ({"type": "string", "format": "email"}, "meu email é ana arroba gmail", "pt", None),
        ({"type": "string", "format": "email"}, "ana@localhost", "en", None),
        (
            {"type": "string", "format": "phone"},
            "call me on +55 (11) 99876-5432",
            "en",
            "+5511998765432",
        ),
        ({"type": "string", "format": "phone"}, "meu telefone é 11 3456-7890", "pt", "1134567890"),
        ({"type": "string", "format": "phone"}, "room 42", "en", None),
        ({"type": "string", "format": "date"}, "tomorrow please", "en", "2026-09-21"),
        ({"type": "string", "format": "date"}, "amanhã de manhã", "pt", "2026-09-21"),
        ({"type": "string", "format": "date"}, "depois de amanhã", "pt", "2026-09-22"),
        ({"type": "string", "format": "date"}, "the day after tomorrow", "en", "2026-09-22"),
        ({"type": "string", "format": "date"}, "next friday", "en", "2026-09-25"),
        ({"type": "string", "format": "date"}, "na sexta-feira", "pt", "2026-09-25"),
        ({"type": "string", "format": "date"}, "in 3 days", "en", "2026-09-23"),
        ({"type": "string", "format": "date"}, "03/10", "pt", "2026-10-03"),
        ({"type": "string", "format": "date"}, "10/03", "en", "2026-10-03"),
        ({"type": "string", "format": "date"}, "December 3rd", "en", "2026-12-03"),
        ({"type": "string", "format": "date"}, "3 de dezembro", "pt", "2026-12-03"),
        ({"type": "string", "format": "date"}, "2027-01-15", "en", "2027-01-15"),
        (
            {"type": "string", "format": "date"},
            "1 de setembro",
            "pt",
            "2027-09-01",
        ),  # past: next year
        ({"type": "string", "format": "date"}, "31/02", "pt", None),
        ({"type": "string", "format": "date"}, "whenever", "en", None),
        ({"type": "string", "format": "name"}, "My name is ana souza", "en", "Ana Souza"),
        ({"type": "string", "format": "name"}, "me chamo João", "pt", "João"),
        ({"type": "string", "format": "name"}, "ana@example.com", "en", None),
        ({"type": "string", "format": "name"}, "yes", "en", None),
        ({"type": "number"}, "about 1.500,50 reais", "pt", "1.500,50"),
        ({"type": "integer"}, "we are 12 people", "en", "12"),
        ({"type": "integer"}, "a dozen", "en", None),
        ({"type": "boolean"}, "Yes please", "en", True),
        ({"type": "boolean"}, "sim, pode ser", "pt", True),
        ({"type": "boolean"}, "não", "pt", False),
        ({"type": "boolean"}, "nope", "en", False),
        ({"type": "boolean"}, "maybe", "en", None),
        ({"type": "boolean"}, "yes no", "en", None),
        (
            {"type": "string", "enum": ["morning", "afternoon"]},
            "the Afternoon is best",
            "en",
            "afternoon",
        ),
        ({"type": "string", "enum": ["manhã", "tarde"]}, "de manha", "pt", "manhã"),
        ({"type": "string", "enum": ["morning", "afternoon"]}, "evening", "en", None),
    ],
)
def test_recognisers_on_real_utterances(
    field: dict[str, Any], text: str, language: str, expected: Any
) -> None:
    assert value_for(field, text, NOW, language, asked=True) == expected


def test_free_text_counts_only_when_the_field_was_asked() -> None:
    assert value_for({"type": "string"}, "Ana", NOW, "en", asked=False) is None
    assert value_for({"type": "integer"}, "room 12", NOW, "en", asked=False) is None
    assert (
        value_for({"type": "string", "format": "email"}, "a@b.co", NOW, "en", asked=False)
        == "a@b.co"
    )


def test_phrase_scores_are_accent_insensitive_and_honour_exclusions() -> None:
    assert fold("Não, AMANHÃ") == "nao, amanha"
    assert phrases_score(["marcar horário"], "quero MARCAR um horario") == 80
    assert phrases_score(["marcar horário"], "marcar horario amanhã") == 100
    assert phrases_score(["agendar"], "gostaria de um agendamento") == 100
    assert phrases_score(["book", "!cancel"], "cancel my book") == 0
    assert phrases_score(["book a table"], "a table please") == 40
    assert language_of("quero agendar") == "pt" and language_of("I want to book") == "en"


def test_an_accented_name_does_not_say_portuguese() -> None:
    """ "João Pereira" switched an English chat, reminders included, to Portuguese."""
    assert language_of("João Pereira") is None  # a name: the chat keeps its language
    assert language_of("my name is João Conceição") == "en"
    assert language_of("não sei") == "pt" and language_of("Não, obrigado") == "pt"
    assert language_of("manhã") == "pt"


def test_routing_scores_and_mentions() -> None:
    agent = Agent(
        [
            {
                "id": "vendas",
                "on": [{"message": ["comprar", "preço"]}],
                "steps": [{"id": "s", "say": "ok"}],
            },
            {
                "id": "suporte",
                "on": [{"message": ["problema", "não funciona"]}],
                "steps": [{"id": "s", "say": "ok"}],
            },
            {
                "id": "cupom",
                "on": [{"mention": ["cupom"], "extract": {"codigo": {"type": "string"}}}],
                "steps": [{"id": "s", "say": "Cupom {{input.codigo}}"}],
            },
        ],
        model=RuleModel(),
        idle="silent",
    )
    result = turn(
        agent=agent,
        session_id="s1",
        message={"text": "qual o preço? tenho o cupom BLACK10", "id": "m1"},
        clock=FakeClock(),
    )
    assert sorted(s["flowId"] for s in result.started) == ["cupom", "vendas"]
    assert [m["text"] for m in result.messages] == ["Cupom BLACK10", "ok"]
    assert result.llm_calls == 0


def test_the_demo_booking_conversation_runs_end_to_end_on_the_rule_model() -> None:
    chat = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    assert chat.say("hi there") == [
        'Hi! I\'m the booking assistant. Say "book" to make an appointment.'
    ]
    assert chat.say("I'd like to book an appointment") == [
        "Great, let's get you booked. What's your name?"
    ]
    assert chat.advance("2m") == ["Are you still there? I'm here whenever you're ready."]
    assert chat.say("My name is Ana Souza") == ["Thanks, Ana Souza! What's your e-mail address?"]
    assert chat.say("ana at example dot com") == [
        "That doesn't look like an e-mail address. What's your e-mail address?"
    ]
    assert chat.say("sorry: ana@example.com") == ["Which day would suit you?"]
    assert chat.say("hmm, whenever") == [
        "I couldn't read a date in that. Which day would suit you?"
    ]
    assert chat.say("tomorrow") == ["What time suits you? We're open from 09:00 to 17:00."]
    assert chat.say("at 2pm") == [
        "So that's 2026-09-21 at 14:00 for Ana Souza (ana@example.com). Shall I book it?"
    ]
    assert chat.say("no") == ["Which day would suit you?"]
    assert chat.say("the day after tomorrow at 9:30") == [
        "So that's 2026-09-22 at 09:30 for Ana Souza (ana@example.com). Shall I book it?"
    ]
    assert chat.say("yes please") == [
        "Booked! See you on 2026-09-22 at 09:30, Ana Souza. "
        "A confirmation is on its way to ana@example.com."
    ]
    assert chat.data == {
        "name": "Ana Souza",
        "email": "ana@example.com",
        "date": "2026-09-22",
        "time": "09:30",
        "confirmed": True,
    }
    assert chat.say("thanks!") == ["You're welcome! See you on 2026-09-22 at 09:30."]


def test_a_field_given_early_is_not_asked_again_and_portuguese_works() -> None:
    chat = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    assert chat.say("quero agendar, meu email é ana@exemplo.com.br") == [
        "Ótimo, vamos agendar. Qual é o seu nome?"
    ]
    assert chat.say("me chamo Ana") == ["Qual dia fica bom para você?"]
    assert chat.say("amanhã às 15h") == [
        "Então fica 2026-09-21 às 15:00 para Ana (ana@exemplo.com.br). Posso confirmar?"
    ]
    assert chat.say("sim") == [
        "Agendado! Até 2026-09-21 às 15:00, Ana. A confirmação vai para ana@exemplo.com.br."
    ]


def test_max_asks_moves_on_after_the_step_re_asked_three_times() -> None:
    chat = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    chat.say("book")
    assert chat.say("Ana") == ["Thanks, Ana! What's your e-mail address?"]  # asked by look-ahead
    for _ in range(2):  # the look-ahead was the first of maxAsks (3) asks
        assert chat.say("no idea")[0].startswith("That doesn't look like an e-mail address.")
    assert chat.say("still no idea") == [
        "Sorry, I couldn't get your e-mail, so let's go on without it.",
        "Which day would suit you?",
    ]
    assert "email" not in chat.data


@pytest.mark.parametrize(
    "pattern", ["a", "a@", "1 ", "1.", "a.", "+1 (", "a@b.", "x" * 63 + "@"], ids=repr
)
def test_a_maximal_message_is_understood_in_well_under_a_second(pattern: str) -> None:
    """The booking agent asks for an e-mail, then gets the largest message a client may send,
    made of a pattern that used to make a recogniser rescan it from every position."""
    from example_project.demo.agents import booking_agent
    from warlock_sessions.engine import FakeClock, turn
    from warlock_sessions.providers.recognisers import email, phone

    limit = 256 * 1024
    text = (pattern * (limit // len(pattern)))[:limit]
    agent, clock = booking_agent(), FakeClock()
    session = None
    for index, said in enumerate(["book", "Ana Souza"]):
        result = turn(
            agent=agent,
            session_id="big",
            session=session,
            message={"text": said, "id": f"m{index}"},
            clock=clock,
        )
        session = {**result.session, "version": index + 1}
    started = time.perf_counter()
    turn(
        agent=agent,
        session_id="big",
        session=session,
        message={"text": text, "id": "big"},
        clock=clock,
    )
    email(text), phone(text)  # the recognisers themselves, over all of it
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "pattern", ["a ", "no ", "dia 1 de ", "the 3rd of may ", "my name is ", "hmmm ", "x" * 40]
)
@pytest.mark.parametrize("kind", ["date", "name", "yes_no", "count", "option"])
def test_every_recogniser_reads_a_maximal_message_in_well_under_a_second(
    kind: str, pattern: str
) -> None:
    """Each recogniser reads at most MAX_RECOGNISED_CHARS, and linearly: a coarse bound that
    a rescan from every position (what made one 200 KB message cost 59 s) would break."""
    from warlock_sessions.providers.recognisers import MAX_RECOGNISED_CHARS

    field = {
        "date": {"type": "string", "format": "date"},
        "name": {"type": "string", "format": "name"},
        "yes_no": {"type": "boolean"},
        "count": {"type": "integer"},
        "option": {"type": "string", "enum": ["haircut", "colour", "manicure", "beard trim"]},
    }[kind]
    text = heard(pattern * (256 * 1024 // len(pattern)))
    assert len(text) == MAX_RECOGNISED_CHARS
    started = time.perf_counter()
    for language in ("en", "pt", None):
        value_for(field, text, datetime(2026, 9, 20, tzinfo=UTC), language, asked=True)
    assert time.perf_counter() - started < 1.0


PIZZA_FIELDS = {
    "size": {"type": "string", "enum": ["small", "large"], "ask": "Which size, small or large?"},
    "flavour": {
        "type": "string",
        "enum": ["margherita", "pepperoni", "veggie"],
        "ask": "And which flavour?",
    },
}


def pizza(**fields: Any) -> Dialogue:
    steps = [
        {"id": "order", "collect": ["size", "flavour"]},
        {"id": "done", "say": "One {{data.size|}} {{data.flavour|}} coming up."},
    ]
    flows = [{"id": "pizza", "on": [{"message": ["pizza"]}], "steps": steps}]
    return Dialogue(Agent(flows, fields=fields or PIZZA_FIELDS, model=RuleModel(), name="p"))


def test_two_fields_are_asked_each_as_written_and_a_right_answer_is_not_corrected() -> None:
    dialogue = pizza()
    assert dialogue.say("I want a pizza") == ["Which size, small or large?"]
    assert dialogue.say("large") == ["And which flavour?"]  # no "Please choose one of: …"
    assert dialogue.say("pepperoni") == ["One large pepperoni coming up."]
    wrong = pizza()
    wrong.say("I want a pizza")
    assert wrong.say("medium") == [
        "Please choose one of: small, large. Which size, small or large?"
    ]
    both = pizza()
    both.say("I want a pizza")
    assert both.say("a large margherita please") == ["One large margherita coming up."]


def test_fields_without_their_own_ask_are_asked_together_by_label() -> None:
    fields = {
        name: {k: v for k, v in spec.items() if k != "ask"} for name, spec in PIZZA_FIELDS.items()
    }
    assert pizza(**fields).say("I want a pizza") == ["What are your size and flavour?"]
