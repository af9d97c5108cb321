"""Typed values recognised in free text, in English and Portuguese (docs/providers.md).

Each recogniser returns the raw value to hand to the engine (which coerces and validates it),
or ``None`` when the text holds no such value, or one that could only be guessed. Every
recogniser reads at most ``MAX_RECOGNISED_CHARS`` of a message and is linear in what it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .answers import boolean
from .contacts import email, phone
from .dates import impossible, when
from .language import language_of
from .names import introduced_name, name
from .numbers import number
from .options import option
from .times import clock_time

__all__ = [
    "MAX_RECOGNISED_CHARS",
    "boolean",
    "clock_time",
    "email",
    "heard",
    "language_of",
    "name",
    "number",
    "option",
    "phone",
    "value_for",
    "when",
]

#: How much of a message the recognisers read. An answer to a question is short; reading no
#: further bounds what any message can cost, whatever its patterns.
MAX_RECOGNISED_CHARS = 2000


def heard(text: str | None) -> str:
    """The part of a message the recognisers read."""
    return (text or "")[:MAX_RECOGNISED_CHARS]


def value_for(
    field: Mapping[str, Any], text: str, now: datetime, language: str | None, *, asked: bool
) -> Any:
    """The raw value ``field`` takes from ``text`` (free text only when the field was asked);
    ``language`` is the conversation's (``None`` while it is not known)."""
    kind = field["type"]
    form = field.get("format")
    if field.get("enum"):
        return option(text, field["enum"])
    if form == "email":
        return email(text)
    if form == "phone":
        return phone(text)
    if form == "date":
        # A day no calendar has is given as said, and refused as no date (not read as none).
        return when(text, now, language) or impossible(text)
    if form == "time":
        return clock_time(
            text, asked=asked, language=language, low=field.get("min"), high=field.get("max")
        )
    if kind == "boolean":
        return boolean(text) if asked else None
    if kind in ("number", "integer"):
        return number(text) if asked else None
    if form == "name":
        return name(text) if asked else introduced_name(text)
    if not asked:
        return None
    stripped = text.strip()
    return stripped or None
