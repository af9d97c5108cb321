"""A time of day the text names, as 24-hour ``HH:MM``: "3pm", "15:30", "15h", "às 3 da
tarde", "at ten", "half past 2", "meio-dia e meia".

A bare number is a time only as the answer to "what time?" (``asked``): "I'm out 3 days"
names none. Elsewhere an hour must show it is one ("3pm", "15:30", "15h", "at 3" followed by
nothing that makes it a count: "at 3 stars" is none), and what reads as a duration ("2 hrs
late", "dura 2h") or is negated ("3pm, not noon") is no time; of several, the first one said.
An hour with nothing to say morning or afternoon ("at 3") takes it from the rest of the
message ("tonight at 8"), else from the field's bounds when they settle it (open 09:00-17:00:
15:00), else it is the afternoon for one to seven (people book at three in the afternoon, not
the night), as written otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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
#: Words anywhere in a message that say which half of the day its hour is in.
MORNING_ANYWHERE = ("this morning", "in the morning", "de manha", "da manha", "esta manha")
AFTERNOON_ANYWHERE = (
    "tonight", "this evening", "this afternoon", "in the afternoon", "in the evening",
    "esta tarde", "esta noite", "a tarde", "a noite", "de tarde", "de noite", "hoje a noite",
)  # fmt: skip
#: Words that may follow "at 3" when it is a time; any other word makes it something else
#: ("at 3 stars", "as duas opções").
_FOLLOWERS = (
    "and", "or", "but", "on", "in", "this", "next", "tomorrow", "today", "tonight", "then",
    "please", "pls", "for", "if", "is", "would", "will", "works", "work", "ok", "okay",
    "fine", "instead", "sharp", "exactly", "maybe", "sounds", "suits", "should", "could",
    "latest", "at", "the", "so", "thanks", "thank", "monday", "tuesday", "wednesday",
    "thursday", "friday", "saturday", "sunday", "i", "we", "with", "to", "tops",
    "e", "ou", "mas", "de", "da", "do", "no", "na", "amanha", "hoje", "depois", "entao",
    "por", "pra", "para", "se", "ta", "esta", "fica", "pode", "seria", "em", "certo",
    "beleza", "obrigado", "obrigada", "segunda", "terca", "quarta", "quinta", "sexta",
    "sabado", "domingo", "que", "eu", "nos", "com", "mesmo",
)  # fmt: skip
_HOUR_WORDS = {word: value for word, value in UNITS.items() if 1 <= value <= 12}
_WORD = "|".join(sorted(_HOUR_WORDS, key=len, reverse=True))
_NAMED = "|".join(re.escape(name) for name in sorted(NAMED_TIMES, key=len, reverse=True))
#: What may follow an hour: minutes (":30", "h30", ".30" before am/pm), "h", "horas",
#: "o'clock", then what says morning or afternoon.
_AFTER = (
    r"(?::(?P<colon>\d{2})|(?P<hmark>h)(?P<h>\d{2})?(?!\w)|\.(?P<dot>\d{2})(?![\d.]))?"
    r"(?P<rest>[^\d/]{0,20})"
)
_CLOCK = re.compile(r"(?<![\w:/.,@-])(?P<hour>\d{1,2})" + _AFTER)
_AT = re.compile(
    r"\b(?P<at>at|as)\s+(?:(?P<hour>\d{1,2})(?!\d)|(?P<word>" + _WORD + r")\b)" + _AFTER
)
_ANY_HOUR = r"(?P<hour>\d{1,2}(?!\d)|(?:" + _WORD + "|" + _NAMED + r")\b)"
_HALF = re.compile(r"\bhalf past " + _ANY_HOUR)
_E_MEIA = re.compile(r"(?<!\w)" + _ANY_HOUR + r"\s+e\s+meia\b")
_NAMED_TIME = re.compile(r"\b(?:" + _NAMED + r")\b")
_BARE = re.compile(
    r"^\s*(?P<hour>\d{1,2}|" + _WORD + r")(?:[.:h](?P<minute>\d{2}))?"
    r"\s*(?:o'clock|h|horas?|hrs?)?\s*[.!]?\s*$"
)
_OCLOCK = re.compile(r"^\s*o'clock\b")
_HOURS_WORD = re.compile(r"^\s*(?:horas?|hrs?|hours?)\b")
_AND_HALF = re.compile(r"^\s+e\s+meia\b")
_NOT_A_TIME = re.compile(r"^(?:[/.,-]\d|(?:st|nd|rd|th|o|a)\b|%)")
_FOLLOWER = re.compile(
    r"^\s*(?:$|[^\w\s]|(?:" + "|".join(_FOLLOWERS) + r")\b|(?:am|pm|a\.m|p\.m|h|horas?)\b)"
)
#: A duration, not a time: "for 2h", "dura 2 horas", "2h late", "há 3h".
_DURATION_BEFORE = re.compile(
    r"\b(?:for|during|takes?|took|lasts?|lasting|within|in|about|dura|duram|durou|durante|"
    r"por|leva|levam|levou|em|ha|faz|daqui a|apos|after|every|cada)\s+$"
)
_DURATION_AFTER = re.compile(
    r"^\s*(?:h|hrs?|hours?|horas?)?\s*(?:late|ago|later|long|away|drive|de atraso|atrasad|"
    r"depois|antes|atras|de viagem|de carro|a pe|daqui|de distancia)"
)
_NEGATED = re.compile(r"(?:\bnot|\bnao|\binstead of|\bem vez de|\brather than|\bexcept)\s*$")
#: E-mail addresses and links name no time, whatever digits they hold ("a@3pm.com").
_ADDRESSES = re.compile(r"\S+@\S+|\b(?:https?://|www\.)\S+")
#: "às" with its accent is Portuguese "at" whatever the conversation's language.
_ACCENTED_AS = re.compile(r"(?<!\w)[àá]s(?!\w)", re.IGNORECASE)


def _either(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


#: Morning or afternoon said after an hour ("3 pm", "10 horas da manhã"), in one pattern.
_MERIDIEM = re.compile(
    rf"\s(?:o'clock\s+|horas?\s+)?(?:(?P<afternoon>{_either(AFTERNOON)})|{_either(MORNING)})(?!\w)"
)
_HALF_OF_DAY = re.compile(
    rf"(?<!\w)(?:(?P<afternoon>{_either(AFTERNOON_ANYWHERE)})|{_either(MORNING_ANYWHERE)})(?!\w)"
)

Candidate = tuple[int, int, bool]  # hour, minute, whether morning or afternoon was said
Found = tuple[int, int, Candidate]  # where it starts, how long it is, what it says


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
    marked = _ACCENTED_AS.sub("at", text)
    # One space between words: no pattern then meets a long run of blanks to backtrack over.
    folded = " ".join(_ADDRESSES.sub(" ", fold(marked).replace("\u2019", "'")).split())
    found = _found(folded, asked, language)
    if found is None:
        return None
    hour, minute, settled = found
    if not settled and 1 <= hour <= 11:
        half = _HALF_OF_DAY.search(folded)
        if half is not None:
            hour = hour % 12 + (12 if half["afternoon"] else 0)
        else:
            hour = _by_bounds(hour, minute, low, high)
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


def _found(folded: str, asked: bool, language: str | None) -> Candidate | None:
    bare = _BARE.match(folded) if asked else None
    if bare:
        return _hour(bare["hour"]), int(bare["minute"] or 0), False
    said = [
        found
        for found in _candidates(folded, language)
        if not _NEGATED.search(folded[max(0, found[0] - 16) : found[0]])
    ]
    if not said:
        return None
    # The first said; of two starting together, the longer ("meio-dia e meia", not "meio-dia").
    return min(said, key=lambda found: (found[0], -found[1]))[2]


def _candidates(folded: str, language: str | None) -> Iterator[Found]:
    for match in _NAMED_TIME.finditer(folded):
        yield match.start(), len(match[0]), (*NAMED_TIMES[match[0]], True)
    for pattern in (_HALF, _E_MEIA):
        for match in pattern.finditer(folded):
            hour = _hour(match["hour"])
            rest = folded[match.end() :]
            yield match.start(), len(match[0]), _settled(hour, 30, rest, match["hour"])
    for match in _AT.finditer(folded):
        if _is_at_time(folded, match, language):
            yield match.start(), len(match[0]), _read(match)
    for match in _CLOCK.finditer(folded):
        if _marked(match) and not _duration(folded, match):
            yield match.start(), len(match[0]), _read(match)


def _is_at_time(folded: str, match: re.Match[str], language: str | None) -> bool:
    """Whether "at 3" / "às duas" is a time: a plain "as" only in Portuguese, a number
    word after "at" but "one" (or after "as" in Portuguese), and nothing after it that makes
    it a count ("at 3 stars", "as 2 of us") or a duration."""
    if match["at"] == "as" and language != "pt":
        return False
    after = folded[match.end("hour" if match["hour"] else "word") :]
    if (not match["dot"] and _NOT_A_TIME.match(after)) or _duration(folded, match):
        return False
    if match["word"] and match["at"] == "at" and match["word"] == "one" and not _marked(match):
        return False
    return _marked(match) or bool(_FOLLOWER.match(match["rest"]))


def _duration(folded: str, match: re.Match[str]) -> bool:
    """Whether the hour reads as a length of time ("for 2h", "2 hrs late"); minutes or
    morning and afternoon make it a time ("for 3pm")."""
    if match["colon"] or match["dot"] or _meridiem(match["rest"]) is not None:
        return False
    before = folded[max(0, match.start() - 12) : match.start()]
    after = folded[match.end("hour") if match["hour"] else match.end("word") :]
    return bool(_DURATION_BEFORE.search(before) or _DURATION_AFTER.match(after))


def _marked(match: re.Match[str]) -> bool:
    """Whether what follows an hour makes it one: minutes, "h", "o'clock", "pm"; "horas"
    only after "at" ("2 horas" alone is as often how long)."""
    after_at = "at" in match.groupdict()
    return bool(
        match["colon"]
        or match["hmark"]
        # "3.10" alone is as often the 3rd of October: minutes after a dot only after "at"
        # or before am/pm
        or (match["dot"] and (after_at or _meridiem(match["rest"]) is not None))
        or _OCLOCK.match(match["rest"])
        or (after_at and _HOURS_WORD.match(match["rest"]))
        or _meridiem(match["rest"]) is not None
    )


def _read(match: re.Match[str]) -> Candidate:
    hour = int(match["hour"]) if match["hour"] else _HOUR_WORDS[match["word"]]
    minute = int(match["colon"] or match["h"] or match["dot"] or 0)
    rest = match["rest"]
    half = _AND_HALF.match(rest)
    if half and not minute:  # "às 3 e meia da tarde"
        minute, rest = 30, rest[half.end() :]
    return _settled(hour, minute, rest, str(hour))


def _settled(hour: int, minute: int, rest: str, said: str) -> Candidate:
    """The hour in 24-hour time by what follows it ("3 pm", "3 da tarde"), and whether that
    settled it (an hour past twelve, zero, or noon and midnight settle themselves)."""
    if said in NAMED_TIMES:
        return hour, minute, True
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
    if text in NAMED_TIMES:
        return NAMED_TIMES[text][0]
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
