"""A date the text names, resolved against the turn's clock ("tomorrow" is relative to the
engine's ``now``, never the wall clock), as ISO ``YYYY-MM-DD``.

Digits alone carry no language: "03/04" is 3 April in a Portuguese conversation, 4 March in
an English one, and not a date at all while the conversation's language is unknown (a wrong
day is worse than asking again). A day with no month ("the 15th", "dia 15") and a month day
with no year are the next such day from today.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from ..text import expanded, fold, squeezed
from .numbers import ONE, UNITS, number_in_words

WEEKDAYS = {
    "monday": 0, "mon": 0, "segunda": 0,
    "tuesday": 1, "tue": 1, "tues": 1, "terca": 1,
    "wednesday": 2, "wed": 2, "quarta": 2,
    "thursday": 3, "thu": 3, "thurs": 3, "quinta": 3,
    "friday": 4, "fri": 4, "sexta": 4,
    "saturday": 5, "sat": 5, "sabado": 5,
    "sunday": 6, "sun": 6, "domingo": 6,
}  # fmt: skip
MONTHS = {
    "january": 1, "jan": 1, "janeiro": 1,
    "february": 2, "feb": 2, "fevereiro": 2, "fev": 2,
    "march": 3, "mar": 3, "marco": 3,
    "april": 4, "apr": 4, "abril": 4, "abr": 4,
    "may": 5, "maio": 5, "mai": 5,
    "june": 6, "jun": 6, "junho": 6,
    "july": 7, "jul": 7, "julho": 7,
    "august": 8, "aug": 8, "agosto": 8, "ago": 8,
    "september": 9, "sep": 9, "sept": 9, "setembro": 9, "set": 9,
    "october": 10, "oct": 10, "outubro": 10, "out": 10,
    "november": 11, "nov": 11, "novembro": 11,
    "december": 12, "dec": 12, "dezembro": 12, "dez": 12,
}  # fmt: skip
RELATIVE_DAYS = {
    "today": 0, "hoje": 0, "tonight": 0,
    "tomorrow": 1, "tmrw": 1, "tmr": 1, "tomoz": 1, "amanha": 1, "amnh": 1,
    # A past day is a day too: the field's bounds refuse it with its own sentence.
    "yesterday": -1, "ontem": -1, "anteontem": -2,
}  # fmt: skip
#: "next week", "semana que vem", "para a semana" (European Portuguese): a week from today.
NEXT_WEEK = ("next week", "semana que vem", "proxima semana", "para a semana")
DAY_AFTER_TOMORROW = (
    "day after tomorrow",
    "depois de amanha",
    "depois d'amanha",
    "depois d amanha",
)

_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMERIC = re.compile(
    r"\b(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2,4}))?\b|\b(\d{1,2})-(\d{1,2})-(\d{2,4})\b"
)
_WORDS = re.compile(r"[a-z]+|\d+(?:st|nd|rd|th|o|a)?")
#: "at 3.30", "às 10.15", "3.30pm": a time of day written with a dot, not a date.
_AT_BEFORE = re.compile(r"\b(?:at|as) $")
_MERIDIEM_AFTER = re.compile(r"\s?[ap]\.?m\b")
_ORDINAL = re.compile(r"^(\d{1,2})(?:st|nd|rd|th|o|a)?$")
#: "dia primeiro": the first of the month.
_DIA_WORDS = {"primeiro": 1}
#: Month abbreviations that are also everyday words ("I'm out 3 days", "dez pessoas"): a
#: month only with an ordinal or a "de"/"of" between ("May 5th", "3 de out").
COMMON_WORDS = frozenset(["may", "mar", "set", "out", "dez"])


def when(text: str, now: datetime, language: str | None) -> str | None:
    """A date the text names, relative to ``now``; ``None`` when there is none, or when only
    the conversation's language could tell which (``language`` is ``"en"``, ``"pt"`` or
    ``None`` for not known yet)."""
    folded = (
        expanded(squeezed(fold(text))).replace("º", "o").replace("ª", "a").replace("\u2019", "'")
    )
    today = now.date()
    iso = _ISO.search(folded)
    if iso:
        found = _safe_date(int(iso[1]), int(iso[2]), int(iso[3]))
    elif (numeric := _NUMERIC.search(folded)) and not _clock_like(folded, numeric):
        found = _numeric(numeric, today, language)
    else:
        words = _WORDS.findall(folded)
        found = _named(words, today) or _relative(folded, words, today)
    return found.isoformat() if found else None


def _clock_like(folded: str, match: re.Match[str]) -> bool:
    """ "at 3.30", "às 10.15", "3.30pm": a time of day written with a dot, not a date (a
    year makes it one: "at 3.10.2026")."""
    if match[0].count(".") != 1 or match[3] is not None:
        return False
    return bool(
        _AT_BEFORE.search(folded, 0, match.start()) or _MERIDIEM_AFTER.match(folded, match.end())
    )


def _numeric(match: re.Match[str], today: date, language: str | None) -> date | None:
    """ "03/10", "3.10.2026", "05-11-2026" (with dashes only with a year: "10-11" is a
    range of hours as often as a date)."""
    dashed = match[4] is not None
    first, second = int(match[4 if dashed else 1]), int(match[5 if dashed else 2])
    year = match[6 if dashed else 3]
    if first > 12 or first == second:
        day, month = first, second
    elif second > 12:
        day, month = second, first
    elif language == "pt":
        day, month = first, second
    elif language == "en":
        day, month = second, first
    else:
        return None  # 03/04 with no language to tell: not guessed
    return _with_year(day, month, year, today)


def _day(word: str) -> int | None:
    match = _ORDINAL.match(word)
    return int(match[1]) if match and 1 <= int(match[1]) <= 31 else None


def _named(words: list[str], today: date) -> date | None:
    """A month's name beside a day, or a day of the month alone. A month named with a day it
    does not have ("the 31st of February") is no date at all, not the next 31st."""
    if any(MONTHS.get(word) is not None and word not in COMMON_WORDS for word in words):
        return _month_named(words, today)
    return _month_named(words, today) or _day_of_month(words, today)


def _month_named(words: list[str], today: date) -> date | None:
    """ "3 de março", "October 3rd", "3rd of October", "3 de março de 2027"; a month's name
    that is also a common word ("may", "out") only with an ordinal or a "de"/"of"."""
    for index, word in enumerate(words):
        month = MONTHS.get(word)
        if month is None:
            continue
        after = _at(words, index + 1)
        day = _day(after)
        if day is not None and (word not in COMMON_WORDS or after != str(day)):
            year = _at(words, index + 2)
            return _with_year(day, month, year if _is_year(year) else None, today)
        before = index - 1
        while _at(words, before) in ("de", "of", "the"):
            before -= 1
        day = _day(_at(words, before)) if before >= 0 else None
        if day is not None and (word not in COMMON_WORDS or before < index - 1):
            year = _at(words, index + 2) if after == "de" else after
            return _with_year(day, month, year if _is_year(year) else None, today)
    return None


def _day_of_month(words: list[str], today: date) -> date | None:
    """ "the 15th", "dia 15", "dia primeiro": the next such day (a bare "the 15" is not)."""
    for index, word in enumerate(words):
        following = _at(words, index + 1)
        day = _day(following) if word in ("dia", "the") else None
        if word == "dia" and day is None:
            day = _DIA_WORDS.get(following)
        if day is not None and (word == "dia" or following != str(day)):
            return _next_day_of_month(day, today)
    return None


def _relative(folded: str, words: list[str], today: date) -> date | None:
    if any(phrase in folded for phrase in DAY_AFTER_TOMORROW):
        return today + timedelta(days=2)
    if any(phrase in folded for phrase in NEXT_WEEK):
        return today + timedelta(weeks=1)
    ahead = _span(words)
    if ahead is not None:
        return today + ahead
    for word in words:
        if word in RELATIVE_DAYS:
            return today + timedelta(days=RELATIVE_DAYS[word])
    for word in words:
        weekday = WEEKDAYS.get(word)
        if weekday is not None:
            # "friday" and "next friday" both mean the coming one, as most people use them.
            return today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
    return None


def _span(words: list[str]) -> timedelta | None:
    """ "in 3 days", "daqui a duas semanas", "dentro de 5 dias", "a week from today"."""
    for index, word in enumerate(words):
        if word in ("in", "em", "daqui", "within", "dentro"):
            ahead = _ahead(words[index + 1 : index + 5])
        elif word == "from" and _at(words, index + 1) in ("now", "today"):
            ahead = _ahead(words[max(0, index - 3) : index])
        else:
            continue
        if ahead is not None:
            return ahead
    return None


def _ahead(words: list[str]) -> timedelta | None:
    """ "3 days", "a week", "duas semanas", "a 3 dias" (after "daqui")."""
    counted = _counted(words)
    if counted is None:
        return None
    amount, unit = counted
    if unit.startswith(("day", "dia")):
        return timedelta(days=amount)
    if unit.startswith(("week", "semana")):
        return timedelta(weeks=amount)
    return None


def _counted(words: list[str]) -> tuple[int, str] | None:
    """The count at the start of ``words`` and the word it counts, past a leading "a" of
    "daqui a" and whatever comes before the count ("about three days")."""
    if words[:1] == ["a"] and words[1:2] and (words[1].isdigit() or words[1] in UNITS):
        words = words[1:]
    while len(words) > 2 and not (words[0].isdigit() or words[0] in UNITS or words[0] in ONE):
        words = words[1:]
    if not words:
        return None
    amount = 1 if words[0] in ONE else number_in_words(words[:1])
    if words[0].isdigit():
        amount = int(words[0])
    unit = next((word for word in words[1:3] if word not in ("e", "and")), "")
    return None if amount is None else (amount, unit)


def _next_day_of_month(day: int, today: date) -> date | None:
    for months_ahead in range(3):
        month = (today.month - 1 + months_ahead) % 12 + 1
        year = today.year + (today.month - 1 + months_ahead) // 12
        found = _safe_date(year, month, day)
        if found is not None and found >= today:
            return found
    return None


def _at(words: list[str], index: int) -> str:
    return words[index] if 0 <= index < len(words) else ""


def _is_year(text: str) -> bool:
    return text.isdigit() and len(text) == 4


def _with_year(day: int, month: int, year: str | None, today: date) -> date | None:
    if year:
        full = int(year) + (2000 if len(year) == 2 else 0)
        return _safe_date(full, month, day)
    found = _safe_date(today.year, month, day)
    if found is not None and found < today:
        found = _safe_date(today.year + 1, month, day)
    return found


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def impossible(text: str) -> str | None:
    """A day no calendar has, named with its month ("the 31st of February", "30 de
    fevereiro"): the words that name it, so that it is refused out loud rather than read as
    no date at all (and, at a confirmation, as no answer)."""
    folded = expanded(squeezed(fold(text))).replace("\u2019", "'")
    words = _WORDS.findall(folded)
    for index, word in enumerate(words):
        month = MONTHS.get(word)
        if month is None or word in COMMON_WORDS:
            continue
        for near in (_at(words, index + 1), *(_at(words, i) for i in range(index - 3, index))):
            day = _day(near)
            if day is not None and day > _LONGEST[month]:
                return f"{near} {word}"
    return None


#: The most days each month ever has.
_LONGEST = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
