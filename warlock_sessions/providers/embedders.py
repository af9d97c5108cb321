"""Embedders: text to a unit-length vector, for the semantic cache (docs/cache.md).

``OfflineEmbedder`` needs nothing: words and their character trigrams hashed into a fixed
number of dimensions, so paraphrases that share words (or most of their letters) land close
and unrelated texts do not. It is deterministic across processes and machines, which the
tests and the demo need; a served embedding model (``OpenAICompatibleEmbedder``) ranks real
paraphrases far better.
"""

from __future__ import annotations

import hashlib
import math
from typing import Protocol, runtime_checkable

import regex

from .text import fold

_WORDS = regex.compile(r"[\p{L}\p{N}]+")


@runtime_checkable
class Embedder(Protocol):
    """``name`` says which vectors can be compared (the cache keeps one embedder's vectors
    apart from another's); ``embed`` returns one vector of ``dimensions`` floats."""

    name: str
    dimensions: int

    def embed(self, text: str) -> list[float]: ...


def unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero); ``ValueError`` for one
    holding a value that is not a finite number."""
    if not all(math.isfinite(value) for value in vector):
        raise ValueError("a vector holds a value that is not a finite number")
    length = math.sqrt(sum(value * value for value in vector))
    if not math.isfinite(length):
        raise ValueError("a vector too long to scale")
    return [value / length for value in vector] if length else vector


def plain_words(text: str) -> list[str]:
    """The words of ``text``, case-folded and without accents ("Não" and "nao" are one)."""
    return _WORDS.findall(fold(text))


class OfflineEmbedder:
    """Feature hashing of words (weight 1) and their character trigrams (weight 0.5, so
    "booking" and "bookings" share most of theirs), each to a signed dimension."""

    def __init__(self, dimensions: int = 256) -> None:
        if type(dimensions) is not int or dimensions < 8:
            raise ValueError(f"dimensions is a whole number of at least 8, not {dimensions!r}")
        self.dimensions = dimensions
        self.name = f"offline-{dimensions}"

    def embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in plain_words(text):
            self._add(vector, f"w:{word}", 1.0)
            padded = f"#{word}#"
            for start in range(len(padded) - 2):
                self._add(vector, f"t:{padded[start : start + 3]}", 0.5)
        return unit(vector)

    def _add(self, vector: list[float], feature: str, weight: float) -> None:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % self.dimensions
        vector[index] += weight if digest[4] & 1 else -weight
