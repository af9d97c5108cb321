"""The conversation has a language: heard from the words people write, kept in the session's
metadata, pinned by the context or a flow, used to read "03/04" and to pick every reply."""

from __future__ import annotations

import pytest

from example_project.demo.agents import booking_agent
from warlock_sessions.engine import Agent
from warlock_sessions.errors import FlowConfigurationError
from warlock_sessions.providers import RuleModel
from warlock_sessions.testing import Dialogue, FakeClock

T0 = "2026-09-20T10:00:00.000Z"


def demo(**options: object) -> Dialogue:
    return Dialogue(booking_agent(), clock=FakeClock(T0), **options)  # type: ignore[arg-type]


def test_the_demo_converses_in_portuguese_end_to_end() -> None:
    dialogue = demo()
    assert dialogue.say("oi") == [
        'Olá! Sou o assistente de agendamento. Diga "marcar" para agendar.'
    ]
    assert dialogue.say("quero marcar um horário") == ["Ótimo, vamos agendar. Qual é o seu nome?"]
    assert dialogue.say("me chamo João") == ["Obrigado, João! Qual é o seu e-mail?"]
    assert dialogue.say("joao@exemplo.com.br") == ["Qual dia fica bom para você?"]
    assert dialogue.say("01/09/2026") == [
        "Esse dia já passou: qual dia, de hoje em diante, fica bom para você?"
    ]
    assert dialogue.say("03/10") == [
        "Que horário fica bom para você? Atendemos das 09:00 às 17:00."
    ]
    assert dialogue.say("às duas") == [
        "Então fica 2026-10-03 às 14:00 para João (joao@exemplo.com.br). Posso confirmar?"
    ]
    assert dialogue.say("talvez") == [
        "Responda sim ou não, por favor. Então fica 2026-10-03 às 14:00 para João "
        "(joao@exemplo.com.br). Posso confirmar?"
    ]
    assert dialogue.say("pode ser") == [
        "Agendado! Até 2026-10-03 às 14:00, João. A confirmação vai para joao@exemplo.com.br."
    ]
    assert dialogue.session is not None
    assert dialogue.session["metadata"]["language"] == "pt"


def test_a_message_with_no_language_keeps_the_conversations() -> None:
    dialogue = demo()
    dialogue.say("quero marcar")
    dialogue.say("Ana")  # a bare name says nothing of the language
    assert dialogue.replies[-1] == "Obrigado, Ana! Qual é o seu e-mail?"
    dialogue.say("I'd rather write in English, my email is ana@example.com")
    assert dialogue.replies[-1] == "Which day would suit you?"


@pytest.mark.parametrize(("language", "expected"), [("pt", "2026-10-03"), ("en", "2027-03-10")])
def test_digits_are_read_in_the_conversations_language(language: str, expected: str) -> None:
    dialogue = demo(context={"language": language})
    for text in ["book", "Ana", "ana@example.com"]:
        dialogue.say(text)
    dialogue.say("03/10")
    assert dialogue.data["date"] == expected


def test_ambiguous_digits_before_the_language_is_known_are_asked_again() -> None:
    agent = Agent(
        [{"id": "f", "on": [{"message": []}], "steps": [{"id": "d", "collect": ["date"]}]}],
        fields={"date": {"type": "string", "format": "date", "label": "date"}},
        model=RuleModel(),
        name="f",
    )
    dialogue = Dialogue(agent, clock=FakeClock(T0))
    dialogue.say("ok")
    assert dialogue.say("03/10") == ["I couldn't read a date in that. What is your date?"]
    dialogue.say("13/10")
    assert dialogue.data == {"date": "2026-10-13"}


def test_the_context_pins_the_language_and_no_message_changes_it() -> None:
    dialogue = demo(context={"language": "en"})
    assert dialogue.say("quero marcar") == ["Great, let's get you booked. What's your name?"]
    assert dialogue.session is not None
    assert "language" not in dialogue.session["metadata"]


def test_a_flow_pins_its_language() -> None:
    agent = Agent(
        [
            {
                "id": "f",
                "on": [{"message": ["start"]}],
                "language": "pt",
                "steps": [{"id": "q", "collect": ["ok"]}],
            }
        ],
        fields={
            "ok": {
                "type": "boolean",
                "ask": {"en": "Right?", "pt": "Certo?"},
                "label": {"en": "answer", "pt": "resposta"},
            }
        },
        model=RuleModel(),
        name="f",
    )
    assert Dialogue(agent, clock=FakeClock(T0)).say("start") == ["Certo?"]


