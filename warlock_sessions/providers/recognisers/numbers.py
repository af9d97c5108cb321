"""How many: a number in digits, or in words up to ninety-nine in either language ("two
people", "vinte e dois", "twenty-two")."""

from __future__ import annotations

import re

from ..text import tokens

NUMBER = re.compile(r"(?<![\w.,])[-+]?\d+(?:[.,]\d+)*(?![\w])")

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
    "um": 1, "uma": 1, "dois": 2, "duas": 2, "tres": 3, "quatro": 4, "cinco": 5, "seis": 6,
    "sete": 7, "oito": 8, "nove": 9, "dez": 10, "onze": 11, "doze": 12, "treze": 13,
    "catorze": 14, "quatorze": 14, "quinze": 15, "dezesseis": 16, "dezasseis": 16,
    "dezessete": 17, "dezassete": 17, "dezoito": 18, "dezenove": 19, "dezanove": 19,
}  # fmt: skip
TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
    "vinte": 20, "trinta": 30, "quarenta": 40, "cinquenta": 50, "sessenta": 60,
    "setenta": 70, "oitenta": 80, "noventa": 90,
}  # fmt: skip
#: "a week", "uma semana": one, where a count is expected right after.
ONE = frozenset(["a", "an"])


#: Saying it is just oneself: one.
ALONE = (
    ("just", "me"), ("only", "me"), ("me", "only"), ("myself",), ("just", "myself"),
    ("so", "eu"), ("somente", "eu"), ("apenas", "eu"), ("sozinho",), ("sozinha",),
)  # fmt: skip


#: Oneself and one more: two.
WITH_ONE_MORE = (("me", "and"), ("myself", "and"), ("eu", "e"), ("eu", "mais"))


def number(text: str) -> str | None:
    """The first number, as written (``"1.500,50"``, ``"42"``): the engine's coercion decides;
    else the first number written in words, as digits ("just me" is one)."""
    match = NUMBER.search(text)
    if match:
        return match[0]
    words = tokens(text.replace("-", " "))
    found = number_in_words(words)
    if _says(words, WITH_ONE_MORE):
        # "me and my sister" is two; "me and my two kids" could be three or four: not guessed
        return None if found is not None else "2"
    if found is None and _says(words, ALONE):
        found = 1
    return None if found is None else str(found)


def _says(words: tuple[str, ...], phrases: tuple[tuple[str, ...], ...]) -> bool:
    return any(words[i : i + len(p)] == p for p in phrases for i in range(len(words)))


def number_in_words(words: tuple[str, ...] | list[str]) -> int | None:
    """The first number written in words: "twenty two", "vinte e dois", "three"."""
    for index, word in enumerate(words):
        if word in TENS:
            value = TENS[word]
            rest = words[index + 1 : index + 3]
            if rest[:1] and rest[0] in UNITS and 0 < UNITS[rest[0]] < 10:
                return value + UNITS[rest[0]]
            if len(rest) == 2 and rest[0] in ("e", "and") and 0 < UNITS.get(rest[1], 0) < 10:
                return value + UNITS[rest[1]]
            return value
        if word in UNITS:
            return UNITS[word]
    return None
