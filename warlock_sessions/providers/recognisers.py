"""Typed values recognised in free text, in English and Portuguese.

Each recogniser returns the raw value to hand to the engine (which coerces and validates it),
or ``None`` when the text holds no such value. Dates come back as ISO ``YYYY-MM-DD``, resolved
against the turn's clock ("tomorrow" is relative to the engine's ``now``, never the wall clock).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from .text import fold, tokens

# A match starts only where a run of address characters starts: searching from every position
# inside a long run would rescan the rest of it each time (quadratic in the run's length).
EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
PHONE = re.compile(r"(?<![\w@])\+?\(?\d[\d\s().-]{6,}\d(?![\w@])")
NUMBER = re.compile(r"(?<![\w.,])[-+]?\d+(?:[.,]\d+)*(?![\w])")

YES = frozenset(
    [
        "yes",
        "y",
        "yeah",
        "yep",
        "yup",
        "sure",
        "ok",
        "okay",
        "correct",
        "right",
        "affirmative",
        "true",
        "sim",
        "s",
        "claro",
        "isso",
        "certo",
        "pode",
        "exato",
        "confirmo",
        "confirmado",
        "positivo",
    ]
)
NO = frozenset(
    [
        "no",
        "n",
        "nope",
        "nah",
        "negative",
        "false",
        "nao",
        "not",
        "never",
        "incorrect",
        "wrong",
        "negativo",
        "nunca",
        "errado",
    ]
)

WEEKDAYS = {
    "monday": 0,
    "mon": 0,
    "segunda": 0,
    "tuesday": 1,
    "tue": 1,
    "terca": 1,
    "wednesday": 2,
    "wed": 2,
    "quarta": 2,
    "thursday": 3,
    "thu": 3,
    "quinta": 3,
    "friday": 4,
    "fri": 4,
    "sexta": 4,
    "saturday": 5,
    "sat": 5,
    "sabado": 5,
    "sunday": 6,
    "sun": 6,
    "domingo": 6,
}
MONTHS = {
    "january": 1,
    "jan": 1,
    "janeiro": 1,
    "february": 2,
    "feb": 2,
    "fevereiro": 2,
    "fev": 2,
    "march": 3,
    "mar": 3,
    "marco": 3,
    "april": 4,
    "apr": 4,
    "abril": 4,
    "abr": 4,
    "may": 5,
    "maio": 5,
    "mai": 5,
    "june": 6,
    "jun": 6,
    "junho": 6,
    "july": 7,
    "jul": 7,
    "julho": 7,
    "august": 8,
    "aug": 8,
    "agosto": 8,
    "ago": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "setembro": 9,
    "set": 9,
    "october": 10,
    "oct": 10,
    "outubro": 10,
    "out": 10,
    "november": 11,
    "nov": 11,
    "novembro": 11,
    "december": 12,
    "dec": 12,
    "dezembro": 12,
    "dez": 12,
}
RELATIVE_DAYS = {"today": 0, "hoje": 0, "tomorrow": 1, "amanha": 1, "tonight": 0}
NAME_CUES = (
    "my name is",
    "i am",
    "i'm",
    "im",
    "this is",
    "call me",
    "it's",
    "its",
    "meu nome e",
    "me chamo",
    "eu sou",
    "sou o",
    "sou a",
    "sou",
    "aqui e o",
    "aqui e a",
    "e o",
    "e a",
)
PORTUGUESE_HINTS = frozenset(
    [
        "nao",
        "sim",
        "oi",
        "ola",
        "obrigado",
        "obrigada",
        "voce",
        "meu",
        "minha",
        "amanha",
        "hoje",
        "quero",
        "bom",
        "dia",
        "tarde",
        "noite",
        "email",
        "telefone",
        "nome",
    ]
)


#: How much of a message the recognisers read. An answer to a question is short; reading no
#: further bounds what any message can cost, whatever its patterns.
MAX_RECOGNISED_CHARS = 2000


def heard(text: str | None) -> str:
    """The part of a message the recognisers read."""
    return (text or "")[:MAX_RECOGNISED_CHARS]


def language_of(text: str) -> str:
    """``"pt"`` when the text reads as Portuguese, else ``"en"``."""
    words = set(tokens(text))
    has_marks = any(char in text.lower() for char in "ãõçáéíóúâêô")
    return "pt" if has_marks or words & PORTUGUESE_HINTS else "en"


def email(text: str) -> str | None:
    match = EMAIL.search(text)
    return match[0].lower() if match else None


def phone(text: str) -> str | None:
    for match in PHONE.finditer(text):
        digits = re.sub(r"\D", "", match[0])
        if 8 <= len(digits) <= 15:
            return ("+" if match[0].lstrip().startswith("+") else "") + digits
    return None


def number(text: str) -> str | None:
    """The first number, as written (``"1.500,50"``, ``"42"``): the engine's coercion decides."""
    match = NUMBER.search(text)
    return match[0] if match else None


