"""The time-of-day recogniser and the ``time`` format: times as people write them in English
and Portuguese, what is no time at all, and the morning or afternoon read by opening hours."""

from __future__ import annotations

import pytest

from warlock_sessions.engine import Agent
from warlock_sessions.engine.fields import coerce_field
from warlock_sessions.errors import FlowConfigurationError
from warlock_sessions.providers.recognisers import clock_time

OPEN = {"low": "09:00", "high": "17:00"}


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("3pm", "en", "15:00"),
        ("3 p.m.", "en", "15:00"),
        ("at 10am", "en", "10:00"),
        ("15:30", None, "15:30"),
        ("9:05", None, "09:05"),
        ("tomorrow at 3", "en", "15:00"),  # by the opening hours
        ("next monday at 10", "en", "10:00"),
        ("at ten", "en", "10:00"),
        ("at one o'clock", "en", "13:00"),
        ("half past 2", "en", "14:30"),
        ("around noon", "en", "12:00"),
        ("at 8 tonight", "en", "20:00"),
        ("12am", "en", "00:00"),
        ("12pm", "en", "12:00"),
        ("at 3 a.m.", "en", "03:00"),  # said: kept, and the bounds refuse it
        ("15h", "pt", "15:00"),
        ("15h30", "pt", "15:30"),
        ("às 3 da tarde", "pt", "15:00"),
        ("as 10 da manhã", "pt", "10:00"),
        ("às duas", "pt", "14:00"),
        ("às 10 horas", "pt", "10:00"),
        ("amanhã às 3 e meia", "pt", "15:30"),
        ("meio-dia", "pt", "12:00"),
        ("dia 15 às 16h", "pt", "16:00"),
        ("half past 3pm", "en", "15:30"),
        ("half past noon", "en", "12:30"),
        ("meio-dia e meia", "pt", "12:30"),
        ("meia-noite e meia", "pt", "00:30"),
        ("às 3 e meia da tarde", "pt", "15:30"),
        ("tonight at 8", "en", "20:00"),  # said: kept, and the bounds refuse it
        ("at 8 this evening", "en", "20:00"),
        ("hoje à noite às 8", "pt", "20:00"),
        ("this morning at 10", "en", "10:00"),
        ("3pm, not noon", "en", "15:00"),
        ("not noon, 3pm", "en", "15:00"),
        ("noon, not 3pm", "en", "12:00"),
        ("make it 4pm instead of 3pm", "en", "16:00"),
        ("book it for 3pm", "en", "15:00"),
        ("at 3 on friday", "en", "15:00"),
        ("meet at 3 please", "en", "15:00"),
        ("at 10 for 2 people", "en", "10:00"),
        ("às duas", "en", "14:00"),  # the accent says Portuguese whatever the conversation
        ("as 3", "pt", "15:00"),
        ("at 3.30", "en", "15:30"),
        ("às 10.15", "pt", "10:15"),
        # minutes after a space, in words, and in quarters
        ("às 3 e 15", "pt", "15:15"),
        ("às 14 e 30", "pt", "14:30"),
        ("at 3 45pm", "en", "15:45"),
        ("at 11 30", "en", "11:30"),
        ("at four thirty", "en", "16:30"),
        ("quarter past 3", "en", "15:15"),
        ("quarter to 4", "en", "15:45"),
        ("half 3", "en", "15:30"),
        # a time corrected or replaced: the one that stands
        ("not at 3, at 4", "en", "16:00"),
        ("não às 3, às 4", "pt", "16:00"),
        ("change 3pm to 4pm", "en", "16:00"),
        ("move it from 3pm to 4pm", "en", "16:00"),
        ("3pm doesn't work, 4pm", "en", "16:00"),
        ("3pm? no, 4pm", "en", "16:00"),
        ("15h não, 16h", "pt", "16:00"),
        # as people write them in chats
        ("15hs", "pt", "15:00"),
        ("às 3hs", "pt", "15:00"),
        ("à uma da tarde", "pt", "13:00"),
        ("pras 4", "pt", "16:00"),
        ("lá pelas 4", "pt", "16:00"),
        ("às 3 blz", "pt", "15:00"),
        ("at 4 tmrw", "en", "16:00"),
        ("at 4 fri", "en", "16:00"),
        ("at 4 cheers", "en", "16:00"),
        ("at 4ish", "en", "16:00"),
        ("at 4 latest", "en", "16:00"),
        # morning or afternoon from words beside the hour, not anywhere
        ("I'm free tonight but book me tomorrow at 10", "en", "10:00"),
        ("I work in the morning, so at 4", "en", "16:00"),
        # minutes before the hour they are off
        ("quinze para as quatro", "pt", "15:45"),
        ("pode ser dez para as cinco?", "pt", "16:50"),
        ("meio-dia e quinze", "pt", "12:15"),
        ("quarter to 1", "en", "12:45"),
        ("a quarter to 1pm", "en", "12:45"),
        ("10 to 4", "en", "15:50"),
        ("20 past 3", "en", "15:20"),
        ("ao meio dia", "pt", "12:00"),
    ],
)
def test_a_time_as_people_write_it(text: str, language: str | None, expected: str) -> None:
    assert clock_time(text, asked=False, language=language, **OPEN) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm out 3 days",
        "in 3 days",
        "03/10",
        "2026-12-03",
        "at 3/10",
        "the 15th",
        "at 3rd",
        "at one point I wanted to",
        "as two of us",
        "at 3 people",
        "ana3@example.com",
        "+55 11 91234-5678",
        "this afternoon",
        "3",  # a bare number is an hour only as the answer to "what time?"
        # durations
        "2 hrs late",
        "I'll be 2 hours late",
        "it takes 3 hours",
        "for 2h",
        "2h de atraso",
        # counts and other numbers after "at" / "as"
        "as 2 of us",
        "at 3 stars",
        "at 3 kids",
        "at 3,5",
        "3,5",
        # addresses
        "a@3pm.com",
        "see https://example.com/at/3pm",
        "at 3 15 people",
        "at 10 20 minutes late",
        "yes, 1h is fine",
        "yes, we need 2h",
        "yes, 2h please",
        "yes, 1h massage please",
        "yes, we're about 3 or 4",
        "yes, about 4 in total",
        "yes, we'll be around 5 with the kids",
        "yes, half 2 of us are vegan",
        "\u321d" * 2000,  # folds to seven letters each: read to a bound
    ],
)
def test_what_is_no_time(text: str) -> None:
    assert clock_time(text, asked=False, language="en", **OPEN) is None


