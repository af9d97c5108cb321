"""A time of day the text names, as 24-hour ``HH:MM``: "3pm", "15:30", "15h", "às 3 da
tarde", "at ten", "half past 2", "meio-dia".

A bare number is a time only as the answer to "what time?" (``asked``): "I'm out 3 days"
names none. An hour with nothing to say morning or afternoon ("at 3") is read by the
field's bounds when they settle it (open 09:00-17:00: 15:00), else as the afternoon for
one to seven (people book at three in the afternoon, not the night), as written otherwise.
"""

from __future__ import annotations

import re

from ..text import fold
from .numbers import UNITS

#: Words for a whole time of day.
NAMED_TIMES = {
    "noon": (12, 0), "midday": (12, 0), "meio-dia": (12, 0), "meio dia": (12, 0),
    "meiodia": (12, 0), "midnight": (0, 0), "meia-noite": (0, 0), "meia noite": (0, 0),
}  # fmt: skip
MORNING = ("am", "a.m.", "a.m", "da manha", "de manha", "in the morning", "da madrugada")
AFTERNOON = (
    "pm", "p.m.", "p.m", "da tarde", "a tarde", "de tarde", "in the afternoon",
    "in the evening", "da noite", "a noite", "de noite", "at night", "tonight",
)  # fmt: skip
_HOUR_WORDS = {word: value for word, value in UNITS.items() if 1 <= value <= 12}
_WORD = "|".join(sorted(_HOUR_WORDS, key=len, reverse=True))
#: What may follow an hour: minutes (":30", "h30", ".30" before am/pm), "h", "horas",
#: "o'clock", then what says morning or afternoon.
_AFTER = (
    r"(?::(?P<colon>\d{2})|(?P<hmark>h)(?P<h>\d{2})?(?!\w)|\.(?P<dot>\d{2})(?=\s*[ap]\.?m))?"
    r"(?P<rest>[^\d/]{0,20})"
)
_CLOCK = re.compile(r"(?<![\w:/.,-])(?P<hour>\d{1,2})" + _AFTER)
_AT = re.compile(
    r"\b(?P<at>at|as)\s+(?:(?P<hour>\d{1,2})(?!\d)|(?P<word>" + _WORD + r")\b)" + _AFTER
)
_HALF = re.compile(r"\bhalf past (?P<hour>\d{1,2}|" + _WORD + r")\b")
_E_MEIA = re.compile(r"\b(?P<hour>\d{1,2}|" + _WORD + r")\s+e\s+meia\b")
_BARE = re.compile(r"^\s*(?P<hour>\d{1,2}|" + _WORD + r")\s*(?:o'clock|h|horas?|hrs?)?\s*[.!]?\s*$")
_HOURS_WORD = re.compile(r"^\s*(?:horas?|hrs?|o'clock)\b")
_NOT_A_TIME = re.compile(
    r"^(?:[/.-]\d|(?:st|nd|rd|th|o|a)\b|%|\s*(?:days?|dias?|people|pessoas|persons|guests|vezes)\b)"
)


def _either(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


#: Morning or afternoon said after an hour ("3 pm", "10 horas da manhã"), in one pattern.
_MERIDIEM = re.compile(
    rf"\s(?:o'clock\s+|horas?\s+)?(?:(?P<afternoon>{_either(AFTERNOON)})|{_either(MORNING)})(?!\w)"
)

Candidate = tuple[int, int, bool]  # hour, minute, whether morning or afternoon was said


def clock_time(
    text: str,
    *,
    asked: bool,
    language: str | None = None,
    low: str | None = None,
    high: str | None = None,
) -> str | None:
    """The time of day ``text`` names as ``HH:MM``, read between ``low`` and ``high`` when
    only they can tell the morning from the afternoon; ``None`` when it names none."""
    folded = fold(text).replace("\u2019", "'")
    found = _found(folded, asked, language)
    if found is None:
        return None
    hour, minute, settled = found
    if not settled and 1 <= hour <= 11:
        hour = _by_bounds(hour, minute, low, high)
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


def _found(folded: str, asked: bool, language: str | None) -> Candidate | None:
    for phrase, (hour, minute) in NAMED_TIMES.items():
        if re.search(rf"\b{phrase}\b", folded):
            return hour, minute, True
    for pattern in (_HALF, _E_MEIA):
        match = pattern.search(folded)
        if match:
            return _settled(_hour(match["hour"]), 30, folded[match.end() :])
    match = _BARE.match(folded) if asked else None
    if match:
        return _hour(match["hour"]), 0, False
    for match in _AT.finditer(folded):
        if _NOT_A_TIME.match(folded[match.end("hour" if match["hour"] else "word") :]):
            continue
        # "at one point", "as two of us": a number word is an hour after "at" (but "one"),
        # after a Portuguese "às" ("às duas"), or with what marks one ("one o'clock").
        if match["word"] and not (_marked(match) or _hour_after(match, language)):
            continue
        return _read(match)
    for match in _CLOCK.finditer(folded):
        if _marked(match):
            return _read(match)
    return None


def _hour_after(match: re.Match[str], language: str | None) -> bool:
    if match["at"] == "at":
        return match["word"] != "one"
    return language == "pt"


def _marked(match: re.Match[str]) -> bool:
    """Whether what follows an hour makes it one: minutes, "h", "horas", "o'clock", "pm"."""
    return bool(
        match["colon"]
        or match["hmark"]
        or match["dot"]
        or _HOURS_WORD.match(match["rest"])
        or _meridiem(match["rest"]) is not None
    )


def _read(match: re.Match[str]) -> Candidate:
    hour = int(match["hour"]) if match["hour"] else _HOUR_WORDS[match["word"]]
    minute = int(match["colon"] or match["h"] or match["dot"] or 0)
    return _settled(hour, minute, match["rest"])


def _settled(hour: int, minute: int, rest: str) -> Candidate:
    """The hour in 24-hour time by what follows it ("3 pm", "3 da tarde"), and whether that
    settled it (an hour past twelve, or zero, settles itself)."""
    afternoon = _meridiem(rest)
    if hour > 12 or hour == 0:
        return hour, minute, True
    if afternoon is None:
        return hour, minute, False
    return (hour % 12) + (12 if afternoon else 0), minute, True


def _meridiem(rest: str) -> bool | None:
    """``True`` for the afternoon, ``False`` for the morning, ``None`` when not said."""
    said = _MERIDIEM.match(" " + rest.lstrip())
    return None if said is None else said["afternoon"] is not None


def _hour(text: str) -> int:
    return int(text) if text.isdigit() else _HOUR_WORDS[text]


def _by_bounds(hour: int, minute: int, low: str | None, high: str | None) -> int:
    """Morning or afternoon for an hour said without either: the one inside the bounds,
    else the afternoon for one to seven."""
    inside = [
        candidate
        for candidate in (hour, hour + 12)
        if (low is None or f"{candidate:02d}:{minute:02d}" >= low)
        and (high is None or f"{candidate:02d}:{minute:02d}" <= high)
    ]
    if len(inside) == 1:
        return inside[0]
    return hour + 12 if hour <= 7 else hour
