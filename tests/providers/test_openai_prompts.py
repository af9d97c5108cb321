"""What the model is told and what is accepted from it (pure: no server). A small model
echoed the understand brief back as its answer, read per-language texts as Python dicts,
took "!thanks" for a trigger, had no date to count from and never set the language."""

from __future__ import annotations

import dataclasses
import json

from warlock_sessions.engine import Agent
from warlock_sessions.providers.openai.prompts import (
    describe_field,
    read_understanding,
    speak_messages,
    understand_messages,
)

from .test_openai_model import AGENT, speak_request, understand_request

ASKING = Agent(
    [
        {
            "id": "booking",
            "on": [{"message": ["book", "!thanks"]}],
            "name": {"en": "Booking", "pt": "Agendamento"},
            "steps": [{"id": "s", "collect": ["name"]}],
        }
    ],
    fields={"name": {"type": "string", "format": "name", "label": {"en": "name", "pt": "nome"}}},
)


def brief(request: object) -> dict[str, object]:
    content = understand_messages(request)[1]["content"]  # type: ignore[arg-type]
    parsed: dict[str, object] = json.loads(content)
    return parsed


def test_the_brief_uses_no_key_of_the_answer_and_gives_today() -> None:
    sent = brief(understand_request())
    assert "fields" not in sent and "flows" not in sent and "mentions" not in sent
    assert sent["field_descriptions"] == {"nome": "string"}
    assert sent["today"] == "2026-09-20 (Sunday)"


def test_texts_go_in_the_conversation_s_language_and_exclusions_are_no_examples() -> None:
    request = dataclasses.replace(
        understand_request(),
        message_flows=[ASKING.flows["booking"]],
        fields=dict(ASKING.fields),
        language="pt",
    )
    [flow] = brief(request)["candidate_flows"]  # type: ignore[misc]
    assert flow["name"] == "Agendamento"
    assert flow["examples"] == ["book"] and flow["not_when_the_message_says"] == ["thanks"]
    assert describe_field(ASKING.fields["name"], "pt") == "string; name; nome"
    assert "{" not in describe_field(ASKING.fields["name"], None)


def test_an_answer_echoing_the_prompt_is_not_an_understanding() -> None:
    request = dataclasses.replace(
        understand_request(),
        fields={"nome": {"type": "string", "label": "full name"}, "email": AGENT.fields["email"]},
        text="oi, quero marcar um horário",
    )
    understanding = read_understanding(
        {
            "flows": {"agendar": 10**15, "cupom": -3, "outro": True},
            "fields": {"nome": "string; full name", "email": "Full Name", "idade": "30"},
        },
        1,
        request,
    )
    assert understanding.flows == {"agendar": 100, "cupom": 0}
    assert understanding.fields == {"idade": "30"}  # echoes dropped; the engine checks the rest
    assert understanding.language == "pt"


def test_the_speak_prompt_gives_today() -> None:
    system = speak_messages(speak_request())[0]["content"]
    assert "Today is 2026-09-20 (Sunday)." in system


def test_a_name_e_mail_or_phone_the_customer_did_not_write_is_not_taken() -> None:
    """The small model stored "The name of the customer who has booked your reservation"
    for "Hi, I'd like to book an appointment", and a colleague's phone number."""
    fields = {
        "name": {"type": "string", "format": "name"},
        "phone": {"type": "string", "format": "phone"},
        "email": {"type": "string", "format": "email"},
        "contact_by": {"type": "string", "enum": ["email", "phone"], "label": "email or phone"},
    }
    request = dataclasses.replace(
        understand_request(),
        fields=fields,
        text="I'm ana souza, call me on +55 11 99999-1234 by phone",
    )
    understanding = read_understanding(
        {
            "fields": {
                "name": "Ana Souza",
                "phone": "(11) 99999-1234",
                "email": "ana@example.com",
                "contact_by": "phone",
            }
        },
        1,
        request,
    )
    # An option equal to a label or format is an answer, not an echo.
    assert understanding.fields == {
        "name": "Ana Souza",
        "phone": "(11) 99999-1234",
        "contact_by": "phone",
    }
    made_up = read_understanding(
        {"fields": {"name": "The name of the customer who has booked your reservation"}},
        1,
        dataclasses.replace(request, text="Hi, I'd like to book an appointment"),
    )
    assert made_up.fields == {}
