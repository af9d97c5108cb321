"""Which one of a field's options the text names: whole words, accents ignored, spaces
ignored ("hair cut"), in any order ("trim my beard"), with a slip or a spelling variant
("hiarcut", "color" for "colour"), or another form of the word ("coloring", "cortar" for
"corte"). Two options named is none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..text import near, tokens


def option(text: str, options: Sequence[Any]) -> Any:
    words = tokens(text)
    for matches in (_named_exactly, _named_loosely):
        named = [choice for choice in options if matches(tokens(str(choice)), words)]
        if len(named) == 1:
            return named[0]
        if named:
            return None
    return None


def _named_exactly(wanted: tuple[str, ...], words: tuple[str, ...]) -> bool:
    size = len(wanted)
    return any(words[i : i + size] == wanted for i in range(len(words) - size + 1))


def _inflected(wanted: str, word: str) -> bool:
    """``word`` is another form of ``wanted``: its stem (all but the last letter, from five
    letters on) and an ending of up to three letters; British and American spellings alike."""
    wanted, word = wanted.replace("our", "or"), word.replace("our", "or")
    if len(wanted) >= 4 and word.startswith(wanted) and len(word) - len(wanted) <= 3:
        return True  # "trim" -> "trimmed"
    stem = wanted[:-1]
    return len(wanted) >= 5 and word.startswith(stem) and len(word) - len(stem) <= 4


def _named_loosely(wanted: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Every word of the option, with a slip, in any order; or the option's words run
    together or pulled apart ("haircut" ~ "hair cut", "beard trim" ~ "beardtrim")."""
    if all(any(near(want, word) or _inflected(want, word) for word in words) for want in wanted):
        return True
    joined = "".join(wanted)
    return any(
        near(joined, "".join(words[i : i + size]))
        for size in (1, 2, 3)
        for i in range(len(words) - size + 1)
    )