@pytest.mark.parametrize(
    "text",
    [{"en": 3}, {}, {"en": "ok", "pt": None}, ["hi"]],
    ids=["number", "empty", "null", "list"],
)
def test_a_text_per_language_is_checked_at_load(text: object) -> None:
    with pytest.raises(FlowConfigurationError, match=r"flows\[0\]\.steps\[0\]\.say.*per language"):
        Agent([{"id": "f", "steps": [{"id": "s", "say": text}]}])


def test_every_language_of_a_text_is_checked_for_placeholders() -> None:
    with pytest.raises(FlowConfigurationError, match=r"\{\{data\.n\}\}"):
        Agent(
            [
                {
                    "id": "f",
                    "steps": [
                        {"id": "q", "collect": ["n"]},
                        {"id": "s", "say": {"en": "Hi {{data.n|you}}", "pt": "Oi {{data.n}}"}},
                    ],
                }
            ],
            fields={"n": {"type": "string"}},
        )


def pizza_agent(**labels: object) -> Agent:
    return Agent(
        [
            {
                "id": "order",
                "on": [{"message": ["pizza", "quero pizza"]}],
                "steps": [{"id": "s", "prompt": "Pizza time!", "collect": ["size", "flavour"]}],
            }
        ],
        fields={
            "size": {"type": "string", "enum": ["small", "large"], **labels.get("size", {})},
            "flavour": {
                "type": "string",
                "enum": ["margherita", "pepperoni"],
                **labels.get("flavour", {}),
            },
        },
        model=RuleModel(),
    )


def test_labels_in_one_language_are_never_mixed_into_another() -> None:
    """A Portuguese user of an English-only agent read "Quais são os seus size e flavour?"."""
    dialogue = Dialogue(pizza_agent(), clock=FakeClock(T0))
    assert dialogue.say("quero pizza") == ["Pizza time! What are your size and flavour?"]
    assert dialogue.say("large") == ["What is your flavour?"]
    chat = Dialogue(
        pizza_agent(
            size={"label": {"en": "size", "pt": "tamanho"}},
            flavour={"label": {"en": "flavour", "pt": "sabor"}},
        ),
        clock=FakeClock(T0),
    )
    chat.say("quero pizza")
    assert chat.say("margherita") == ["Qual é o seu tamanho?"]  # each label has its Portuguese


def test_a_give_up_names_the_field_in_its_labels_language() -> None:
    dialogue = Dialogue(pizza_agent(), clock=FakeClock(T0))
    dialogue.say("quero pizza")
    for answer in ("hmm", "não sei", "talvez"):
        said = dialogue.say(answer)
    assert said[0].startswith("Sorry, I couldn't get your size, so let's go on without it.")


@pytest.mark.parametrize(
    ("label", "ok"),
    [
        (None, False),
        ({"en": "size"}, False),
        ({"en": "size", "pt": "tamanho"}, True),
        ({"en": "size", "pt": "size"}, True),  # the same word, said to be right in both
        ("size", False),  # it would be said in a Portuguese sentence
        ("tamanho / size", False),
    ],
)
def test_an_agent_written_in_two_languages_labels_its_fields_in_both(
    label: object, ok: bool
) -> None:
    size: dict[str, object] = {"type": "string"} | ({"label": label} if label else {})
    flows = [
        {
            "id": "order",
            "steps": [{"id": "s", "prompt": {"en": "Hi", "pt": "Oi"}, "collect": ["size"]}],
        }
    ]
    if ok:
        Agent(flows, fields={"size": size})
        return
    with pytest.raises(FlowConfigurationError, match=r"fields\.size\.label: .*no label in"):
        Agent(flows, fields={"size": size})


def test_a_field_that_asks_and_gives_up_in_its_own_words_needs_no_label() -> None:
    texts = {"ask": {"en": "Size?", "pt": "Tamanho?"}, "giveUp": {"en": "No size.", "pt": "Sem."}}
    Agent(
        [{"id": "o", "steps": [{"id": "s", "prompt": {"en": "Hi", "pt": "Oi"}, "collect": ["z"]}]}],
        fields={"z": {"type": "string", **texts}},
    )


def test_an_agent_written_in_one_language_may_label_a_field_in_several() -> None:
    """An English agent with one bilingual label was refused for its other fields' labels."""
    flows = [{"id": "order", "steps": [{"id": "s", "prompt": "Hi", "collect": ["size", "kind"]}]}]
    fields = {
        "size": {"type": "string", "label": {"en": "size", "pt": "tamanho"}},
        "kind": {"type": "string", "label": "kind"},
    }
    Agent(flows, fields=fields)
