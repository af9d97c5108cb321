"""Fields: what counts as known, what a talk step still needs, and typed coercion of raw values."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import regex

DEFAULT_MAX_ASKS = 3
FIELD_TYPES = frozenset({"string", "number", "integer", "boolean"})
#: Optional ``format`` of a string field: a hint for models (the rule model's recognisers),
#: and a rule every model's value must keep (``coerce_field``).
FIELD_FORMATS = frozenset({"email", "phone", "date", "time", "name"})
_TRUE_WORDS = frozenset({"true", "sim", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "não", "nao", "no", "0"})
# A plain decimal (JavaScript's Number() also takes hex and empty text; a person never means those).
#: How long a field's pattern may take on one value.
PATTERN_TIMEOUT_S = 0.05
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: A time of day as a model may write it: "15:30", "9:05", "15:30:00".
_CLOCK_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_EMAIL = regex.compile(r"^[^@\s;,{}<>()\[\]]+@[^@\s;,{}<>()\[\]]+\.(?=[\w-]*\p{L})[\w-]{2,}$")
#: A name is letters with what names hold between them (spaces of any kind, apostrophes,
#: hyphens, dots, middle dots, commas, joiners); never a digit or a sign of markup or code.
_NAME = regex.compile(r"^(?=.*\p{L})[^\d;:{}\[\]()<>@#$%^&*=+_|\\/\"?!~`]{1,100}$")
_PHONE = regex.compile(r"^\(?\+?[\d\s().\-/]{6,30}(?:\s*(?:ext\.?|x|#)\s*\d{1,6})?$", regex.I)
#: What a value of each ``format`` must look like, whichever model gave it (a model echoing
#: its prompt, "string; name; …", is no name).
_FORMATS: dict[str, Callable[[str], bool]] = {
    "email": lambda text: _EMAIL.match(text) is not None,
    "phone": lambda text: (
        _PHONE.match(text) is not None and sum(char.isdigit() for char in text) >= 6
    ),
    "name": lambda text: _NAME.match(text) is not None,
    "date": lambda text: _real_date(text) is not None,
    "time": lambda text: real_time(text) is not None,
}
#: The formats kept as their canonical text, whatever surrounded or padded the value.
_CANONICAL: dict[str, Callable[[str], str | None]] = {
    "date": lambda text: _real_date(text),
    "time": lambda text: real_time(text),
}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def is_known(value: object) -> bool:
    """A value is known unless it is missing, ``None`` or ``""``."""
    return value is not None and value != ""


def pending_fields(
    collect: Sequence[str],
    max_asks: int,
    data: Mapping[str, Any],
    asked: Mapping[str, int],
    answering: bool = False,
    required: Collection[str] = (),
) -> list[str]:
    """The step's fields still unknown and not yet asked ``max_asks`` times, in order. When
    the message ``answering`` the step is read, a field asked exactly ``max_asks`` times is
    pending too: the answer to its last ask is read before the limit applies. A ``required``
    field is pending until it is known: it is never given up."""
    limit = max_asks + 1 if answering else max_asks
    return [
        field
        for field in collect
        if not is_known(data.get(field)) and (field in required or asked.get(field, 0) < limit)
    ]


def given_up(
    collect: Sequence[str],
    max_asks: int,
    data: Mapping[str, Any],
    asked: Mapping[str, int],
    required: Collection[str] = (),
) -> list[str]:
    """The step's fields still unknown after ``max_asks`` asks, whose give-up is not yet
    told (a told give-up counts one ask past the limit); never a ``required`` one."""
    return [
        field
        for field in collect
        if not is_known(data.get(field))
        and asked.get(field, 0) == max_asks
        and field not in required
    ]


def required_of(fields: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> set[str]:
    """Which of ``names`` are ``required`` (never given up)."""
    return {name for name in names if fields[name].get("required")}


def extract_mode(field: Mapping[str, Any]) -> str:
    """Where a value may be harvested from: ``anywhere`` unless set (booleans: only when asked)."""
    return field.get("extract") or ("asked" if field["type"] == "boolean" else "anywhere")


def coerce_field(
    field: Mapping[str, Any], raw: object, now: datetime | None = None
) -> tuple[bool, Any]:
    """``(True, value)`` typed for the field, or ``(False, code)`` (bad-value, not-in-enum,
    out-of-range, no-match).

    Numbers accept a decimal comma (``"1500,50"`` -> 1500.5) but not thousands separators
    (``"1.500,50"`` is a bad value); integers truncate; booleans accept true/sim/yes/1 and
    false/não/nao/no/0. Then the field's constraints: ``min``/``max`` for numbers and for
    dates (``format: "date"``, ISO dates or ``"today"``, which needs ``now``), and
    ``pattern`` (a regular expression the whole text must match). A time (``format:
    "time"``) is 24-hour ``HH:MM``, bounded by ``min``/``max`` of the same form (opening
    hours).
    """
    value = _coerce_scalar(field["type"], raw)
    if value is None or not _has_format(field, value):
        return False, "bad-value"
    canonical = _CANONICAL.get(field.get("format") or "")
    if canonical is not None and isinstance(value, str):
        value = canonical(value)  # "9:05 " is kept as "09:05", an ISO date as just that
    allowed = field.get("enum")
    if allowed is not None and not any(
        type(value) is type(option) and value == option for option in allowed
    ):
        return False, "not-in-enum"
    problem = _constraint_problem(field, value, now)
    return (False, problem) if problem else (True, value)


def _constraint_problem(field: Mapping[str, Any], value: Any, now: datetime | None) -> str | None:
    pattern = field.get("pattern")
    if pattern is not None and isinstance(value, str) and not _matches(pattern, value):
        return "no-match"
    low, high = field.get("min"), field.get("max")
    if low is None and high is None:
        return None
    if field.get("format") == "date":  # a real ISO date by now (its format was checked)
        low, high = _date_bound(low, now), _date_bound(high, now)
    elif field.get("format") == "time":  # "HH:MM" by now: compared as text, like ISO dates
        low, high = real_time(low), real_time(high)
    elif isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        return "out-of-range"
    return None


def _has_format(field: Mapping[str, Any], value: Any) -> bool:
    check = _FORMATS.get(field.get("format") or "")
    return check is None or not isinstance(value, str) or bool(check(value.strip()))


def _real_date(value: Any) -> str | None:
    """``value`` as an ISO date, if it is one and a real one: all of it ("2026-09-25
    17:43:08, " is not), and a day that exists ("2026-13-45" is not)."""
    if not isinstance(value, str) or not _ISO_DATE.match(value.strip()):
        return None
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        return None


def real_time(value: Any) -> str | None:
    """``value`` as a 24-hour ``HH:MM``, if it is a time of day that exists ("24:00" and
    "9:75" are not); seconds are dropped."""
    match = _CLOCK_TIME.match(value.strip()) if isinstance(value, str) else None
    if match is None or int(match[1]) > 23 or int(match[2]) > 59 or int(match[3] or 0) > 59:
        return None
    return f"{int(match[1]):02d}:{match[2]}"


def _matches(pattern: str, value: str) -> bool:
    """Whether the whole of ``value`` matches; a pattern that backtracks without end on what
    a user typed is stopped and counts as no match."""
    try:
        return regex.fullmatch(pattern, value, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return False


def _date_bound(bound: str | None, now: datetime | None) -> str | None:
    """An ISO date bound; ``"today"`` is ``now``'s date (no bound without a clock)."""
    if bound != "today":
        return bound
    return now.date().isoformat() if now is not None else None


def _coerce_scalar(kind: str, raw: object) -> Any:
    coerce = _COERCERS.get(kind)
    return coerce(kind, raw) if coerce is not None else None


def _as_string(kind: str, raw: object) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, int | float):
        return _number_text(raw)
    return None


def _as_number(kind: str, raw: object) -> int | float | None:
    """A number from a number or from text like "3,5" (never from a boolean); ``integer``
    truncates, and a whole number that did not come as a float stays an int."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        number = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().replace(",", ".", 1)
        if not _NUMBER.match(text):
            return None
        number = float(text)
    else:
        return None
    if not math.isfinite(number):
        return None
    if kind == "integer":
        return math.trunc(number)
    return int(number) if number.is_integer() and not isinstance(raw, float) else number


def _as_boolean(kind: str, raw: object) -> bool | None:
    if isinstance(raw, bool):
        return raw
    word = raw.strip().lower() if isinstance(raw, str) else ""
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    return None


_COERCERS: dict[str, Callable[[str, object], Any]] = {
    "string": _as_string,
    "number": _as_number,
    "integer": _as_number,
    "boolean": _as_boolean,
}


def _number_text(value: float) -> str:
    """A number as JavaScript's String() would write it (1.0 -> "1")."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
