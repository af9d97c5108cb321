"""Text as the rule model compares it: lower case, accents and punctuation gone, in tokens."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

_NON_WORD = re.compile(r"[^\w@.+-]+|(?<!\w)[.+-]|[.+-](?!\w)")
#: Tokens this long or longer also match a token sharing their first five letters
#: (agendar ~ agendamento, booking ~ bookings).
_STEM = 5


def fold(text: str) -> str:
    """Lower case without accents: ``"Não, AMANHÃ"`` -> ``"nao, amanha"``."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """The words of ``text``, folded; cached, since phrases and messages are tokenised often."""
    return tuple(token for token in _NON_WORD.split(fold(text)) if token)


def _same(phrase_token: str, token: str) -> bool:
    if phrase_token == token:
        return True
    return (
        len(phrase_token) >= _STEM and len(token) >= _STEM and phrase_token[:_STEM] == token[:_STEM]
    )


def phrase_score(phrase: str, words: Sequence[str]) -> int:
    """How well ``words`` (a tokenised message) say ``phrase``, from 0 to 100.

    The whole phrase in order scores 100, every word of it in any order 80, and a partial
    match a share of 60 (two of three words: 40, just enough to route).
    """
    wanted = tokens(phrase)
    if not wanted:
        return 0
    positions = [{i for i, token in enumerate(words) if _same(w, token)} for w in wanted]
    found = sum(1 for matched in positions if matched)
    if found < len(wanted):
        return round(60 * found / len(wanted)) if len(wanted) > 1 else 0
    if any(all(start + k in positions[k] for k in range(1, len(wanted))) for start in positions[0]):
        return 100
    return 80


def phrases_score(phrases: Sequence[str], text: str) -> int:
    """The best score of ``phrases``; any ``!phrase`` said in the text makes it 0."""
    words = tokens(text)
    best = 0
    for phrase in phrases:
        if phrase.startswith("!"):
            if phrase_score(phrase[1:], words) == 100:
                return 0
        else:
            best = max(best, phrase_score(phrase, words))
    return best
