"""The demo's booking conversation on the RuleModel, through the situations people get into:
a hesitant confirmation, a field given up, a way out, a changed mind, a day in the past, a
second booking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from example_project.demo.agents import booking_agent
from warlock_sessions.testing import Dialogue, FakeClock

CONFIRM = "So that's 2026-09-21 at 15:00 for Ana (ana@example.com). Shall I book it?"


@pytest.fixture
def booked_up_to_the_confirmation() -> Dialogue:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    dialogue.say("Ana")
    dialogue.say("ana@example.com")
    assert dialogue.say("tomorrow at 3") == [CONFIRM]
    return dialogue


def test_a_yes_after_two_hesitations_books(booked_up_to_the_confirmation: Dialogue) -> None:
    dialogue = booked_up_to_the_confirmation
    assert dialogue.say("maybe") == ["Please answer yes or no. " + CONFIRM]
    assert dialogue.say("hmm") == ["Please answer yes or no. " + CONFIRM]
    assert dialogue.say("yes") == [
        "Booked! See you on 2026-09-21 at 15:00, Ana. "
        "A confirmation is on its way to ana@example.com."
    ]


def test_a_confirmation_never_given_is_told_and_nothing_is_booked(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    dialogue = booked_up_to_the_confirmation
    dialogue.say("maybe")
    dialogue.say("hmm")
    assert dialogue.say("dunno") == ["I'll leave it unbooked for now."]
    assert dialogue.runs == []
    assert "confirmed" not in dialogue.data


def test_an_e_mail_given_up_is_told_and_no_placeholder_shows() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    dialogue.say("Ana")
    dialogue.say("no")
    dialogue.say("nope")
    assert dialogue.say("not telling") == [
        "Sorry, I couldn't get your e-mail, so let's go on without it.",
        "Which day would suit you?",
    ]
    assert dialogue.say("tomorrow") == ["What time suits you? We're open from 09:00 to 17:00."]
    assert dialogue.say("11am") == [
        "So that's 2026-09-21 at 11:00 for Ana (no e-mail). Shall I book it?"
    ]
    assert dialogue.say("yes") == ["Booked! See you on 2026-09-21 at 11:00, Ana."]
    assert not any("{{" in reply for reply in dialogue.replies)


@pytest.mark.parametrize("words", ["cancel", "never mind", "cancelar"])
def test_a_way_out_at_any_step(words: str) -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    dialogue.say("Ana")
    assert dialogue.say(words) == [
        'OK, I\'ve cancelled that booking. Say "book" whenever you want.'
    ]
    assert dialogue.runs == []


def test_start_over_forgets_what_was_given_and_asks_from_the_top() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    dialogue.say("Ana")
    assert dialogue.say("start over") == [
        "Sure, let's start again.",
        "Great, let's get you booked. What's your name?",
    ]
    assert dialogue.data == {}


def test_talk_to_a_person_in_portuguese_and_back() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("marcar")
    assert dialogue.say("quero falar com atendente") == [
        "Vou chamar um colega: alguém vai responder aqui em breve."
    ]
    assert dialogue.say("oi?") == []  # people answer now
    reply = {"action": "reply", "key": "r1", "by": "Rita", "text": "Oi, sou a Rita!"}
    assert dialogue.send(handover=reply) == ["Oi, sou a Rita!"]
    assert dialogue.send(handover={"action": "release", "key": "h1"}) == ["Qual é o seu nome?"]
    assert dialogue.say("Ana Souza") == ["Obrigado, Ana Souza! Qual é o seu e-mail?"]


def test_a_changed_mind_at_the_confirmation(booked_up_to_the_confirmation: Dialogue) -> None:
    dialogue = booked_up_to_the_confirmation
    assert dialogue.say("make it friday instead") == [
        "So that's 2026-09-25 at 15:00 for Ana (ana@example.com). Shall I book it?"
    ]
    assert dialogue.say("use bob@example.com please") == [
        "So that's 2026-09-25 at 15:00 for Ana (bob@example.com). Shall I book it?"
    ]
    assert dialogue.say("at 4:30 pm then") == [
        "So that's 2026-09-25 at 16:30 for Ana (bob@example.com). Shall I book it?"
    ]
    assert dialogue.say("yes")[0].startswith("Booked! See you on 2026-09-25 at 16:30, Ana.")


def test_a_day_in_the_past_is_refused_with_the_field_sentence() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    dialogue.say("Ana")
    dialogue.say("ana@example.com")
    assert dialogue.say("2026-09-01") == [
        "That day has already passed: which day from today on would suit you?"
    ]
    assert "date" not in dialogue.data


def test_a_second_booking_in_the_same_conversation(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    dialogue = booked_up_to_the_confirmation
    dialogue.say("yes")
    assert dialogue.say("book another one") == [
        "You're booked for 2026-09-21 at 15:00. Shall I cancel it and make a new booking?"
    ]
    assert dialogue.say("yes") == [
        "I've cancelled your booking for 2026-09-21 at 15:00. "
        "Which day would suit you for the new one?"
    ]
    assert dialogue.say("friday at noon") == [
        "So that's 2026-09-25 at 12:00 for Ana (ana@example.com). Shall I book it?"
    ]
    assert dialogue.say("yes")[0].startswith("Booked! See you on 2026-09-25 at 12:00, Ana.")


def test_a_new_booking_never_drops_the_one_booked_unasked(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    """A new booking cleared a confirmed one without a word, so "cancel my booking" then
    cancelled the new one in progress while the user thought of the first."""
    dialogue = booked_up_to_the_confirmation
    dialogue.say("yes")
    dialogue.say("book")
    assert dialogue.say("no") == ["OK, it stays booked: see you on 2026-09-21 at 15:00."]
    assert dialogue.data["confirmed"] is True
    assert dialogue.say("cancel my booking") == [
        "You're booked for 2026-09-21 at 15:00. Shall I cancel that booking?"
    ]


def test_a_new_booking_in_portuguese_asks_before_replacing() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    for said in ("marcar", "Ana Souza", "ana@example.com", "amanhã às 10h", "sim"):
        dialogue.say(said)
    assert dialogue.say("quero marcar outro") == [
        "Você tem um agendamento para 2026-09-21 às 10:00. Quer que eu cancele e faça um novo?"
    ]
    assert dialogue.say("sim") == [
        "Cancelei o seu agendamento de 2026-09-21 às 10:00. Qual dia fica bom para o novo?"
    ]


def test_a_change_out_of_hours_at_the_confirmation_is_refused_out_loud(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    """ "make it 6pm" at the confirmation was dropped without a word."""
    dialogue = booked_up_to_the_confirmation
    assert dialogue.say("make it 6pm") == [
        "We're open from 09:00 to 17:00: which time in those hours suits you? " + CONFIRM
    ]
    assert dialogue.data["time"] == "15:00"
    # A "yes" with a refused change confirms nothing: what it meant is not on offer.
    assert dialogue.say("yes, at 6pm") == [
        "We're open from 09:00 to 17:00: which time in those hours suits you? " + CONFIRM
    ]
    assert dialogue.say("4pm") == [
        "So that's 2026-09-21 at 16:00 for Ana (ana@example.com). Shall I book it?"
    ]


@pytest.mark.parametrize(
    "said",
    [
        "yes, I may be 2 hrs late",
        "yes, as 2 of us",
        "yes, at 3 stars it's fine",
        "yes, mail a@3pm.com too",
        "yes, 3,5 is fine",
    ],
)
def test_a_number_at_the_confirmation_is_no_new_time(
    booked_up_to_the_confirmation: Dialogue, said: str
) -> None:
    """Durations, counts and addresses were read as times and changed the booking."""
    dialogue = booked_up_to_the_confirmation
    [reply] = dialogue.say(said)  # the address is a new e-mail: it is confirmed again
    assert "2026-09-21 at 15:00" in reply, reply
    assert dialogue.data["time"] == "15:00"


def test_the_same_conversation_on_the_database_with_the_fixture(
    dialogue: Callable[..., Dialogue], django_store: Any
) -> None:
    from warlock_sessions.models import Session

    chat = dialogue(booking_agent(), store=django_store, session_id="on-db")
    chat.say("book")
    chat.say("Ana")
    assert chat.advance("2m") == ["Are you still there? I'm here whenever you're ready."]
    assert Session.objects.get(id="on-db").version == 3
    assert chat.data == {"name": "Ana"}


def test_an_accented_name_keeps_an_english_chat_in_english() -> None:
    """ "João Pereira" switched the chat, and its reminders, to Portuguese."""
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("book")
    [asked] = dialogue.say("João Pereira")
    assert "e-mail" in asked and "João" in asked and "Obrigad" not in asked, asked
    assert dialogue.data["name"] == "João Pereira"


def test_impossible_or_past_days_are_not_booked() -> None:
    """ "the 31st of february" was confirmed as 31 October, and "yesterday" was not read as a
    day."""
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    for said in ("book", "Maria Silva", "maria@example.com"):
        dialogue.say(said)
    assert dialogue.say("the 31st of february") == [
        "I couldn't read a date in that. Which day would suit you?"
    ]
    assert dialogue.say("yesterday") == [
        "That day has already passed: which day from today on would suit you?"
    ]
    assert dialogue.say("tomorrow") == ["What time suits you? We're open from 09:00 to 17:00."]


@pytest.mark.parametrize(
    ("first", "reply"),
    [
        (
            "I'd like to book, my name is Laura Chen",
            "Thanks, Laura Chen! What's your e-mail address?",
        ),
        ("quero marcar, meu nome é João Pereira", "Obrigado, João Pereira! Qual é o seu e-mail?"),
        ("book for Maria please", "Great, let's get you booked. What's your name?"),  # no cue
    ],
)
def test_a_name_given_with_the_request_is_not_asked_again(first: str, reply: str) -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    assert dialogue.say(first) == [reply]


def test_the_booking_has_a_time_within_opening_hours() -> None:
    """ "tomorrow at 3" and "next monday at 10am" kept only the day and no time was asked."""
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    for said in ("book", "Ana", "ana@example.com"):
        dialogue.say(said)
    assert dialogue.say("next monday") == ["What time suits you? We're open from 09:00 to 17:00."]
    assert dialogue.say("8am") == [
        "We're open from 09:00 to 17:00: which time in those hours suits you?"
    ]
    assert dialogue.say("whenever") == ["I couldn't read a time in that. What time suits you?"]
    assert dialogue.say("3") == [
        "So that's 2026-09-21 at 15:00 for Ana (ana@example.com). Shall I book it?"
    ]
    assert dialogue.data["time"] == "15:00"


@pytest.mark.parametrize(
    ("said", "day", "time"),
    [
        ("next monday at 10am", "2026-09-21", "10:00"),
        ("tomorrow at 3", "2026-09-21", "15:00"),
        ("friday 2:30pm", "2026-09-25", "14:30"),
        ("the 24th at half past 9", "2026-09-24", "09:30"),
    ],
)
def test_a_day_with_a_time_is_read_at_once(said: str, day: str, time: str) -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    for first in ("book", "Ana", "ana@example.com"):
        dialogue.say(first)
    assert dialogue.say(said) == [
        f"So that's {day} at {time} for Ana (ana@example.com). Shall I book it?"
    ]


def test_the_booking_with_a_time_in_portuguese() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    dialogue.say("quero marcar")
    dialogue.say("João Pereira")
    dialogue.say("joao@example.com")
    assert dialogue.say("amanhã") == [
        "Que horário fica bom para você? Atendemos das 09:00 às 17:00."
    ]
    assert dialogue.say("às 8h") == [
        "Atendemos das 09:00 às 17:00: que horário nesse intervalo fica bom?"
    ]
    assert dialogue.say("às 3 da tarde") == [
        "Então fica 2026-09-21 às 15:00 para João Pereira (joao@example.com). Posso confirmar?"
    ]
    assert dialogue.say("sim") == [
        "Agendado! Até 2026-09-21 às 15:00, João Pereira. A confirmação vai para joao@example.com."
    ]


def test_cancel_after_a_booking_names_it_and_asks_first(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    """ "cancel" after a confirmed booking did not mention the booking."""
    dialogue = booked_up_to_the_confirmation
    dialogue.say("yes")
    assert dialogue.say("cancel") == [
        "You're booked for 2026-09-21 at 15:00. Shall I cancel that booking?"
    ]
    assert dialogue.say("no") == ["OK, it stays booked: see you on 2026-09-21 at 15:00."]
    assert dialogue.data["confirmed"] is True
    dialogue.say("cancel my booking")
    assert dialogue.say("yes") == [
        "Done: I've cancelled your booking for 2026-09-21 at 15:00. "
        'Say "book" whenever you want another.'
    ]
    assert "confirmed" not in dialogue.data
    # Nothing is booked now: "cancel" is about nothing.
    assert "Shall I cancel" not in " ".join(dialogue.say("cancel"))


def test_cancelar_after_a_booking_in_portuguese() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    for said in ("marcar", "Ana Souza", "ana@example.com", "amanhã às 10h", "sim"):
        dialogue.say(said)
    assert dialogue.say("cancelar") == [
        "Você tem um agendamento para 2026-09-21 às 10:00. Quer que eu cancele?"
    ]
    assert dialogue.say("sim") == [
        "Pronto: cancelei o seu agendamento de 2026-09-21 às 10:00. "
        'Diga "marcar" quando quiser outro.'
    ]


def test_a_time_with_a_dot_is_a_time_not_a_new_day(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    """ "at 3.30" at the confirmation moved the booking to the 30th of March."""
    dialogue = booked_up_to_the_confirmation
    assert dialogue.say("at 3.30") == [
        "So that's 2026-09-21 at 15:30 for Ana (ana@example.com). Shall I book it?"
    ]


@pytest.mark.parametrize(
    ("way_out", "reply"),
    [
        ("cancel", "You're booked for 2026-09-21 at 15:00. Shall I cancel that booking?"),
        ("never mind", "OK, it stays booked: see you on 2026-09-21 at 15:00."),
    ],
)
def test_a_way_out_of_the_new_booking_question_leaves_no_question_behind(
    booked_up_to_the_confirmation: Dialogue, way_out: str, reply: str
) -> None:
    """After "book", "cancel", "no", a later "ok thanks" answered the forgotten question
    "Shall I cancel it and make a new booking?" and cancelled the booking."""
    dialogue = booked_up_to_the_confirmation
    dialogue.say("yes")
    dialogue.say("book")
    assert dialogue.say(way_out) == [reply]
    dialogue.say("no")
    dialogue.say("ok thanks")
    assert dialogue.data["confirmed"] is True
    assert [run["flowId"] for run in dialogue.runs] == []


@pytest.mark.parametrize(
    "said",
    [
        "yes, I'll stop by",
        "yes, my travel agent said so",
        "yes, I'm human",
        "yes, I'm so excited",
        # a "no" and a "yes" in one message: asked again, nothing lost
        "no need to cancel, yes",
        "yes, no need to start over",
    ],
)
def test_a_yes_that_mentions_a_way_out_leaves_the_booking_whole(
    booked_up_to_the_confirmation: Dialogue, said: str
) -> None:
    """ "yes, I'll stop by" cancelled the booking, "yes, I'm human" handed it to people and
    "yes, I'm so excited" renamed Ana."""
    dialogue = booked_up_to_the_confirmation
    [reply] = dialogue.say(said)
    assert reply.startswith("Booked! See you on 2026-09-21 at 15:00, Ana.") or reply.endswith(
        CONFIRM
    ), reply
    assert dialogue.data["name"] == "Ana" and dialogue.data["time"] == "15:00"


def test_a_day_no_calendar_has_at_the_confirmation_is_said_to_be_no_date(
    booked_up_to_the_confirmation: Dialogue,
) -> None:
    dialogue = booked_up_to_the_confirmation
    assert dialogue.say("31st of february") == ["I couldn't read a date in that. " + CONFIRM]
    assert dialogue.data["date"] == "2026-09-21"  # the booking as it was
    assert dialogue.say("on the 28th of february") == [
        "So that's 2027-02-28 at 15:00 for Ana (ana@example.com). Shall I book it?"
    ]


def test_cancel_with_nothing_booked_and_thanks_are_answered_as_such() -> None:
    dialogue = Dialogue(booking_agent(), clock=FakeClock("2026-09-20T10:00:00.000Z"))
    assert dialogue.say("cancel") == [
        'There\'s nothing booked to cancel. Say "book" whenever you want an appointment.'
    ]
    assert dialogue.say("thanks!") == [
        'You\'re welcome! Say "book" whenever you want an appointment.'
    ]
    for said in ("book", "Ana", "thanks, it's ana@example.com", "tomorrow at 3"):
        dialogue.say(said)  # thanks inside a booking answer it
    assert dialogue.data["email"] == "ana@example.com"
    dialogue.say("yes")
    assert dialogue.say("thank you!") == ["You're welcome! See you on 2026-09-21 at 15:00."]
    assert dialogue.say("obrigada") == ["De nada! Até 2026-09-21 às 15:00."]
