"""A time of day the text names, as 24-hour ``HH:MM``: "3pm", "15:30", "15h", "às 3 da
tarde", "at ten", "half past 2", "quarter to 4", "meio-dia e meia", "às 3 e 15".

A bare number is a time only as the answer to "what time?" (``asked``): "I'm out 3 days"
names none. Elsewhere an hour must show it is one ("3pm", "15:30", "15h", "at 3" followed by
nothing that makes it a count: "at 3 stars" is none), and what reads as a duration ("2 hrs
late", "dura 2h"), is negated ("3pm, not noon") or is replaced ("change 3pm to 4pm") is no
time; of the others, the first one said. An hour with nothing to say morning or afternoon
("at 3") takes it from words beside it ("tonight at 8"), else from the field's bounds when
they settle it (open 09:00-17:00: 15:00), else it is the afternoon for one to seven (people
book at three in the afternoon, not the night), as written otherwise.
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
#: Minutes said in words after an hour ("four thirty", "três e quinze").
MINUTE_WORDS = {
    "fifteen": 15, "thirty": 30, "forty five": 45, "forty-five": 45, "quinze": 15,
    "trinta": 30, "quarenta e cinco": 45, "meia": 30,
}  # fmt: skip
MORNING = ("am", "a.m.", "a.m", "da manha", "de manha", "in the morning", "da madrugada")
AFTERNOON = (
    "pm", "p.m.", "p.m", "da tarde", "a tarde", "de tarde", "in the afternoon",
    "in the evening", "da noite", "a noite", "de noite", "at night", "tonight",
)  # fmt: skip
#: Words beside an hour that say which half of the day it is in ("tonight at 8").
MORNING_BESIDE = ("this morning", "in the morning", "de manha", "da manha", "esta manha")
AFTERNOON_BESIDE = (
    "tonight", "this evening", "this afternoon", "in the afternoon", "in the evening",
    "esta tarde", "esta noite", "a tarde", "a noite", "de tarde", "de noite", "hoje a noite",
)  # fmt: skip
#: How far before and after an hour such words still speak of it.
BEFORE, AFTER = 12, 24
#: Words that may follow "at 3" when it is a time; any other word makes it something else
#: ("at 3 stars", "as duas opções").
_FOLLOWERS = (
    "and", "or", "but", "on", "in", "this", "next", "tomorrow", "tmrw", "tmr", "today",
    "tonight", "then", "please", "pls", "for", "if", "is", "would", "will", "works", "work",
    "ok", "okay", "fine", "instead", "sharp", "exactly", "maybe", "sounds", "suits",
    "should", "could", "latest", "at", "the", "so", "thanks", "thank", "thx", "cheers",
    "yes", "yeah", "yep", "ish", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "i", "we", "with",
    "to", "tops",
    "e", "ou", "mas", "de", "da", "do", "no", "na", "amanha", "hoje", "depois", "entao",
    "por", "pra", "para", "se", "ta", "esta", "fica", "pode", "seria", "em", "certo",
    "beleza", "blz", "valeu", "combinado", "fechado", "sim", "obg", "obrigado", "obrigada",
    "segunda", "terca", "quarta", "quinta", "sexta", "sabado", "domingo", "que", "eu", "nos",
    "com", "mesmo",
)  # fmt: skip
#: Words for "at" before an hour: "às" (written "as" too, so only in Portuguese), "pelas",
#: "pras" ("around 3" and "about 4" are as often counts: only in an answer to "what time?").
_AT_WORDS = ("at", "as", "pras", "pelas")
#: Words before "as duas" that make it "both" ("quero as duas"), not two o'clock.
_TAKING = (
    "levar", "levo", "quero", "queria", "pegar", "pego", "escolho", "prefiro", "compro",
    "comprar", "todas", "ambas", "vejo", "gostei", "gosto", "vamos", "somos", "seremos",
    "sao", "ficam",
)  # fmt: skip
_HOUR_WORDS = {word: value for word, value in UNITS.items() if 1 <= value <= 12}


def _either(words: tuple[str, ...] | list[str]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


_WORD = _either(list(_HOUR_WORDS))
_NAMED = _either(list(NAMED_TIMES))
_MINUTE_WORD = _either(list(MINUTE_WORDS))
#: What may follow an hour: minutes (":30", "h30", ".30", " 30", " e 15", " thirty"), "h",
#: then, looked at but not taken (so that a later hour is still found), what comes next.
_AFTER = (
    r"(?::(?P<colon>\d{2})|(?P<hmark>hs?)(?P<h>\d{2})?(?!\w)|\.(?P<dot>\d{2})(?![\d.])"
    r"|\s(?:e\s)?(?P<spaced>[0-5]\d)(?![\d.,:/])|\s(?:e\s)?(?P<mword>" + _MINUTE_WORD + r")\b)?"
    r"(?=(?P<rest>[^\d/]{0,20}))"
)
_CLOCK = re.compile(r"(?<![\w:/.,@-])(?P<hour>\d{1,2})" + _AFTER)
_AT = re.compile(
    r"\b(?P<at>"
    + _either(list(_AT_WORDS))
    + r")\s(?:(?P<hour>\d{1,2})(?!\d)|(?P<word>"
    + _WORD
    + r")\b)"
    + _AFTER
)
_ANY_HOUR = r"(?P<hour>\d{1,2}(?!\d)|(?:" + _WORD + "|" + _NAMED + r")\b)"
_UK_HALF = re.compile(r"\bhalf (?P<hour>\d{1,2}(?!\d)|(?:" + _WORD + r")\b)")
#: Minutes said before the hour they are off: "10 to 4", "half past 2", "quinze para as 4".
_OFF_WORDS = {
    "five": 5, "ten": 10, "twenty": 20, "fifteen": 15, "quarter": 15, "half": 30,
    "cinco": 5, "dez": 10, "vinte": 20, "quinze": 15,
}  # fmt: skip
_MINUTES_OFF = re.compile(
    r"(?<![\w:.,])(?:a )?(?P<minutes>[1-5]?\d|" + _either(list(_OFF_WORDS)) + r")"
    r" (?P<way>past|to|para as|para a|pras|pra) " + _ANY_HOUR
)
_E_MEIA = re.compile(r"(?<!\w)" + _ANY_HOUR + r" e meia\b")
#: "meio dia" apart is a half day ("trabalho meio dia") unless "ao meio dia".
_NAMED_TIME = re.compile(
    r"(?:\b(?:" + _either([name for name in NAMED_TIMES if name != "meio dia"]) + r")"
    r"|(?<=\b(?:ao|at|as) )meio dia)\b"
)
_PAST_NAMED = re.compile(r" e (?P<m>quinze|meia|[0-5]\d)\b")
#: A whole answer to "what time?": "3", "3 please", "about 3", "3 30", "1430", "três da
#: tarde", "duas e quinze", "10h30min".
_BARE = re.compile(
    r"^(?:(?:about|around|ok|okay|maybe|say|perhaps|umas|tipo|pelas|la pelas) )?"
    r"(?:(?P<hhmm>[01]\d|2[0-3])(?P<mm>[0-5]\d)|(?P<hour>\d{1,2}|" + _WORD + r")"
    r"(?:[.:h](?P<minute>\d{2})(?:min)?| (?:e )?(?P<spaced>[0-5]\d)| (?:e )?(?P<mword>"
    + _MINUTE_WORD
    + r"))?)"
    r" ?(?:o'clock|hs?|horas?|ish)?(?P<rest>(?: (?:da|de|a) (?:manha|tarde|noite)| ?[ap]\.?m\.?)?)"
    r" ?(?:please|pls|por favor)? ?[.!?]?$"
)
_OCLOCK = re.compile(r"^ ?o'clock\b")
_HOURS_WORD = re.compile(r"^ ?(?:horas?|hrs?|hours?)\b")
_NOT_A_TIME = re.compile(r"^(?:[/.,-]\d|(?:st|nd|rd|th|o|a)\b|%)")
_FOLLOWER = re.compile(
    r"^ ?(?:$|[^\w\s]|(?:" + "|".join(_FOLLOWERS) + r")\b|(?:am|pm|a\.m|p\.m|hs?|horas?)\b)"
)
#: A duration, not a time: "for 2h", "dura 2 horas", "2h late", "há 3h", "a 2h daqui".
_DURATION_BEFORE = re.compile(
    r"\b(?:for|during|takes?|took|lasts?|lasting|within|in|about|dura|duram|durou|durante|"
    r"por|leva|levam|levou|em|ha|faz|daqui a|apos|after|every|cada|need|needs|de|demora|"
    r"demoro|precisa|preciso|of)\s$"
)
_DURATION_AFTER = re.compile(
    r"^ ?(?:hs?(?:\d{2})?|hrs?|hours?|horas?)? ?(?:(?:late|ago|later|long|away|drive|min|"
    r"minutes|minutos|de atraso|depois|antes|atras|de viagem|de carro|a pe|daqui|"
    r"de distancia|de duracao|duracao|massage|session|sessao|is fine|is enough|"
    r"e suficiente)\b|atrasad)"
)
_NEGATED = re.compile(r"(?:\bnot|\bnao|\binstead of|\bem vez de|\brather than|\bexcept)\s?$")
#: What makes the time just said the one being replaced: "3pm to 4pm", "15h não, 16h".
_REPLACED = re.compile(
    r"^[?!.,]? ?(?:to|para|pra|por|->|no|nao|doesn't work|does not work|won't work|"
    r"isn't good|is no good|nao da|nao pode|nao serve)\b"
)
_SAID_WITH_IT = re.compile(
    r"^ ?(?:o'clock|hs?|horas?|(?:da|de|a) (?:manha|tarde|noite|madrugada)|[ap]\.?m\.?)?"
)
#: E-mail addresses and links name no time, whatever digits they hold ("a@3pm.com").
_ADDRESSES = re.compile(r"(?<!\S)[^\s@]*@\S*|\b(?:https?://|www\.)\S+")
#: The most of a folded message read (folding may lengthen it: "㈝" is seven letters).
MAX_FOLDED = 2000
#: "às" with its accent (and "à uma") is Portuguese "at" whatever the conversation's language.
_ACCENTED_AT = re.compile(r"(?<!\w)(?:[àá]s|à(?= uma\b))(?!\w)", re.IGNORECASE)
_TAKEN = re.compile(r"\b(?:" + "|".join(_TAKING) + r")\s$")
#: Morning or afternoon said after an hour ("3 pm", "10 horas da manhã"), in one pattern.
_MERIDIEM = re.compile(
    rf"\s(?:o'clock\s+|horas?\s+)?(?:(?P<afternoon>{_either(AFTERNOON)})|{_either(MORNING)})(?!\w)"
)
_HALF_OF_DAY = re.compile(
    rf"(?<!\w)(?:(?P<afternoon>{_either(AFTERNOON_BESIDE)})|{_either(MORNING_BESIDE)})(?!\w)"
)

Candidate = tuple[int, int, bool]  # hour, minute, whether morning or afternoon was said
Found = tuple[int, int, Candidate]  # where it starts, where its time ends, what it says


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
    marked = _ACCENTED_AT.sub("at", text)
    # One space between words: no pattern then meets a long run of blanks to backtrack over.
    folded = fold(marked)[:MAX_FOLDED].replace("\u2019", "'")
    folded = " ".join(_ADDRESSES.sub(" ", folded).split())
    found = _found(folded, asked, language)
    if found is None:
        return None
    start, end, (hour, minute, settled) = found
    if not settled and 1 <= hour <= 11:
        half = _HALF_OF_DAY.search(folded[max(0, start - BEFORE) : end + AFTER])
        if half is not None:
            hour = hour % 12 + (12 if half["afternoon"] else 0)
        else:
            hour = _by_bounds(hour, minute, low, high)
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


def _found(folded: str, asked: bool, language: str | None) -> Found | None:
    bare = _BARE.match(folded) if asked else None
    if bare:
        return 0, len(folded), _bare_time(bare)
    candidates = sorted(_candidates(folded, language), key=lambda found: (found[0], -found[1]))
    said = [
        found
        for index, found in enumerate(candidates)
        if not _NEGATED.search(folded[max(0, found[0] - 16) : found[0]])
        and not _replaced(folded, found, candidates[index + 1 :])
    ]
    # The first said; of two starting together, the longer ("meio-dia e meia", not "meio-dia").
    return said[0] if said else None


def _replaced(folded: str, found: Found, later: list[Found]) -> bool:
    """Whether a later time replaces this one ("change 3pm to 4pm", "15h não, 16h")."""
    if not any(other[0] >= found[1] for other in later):
        return False
    after = folded[found[1] :]
    after = after[_SAID_WITH_IT.match(after).end() :]  # type: ignore[union-attr]
    return bool(_REPLACED.match(after))


def _candidates(folded: str, language: str | None) -> Iterator[Found]:
    yield from _named(folded)
    yield from _off_the_hour(folded)
    yield from _halves(folded)
    for match in _AT.finditer(folded):
        if _is_at_time(folded, match, language):
            yield match.start(), match.end(), _read(match)
    for match in _CLOCK.finditer(folded):
        if _marked(match) and not _duration(folded, match) and not _bare_hours(match):
            yield match.start(), match.end(), _read(match)


def _named(folded: str) -> Iterator[Found]:
    """ "noon", "meio-dia e quinze"."""
    for match in _NAMED_TIME.finditer(folded):
        hour, minute = NAMED_TIMES[match[0]]
        past = _PAST_NAMED.match(folded, match.end())
        if past:
            minute = MINUTE_WORDS[past["m"]] if past["m"] in MINUTE_WORDS else int(past["m"])
        yield match.start(), past.end() if past else match.end(), (hour, minute, True)


def _off_the_hour(folded: str) -> Iterator[Found]:
    """ "half past 2", "quarter to 4", "10 to 4", "quinze para as quatro"."""
    for match in _MINUTES_OFF.finditer(folded):
        said = match["minutes"]
        minutes = int(said) if said.isdigit() else _OFF_WORDS[said]
        past = match["way"] == "past"
        if not 1 <= minutes <= 30 or (said == "half" and not past):
            continue
        hour, _, settled = _settled(_hour(match["hour"]), 0, folded[match.end() :], match["hour"])
        if past:
            yield match.start(), match.end(), (hour, minutes, settled)
        else:
            yield match.start(), match.end(), (_hour_before(hour), 60 - minutes, settled)


def _halves(folded: str) -> Iterator[Found]:
    """ "três e meia", and the British "half 3" (not "half 2 of us")."""
    for pattern in (_E_MEIA, _UK_HALF):
        for match in pattern.finditer(folded):
            rest = folded[match.end() :]
            if pattern is _UK_HALF and (
                folded.startswith("past", match.start() + 5) or not _FOLLOWER.match(rest)
            ):
                continue
            if _DURATION_BEFORE.search(folded[max(0, match.start() - 12) : match.start()]):
                continue  # "demora duas e meia"
            yield (
                match.start(),
                match.end(),
                _settled(_hour(match["hour"]), 30, rest, match["hour"]),
            )


def _is_at_time(folded: str, match: re.Match[str], language: str | None) -> bool:
    """Whether "at 3" / "às duas" is a time: a plain "as" only in Portuguese and not after
    a word of taking ("quero as duas" is both), a number word after "at" but "one", and
    nothing after it that makes it a count ("at 3 stars", "as 2 of us") or a duration."""
    if match["at"] == "as" and (
        language != "pt" or _TAKEN.search(folded[max(0, match.start() - 12) : match.start()])
    ):
        return False
    after = folded[match.end("hour" if match["hour"] else "word") :]
    if (not match["dot"] and _NOT_A_TIME.match(after)) or _duration(folded, match):
        return False
    if match["word"] == "one" and not _marked(match):
        return False
    return _marked(match) or bool(_FOLLOWER.match(match["rest"]))


def _bare_time(bare: re.Match[str]) -> Candidate:
    if bare["hhmm"]:
        return int(bare["hhmm"]), int(bare["mm"]), True
    minute = int(bare["minute"] or bare["spaced"] or 0) or MINUTE_WORDS.get(bare["mword"] or "", 0)
    return _settled(_hour(bare["hour"]), minute, bare["rest"], bare["hour"])


def _bare_hours(match: re.Match[str]) -> bool:
    """ "1h", "2h", with no "at" and no minutes, say how long as often as when ("sessão de
    1h", "we need 2h"); "15h" says when."""
    return bool(match["hmark"] and not match["h"] and int(match["hour"]) < 10)


def _duration(folded: str, match: re.Match[str]) -> bool:
    """Whether the hour reads as a length of time ("for 2h", "2 hrs late"); minutes or
    morning and afternoon make it a time ("for 3pm")."""
    if match["colon"] or match["dot"] or _meridiem(match["rest"]) is not None:
        return False
    before = folded[max(0, match.start() - 12) : match.start()]
    after = folded[match.end("hour") if match["hour"] else match.end("word") :]
    return bool(_DURATION_BEFORE.search(before) or _DURATION_AFTER.match(after))


def _marked(match: re.Match[str]) -> bool:
    """Whether what follows an hour makes it one: minutes, "h", "o'clock", "pm"; minutes
    after a dot or in words, and "horas", only after "at" ("3.10" alone is as often the 3rd of
    October, "2 horas" how long). Minutes after a space ("at 11 30") mark nothing by
    themselves: "at 3 15 people" is a count."""
    after_at = "at" in match.groupdict()
    return bool(
        match["colon"]
        or match["hmark"]
        or ((match["dot"] or match["mword"]) and after_at)
        or _OCLOCK.match(match["rest"])
        or (after_at and _HOURS_WORD.match(match["rest"]))
        or _meridiem(match["rest"]) is not None
    )


def _read(match: re.Match[str]) -> Candidate:
    hour = int(match["hour"]) if match["hour"] else _HOUR_WORDS[match["word"]]
    minute = int(match["colon"] or match["h"] or match["dot"] or match["spaced"] or 0)
    minute = minute or MINUTE_WORDS.get(match["mword"] or "", 0)
    return _settled(hour, minute, match["rest"], str(hour))


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


def _hour_before(hour: int) -> int:
    """The hour before ``hour`` on the clock it was said on: "quarter to 1" is 12:45."""
    if hour == 0:
        return 23
    return 12 if hour == 1 else hour - 1


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
