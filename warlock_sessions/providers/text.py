"""Text as the rule model compares it: lower case, accents and punctuation gone, in tokens;
and how near two words are, so a slip of the keyboard still matches."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ..engine.text import fold as fold

_NON_WORD = re.compile(r"[^\w@.+-]+|(?<!\w)[.+-]|[.+-](?!\w)")
#: A letter typed three times or more is typed twice ("boook", "hmmmm"): no word of either
#: language has a letter three times in a row, and many have one twice.
_ELONGATED = re.compile(r"([a-z])\1{2,}")
_REPEATED = re.compile(r"([a-z])\1+")
#: Tokens this long or longer also match a token sharing their first five letters
#: (agendar ~ agendamento, booking ~ bookings).
_STEM = 5


#: Chat shorthand, read as the words it stands for.
SHORTHAND = {
    "q": "que", "hj": "hoje", "blz": "beleza", "vc": "voce", "vcs": "voces", "pq": "porque",
    "tb": "tambem", "tbm": "tambem", "msm": "mesmo", "obg": "obrigado", "pfv": "por favor",
    "pls": "please", "plz": "please", "thx": "thanks", "u": "you", "ur": "your",
    "tmrw": "tomorrow", "tmr": "tomorrow", "amnh": "amanha",
}  # fmt: skip
_SHORTHAND = re.compile(r"\b(" + "|".join(SHORTHAND) + r")\b")


def expanded(folded: str) -> str:
    """``folded`` text with chat shorthand written out ("semana q vem", "hj")."""
    return _SHORTHAND.sub(lambda match: SHORTHAND[match[1]], folded)


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """The words of ``text``, folded, a letter typed three times or more taken twice; cached,
    since phrases and messages are tokenised often."""
    return tuple(token for token in _NON_WORD.split(expanded(squeezed(fold(text)))) if token)


def squeezed(folded: str) -> str:
    """``folded`` with each run of one letter three or more long taken twice."""
    return _ELONGATED.sub(r"\1\1", folded)


def plain(word: str) -> str:
    """``word`` with every repeated letter taken once ("yesss", "yess" -> "yes"; "cool" ->
    "col"): compare two words both made plain, to read an answer however it is drawn out."""
    return _REPEATED.sub(r"\1", word)


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``: long word lists read as prose."""
    return frozenset(text.split())


def slips_allowed(word: str) -> int:
    """How many typing slips a word of this length may carry and still be itself: none in a
    short word (where one slip makes another word), one from five letters, two from nine."""
    return 0 if len(word) < 5 else 1 if len(word) < 9 else 2


def near(wanted: str, typed: str) -> bool:
    """Whether ``typed`` is ``wanted`` with at most ``slips_allowed(wanted)`` slips: a letter
    missing, added, changed, or two swapped (optimal string alignment distance)."""
    if wanted == typed:
        return True
    limit = slips_allowed(wanted)
    if limit == 0 or abs(len(wanted) - len(typed)) > limit:
        return False
    if wanted[0] != typed[0] and wanted[-1] != typed[-1]:
        return False  # a slip at both ends: another word, and most pairs end here, cheaply
    previous2: list[int] = []
    previous = list(range(len(typed) + 1))
    for i, a in enumerate(wanted, 1):
        current = [i] + [0] * len(typed)
        for j, b in enumerate(typed, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == typed[j - 2] and wanted[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return False
        previous2, previous = previous, current
    return previous[-1] <= limit


@lru_cache(maxsize=16384)
def _same(phrase_token: str, token: str) -> bool:
    """Whether a message's word says a phrase's word. Cached: a flow's phrases are few and
    people's words repeat, so a conversation soon asks only what it asked before."""
    if phrase_token == token:
        return True
    if len(phrase_token) >= _STEM and len(token) >= _STEM and phrase_token[:_STEM] == token[:_STEM]:
        return True
    return near(phrase_token, token)


@lru_cache(maxsize=256)
def _by_ends(
    words: tuple[str, ...],
) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """Where each first letter and each last letter of a message's words occurs: a word can
    say a phrase's word only if it shares its first letter or its last (``near``)."""
    by_first: dict[str, tuple[int, ...]] = {}
    by_last: dict[str, tuple[int, ...]] = {}
    for index, word in enumerate(words):
        by_first[word[0]] = (*by_first.get(word[0], ()), index)
        by_last[word[-1]] = (*by_last.get(word[-1], ()), index)
    return by_first, by_last


def phrase_score(phrase: str, words: Sequence[str]) -> int:
    """How well ``words`` (a tokenised message) say ``phrase``, from 0 to 100.

    The whole phrase in order scores 100, every word of it in any order 80, and a partial
    match a share of 60 (two of three words: 40, just enough to route). A word may carry a
    typing slip or two (``near``).
    """
    wanted = tokens(phrase)
    if not wanted:
        return 0
    by_first, by_last = _by_ends(tuple(words))
    if len(wanted) == 1:
        candidates = by_first.get(wanted[0][0], ()) + by_last.get(wanted[0][-1], ())
        return 100 if any(_same(wanted[0], words[i]) for i in candidates) else 0
    positions = [
        {i for i in by_first.get(w[0], ()) + by_last.get(w[-1], ()) if _same(w, words[i])}
        for w in wanted
    ]
    found = sum(1 for matched in positions if matched)
    if found < len(wanted):
        return round(60 * found / len(wanted)) if len(wanted) > 1 else 0
    if any(all(start + k in positions[k] for k in range(1, len(wanted))) for start in positions[0]):
        return 100
    return 80


def phrases_score(phrases: Sequence[str], text: str) -> int:
    """The best score of ``phrases``; any ``!phrase`` said in the text makes it 0."""
    words = tokens(text)
    if any(phrase_score(phrase[1:], words) == 100 for phrase in phrases if phrase[:1] == "!"):
        return 0
    best = 0
    for phrase in phrases:
        if phrase[:1] != "!":
            best = max(best, phrase_score(phrase, words))
            if best == 100:
                break  # nothing scores higher
    return best