def boolean(text: str) -> bool | None:
    words = tokens(text)
    said_no = any(word in NO for word in words)
    said_yes = any(word in YES for word in words)
    if said_no == said_yes:
        return None
    return said_yes


def option(text: str, options: Sequence[Any]) -> Any:
    """The one enum option the text names (whole words, accents ignored), else ``None``."""
    folded = f" {' '.join(tokens(text))} "
    named = [choice for choice in options if f" {' '.join(tokens(str(choice)))} " in folded]
    return named[0] if len(named) == 1 else None


def when(text: str, now: datetime, language: str) -> str | None:
    """A date the text names, relative to ``now``, as ISO text; ``None`` if there is none."""
    folded = fold(text)
    today = now.date()
    found = _explicit_date(folded, today, language) or _relative_date(folded, today)
    return found.isoformat() if found else None


def _explicit_date(folded: str, today: date, language: str) -> date | None:
    iso = re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", folded)
    if iso:
        return _safe_date(int(iso[1]), int(iso[2]), int(iso[3]))
    slashed = re.search(r"\b(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2,4}))?\b", folded)
    if slashed:
        first, second = int(slashed[1]), int(slashed[2])
        day, month = (first, second) if language == "pt" or first > 12 else (second, first)
        return _with_year(day, month, slashed[3], today)
    return _month_name_date(folded.replace(",", " ").split(), today)


_ORDINAL = re.compile(r"(st|nd|rd|th)$")


def _month_name_date(words: list[str], today: date) -> date | None:
    """ "3 de março", "march 3rd 2027", "3 march": a day beside a month's name, and a year
    after the day when the day comes after the month."""
    for index, word in enumerate(words):
        month = MONTHS.get(word.rstrip("."))
        if month is None or len(word) < 3:
            continue
        before = _word(words, index - 2 if _word(words, index - 1) == "de" else index - 1)
        after = _ORDINAL.sub("", _word(words, index + 1))
        if _is_day(after):
            year = _word(words, index + 2)
            return _with_year(int(after), month, year if year.isdigit() else None, today)
        before = _ORDINAL.sub("", before)
        if _is_day(before):
            return _with_year(int(before), month, None, today)
    return None


def _word(words: list[str], index: int) -> str:
    return words[index] if 0 <= index < len(words) else ""


def _is_day(text: str) -> bool:
    return text.isdigit() and 1 <= int(text) <= 31


def _relative_date(folded: str, today: date) -> date | None:
    if "depois de amanha" in folded or "day after tomorrow" in folded:
        return today + timedelta(days=2)
    words = re.findall(r"[a-z]+|\d+", folded)
    for index, word in enumerate(words):
        if word in RELATIVE_DAYS:
            return today + timedelta(days=RELATIVE_DAYS[word])
        if word in ("in", "em", "daqui") and index + 2 < len(words) and words[index + 1].isdigit():
            unit = words[index + 2]
            amount = int(words[index + 1])
            if unit.startswith(("day", "dia")):
                return today + timedelta(days=amount)
            if unit.startswith(("week", "semana")):
                return today + timedelta(weeks=amount)
    for word in words:
        weekday = WEEKDAYS.get(word)
        if weekday is None:
            continue
        # "friday" and "next friday" both mean the coming one, as most people use them.
        return today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
    return None


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


def name(text: str) -> str | None:
    """A person's name: the words after a cue ("my name is", "me chamo"), else the short answer."""
    cleaned = re.sub(r"[!?.;]+$", "", text.strip())
    lowered = fold(cleaned)
    for cue in NAME_CUES:
        if lowered.startswith(cue + " "):
            cleaned = cleaned[len(cue) + 1 :].strip()
            break
    words = [word for word in re.split(r"\s+", cleaned) if word]
    if not 1 <= len(words) <= 5 or any(char.isdigit() or char == "@" for char in cleaned):
        return None
    if boolean(cleaned) is not None and len(words) == 1:
        return None
    return " ".join(word[:1].upper() + word[1:] for word in words)


def value_for(
    field: Mapping[str, Any], text: str, now: datetime, language: str, *, asked: bool
) -> Any:
    """The raw value ``field`` takes from ``text`` (free text only when the field was asked)."""
    kind = field["type"]
    form = field.get("format")
    if field.get("enum"):
        return option(text, field["enum"])
    if form == "email":
        return email(text)
    if form == "phone":
        return phone(text)
    if form == "date":
        return when(text, now, language)
    if kind == "boolean":
        return boolean(text) if asked else None
    if kind in ("number", "integer"):
        return number(text) if asked else None
    if not asked:
        return None
    if form == "name":
        return name(text)
    stripped = text.strip()
    return stripped or None