@pytest.mark.parametrize(
    "text",
    [
        "dura 2 horas",
        "dura 2h",
        "as duas opções",
        "às duas opções",
        "às 3,5",
        "há 3h",
        "moro a 2h daqui",
        "quero as duas",  # both
        "vou levar as 2",
        "sim, vamos as duas",
        "sim, preciso de 1h",
        "sim, sessão de 1h",
        "sim, 1h30 de duração",
        "sim, demora duas e meia",
        "sim, trabalho meio dia",  # a half day
    ],
)
def test_what_is_no_time_in_portuguese(text: str) -> None:
    assert clock_time(text, asked=False, language="pt", **OPEN) is None


@pytest.mark.parametrize(
    ("text", "bounds", "expected"),
    [
        ("3", OPEN, "15:00"),
        ("10", OPEN, "10:00"),
        ("9h", OPEN, "09:00"),
        ("três", OPEN, "15:00"),
        ("10 horas", OPEN, "10:00"),
        ("8", {"low": "18:00", "high": "23:00"}, "20:00"),  # an evening place
        ("8", {}, "08:00"),  # no bounds: eight is as likely the morning
        ("10.30", OPEN, "10:30"),
        ("3 please", OPEN, "15:00"),
        ("about 3", OPEN, "15:00"),
        ("3?", OPEN, "15:00"),
        ("ok 3", OPEN, "15:00"),
        ("three thirty", OPEN, "15:30"),
        ("3ish", OPEN, "15:00"),
        ("3 30", OPEN, "15:30"),
        ("1430", OPEN, "14:30"),
        ("three pm", OPEN, "15:00"),
        ("três da tarde", OPEN, "15:00"),
        ("duas e quinze", OPEN, "14:15"),
        ("10h30min", OPEN, "10:30"),
        ("3", {}, "15:00"),  # ...but nobody books at three in the night
    ],
)
def test_an_answer_to_what_time(text: str, bounds: dict[str, str], expected: str) -> None:
    assert clock_time(text, asked=True, **bounds) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("15:00", (True, "15:00")),
        ("9:05 ", (True, "09:05")),
        ("15:30:00", (True, "15:30")),
        ("17:00", (True, "17:00")),
        ("08:59", (False, "out-of-range")),
        ("17:01", (False, "out-of-range")),
        ("24:00", (False, "bad-value")),
        ("9:75", (False, "bad-value")),
        ("3pm", (False, "bad-value")),  # a model's value must be HH:MM
    ],
)
def test_a_time_field_keeps_hh_mm_within_its_bounds(raw: str, expected: object) -> None:
    field = {"type": "string", "format": "time", "min": "09:00", "max": "17:00"}
    assert coerce_field(field, raw) == expected


@pytest.mark.parametrize(
    ("bound", "message"),
    [("9am", "expected a time like '09:00'"), ("9:00", "expected a time like '09:00'")],
)
def test_a_time_bound_is_refused_unless_hh_mm(bound: str, message: str) -> None:
    fields = {"at": {"type": "string", "format": "time", "min": bound}}
    with pytest.raises(FlowConfigurationError, match=r"fields\.at\.min") as raised:
        Agent([{"id": "f", "steps": [{"id": "s", "collect": ["at"]}]}], fields=fields)
    assert message in str(raised.value)


@pytest.mark.parametrize("kind", ["integer", "number", "boolean"])
def test_a_format_on_a_field_that_is_not_text_is_refused_at_load(kind: str) -> None:
    """An integer field with format time passed the load check, then raised TypeError when a
    value came."""
    fields = {"at": {"type": kind, "format": "time"}}
    with pytest.raises(FlowConfigurationError, match=r"fields\.at\.format.*only text fields"):
        Agent([{"id": "f", "steps": [{"id": "s", "collect": ["at"]}]}], fields=fields)


def test_a_day_written_with_dots_is_no_time_unless_after_at() -> None:
    from datetime import UTC, datetime

    from warlock_sessions.providers.recognisers import when

    now = datetime(2026, 9, 20, 10, tzinfo=UTC)
    assert clock_time("3.10", asked=False, language="en", **OPEN) is None
    assert when("3.10", now, "en") == "2027-03-10"
    assert when("at 3.30", now, "en") is None
    assert when("3.30pm", now, "en") is None
    assert when("at 3.10.2026", now, "en") == "2026-03-10"  # a year makes it a day
