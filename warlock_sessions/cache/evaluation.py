"""Tuning the similarity threshold on labelled pairs (``manage.py warlock_cache_eval``).

A pair is two questions and whether one's answer answers the other (``same``). Each is
scored as the cache would score it: both embedded in their context, their cosine, and the
cache's refusals applied (a short question, or numbers, negations or opposites that differ,
is never a hit whatever its score). At a threshold, a *hit* is a pair scored at or above it
and not refused; precision is the share of hits that are right, recall the share of right
pairs that hit, and the false-hit rate the share of wrong pairs that hit, each with its 95 %
Wilson interval (what the labelled set can say about traffic like it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..providers.embedders import Embedder
from .questions import mismatch, unaskable

#: The labelled set that ships with the package, in English and Portuguese: the same
#: question reordered or reworded, paraphrases, near misses (numbers, negations, persons or
#: things swapped, opposite directions, another thing) and unrelated pairs; where each part
#: came from is docs/cache.md#the-labelled-set.
SHIPPED_PAIRS = Path(__file__).with_name("pairs.jsonl")


@dataclass(frozen=True)
class ScoredPair:
    same: bool
    score: float
    refused: str | None  # why the cache would never serve it, whatever the threshold
    kind: str = ""  # what the pair tests ("reorder", "numbers", ...), where the set says


@dataclass(frozen=True)
class Point:
    threshold: float
    precision: float
    recall: float
    false_hits: int
    negatives: int
    hits: int = 0
    positives: int = 0

    @property
    def false_hit_rate(self) -> float:
        return self.false_hits / self.negatives if self.negatives else 0.0

    @property
    def precision_interval(self) -> tuple[float, float]:
        return wilson(self.hits - self.false_hits, self.hits)

    @property
    def recall_interval(self) -> tuple[float, float]:
        return wilson(self.hits - self.false_hits, self.positives)


def read_pairs(path: str | Path) -> Iterator[dict[str, Any]]:
    """The pairs of a JSON-lines file: ``{"question", "candidate", "same"}``, with an
    optional ``context`` (the last assistant turn before the question, and before the
    candidate too unless ``candidate_context`` says otherwise) and ``kind``."""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            pair = json.loads(line)
        except ValueError as error:
            raise ValueError(f"line {number}: not JSON ({error})") from None
        if (
            not isinstance(pair, dict)
            or not isinstance(pair.get("question"), str)
            or not isinstance(pair.get("candidate"), str)
            or not isinstance(pair.get("same"), bool)
        ):
            raise ValueError(f'line {number}: a pair is {{"question", "candidate", "same"}}')
        yield pair


def _contexts(pair: dict[str, Any]) -> tuple[str, str]:
    context = str(pair.get("context") or "")
    return context, str(pair.get("candidate_context", context) or "")


def pair_scores(pairs: Iterable[dict[str, Any]], embedder: Embedder) -> list[float]:
    """Each pair's similarity, as the cache scores it: both questions embedded in their
    context, then the dot product of the two unit vectors."""
    scores = []
    for pair in pairs:
        context, other_context = _contexts(pair)
        first = embedder.embed(f"{context}\n{pair['question']}".strip())
        second = embedder.embed(f"{other_context}\n{pair['candidate']}".strip())
        scores.append(sum(a * b for a, b in zip(first, second, strict=True)))
    return scores


def judged(
    pairs: Iterable[dict[str, Any]], scores: Iterable[float], *, paraphrases: bool = False
) -> list[ScoredPair]:
    """The pairs with their scores and the refusal the cache's checks would give each."""
    scored = []
    for pair, score in zip(pairs, scores, strict=True):
        context, other_context = _contexts(pair)
        question, candidate = pair["question"], pair["candidate"]
        refused = unaskable(question)
        if refused is None:
            why = mismatch(question, candidate, context, other_context, paraphrases=paraphrases)
            refused = None if why is None else f"mismatch-{why}"
        scored.append(ScoredPair(pair["same"], score, refused, str(pair.get("kind") or "")))
    return scored


def score_pairs(
    pairs: Iterable[dict[str, Any]], embedder: Embedder, *, paraphrases: bool = False
) -> list[ScoredPair]:
    listed = list(pairs)
    return judged(listed, pair_scores(listed, embedder), paraphrases=paraphrases)


def curve(scored: list[ScoredPair], thresholds: Iterable[float]) -> list[Point]:
    positives = sum(pair.same for pair in scored)
    negatives = len(scored) - positives
    points = []
    for threshold in thresholds:
        hits = [pair for pair in scored if served(pair, threshold)]
        right = sum(pair.same for pair in hits)
        precision = right / len(hits) if hits else 1.0
        recall = right / positives if positives else 0.0
        points.append(
            Point(threshold, precision, recall, len(hits) - right, negatives, len(hits), positives)
        )
    return points


def served(pair: ScoredPair, threshold: float) -> bool:
    return pair.refused is None and pair.score >= threshold


def by_kind(scored: list[ScoredPair], threshold: float) -> dict[str, tuple[int, int]]:
    """For each kind of pair, how many the cache serves at ``threshold``, of how many."""
    counts: dict[str, tuple[int, int]] = {}
    for pair in scored:
        hits, total = counts.get(pair.kind or "-", (0, 0))
        counts[pair.kind or "-"] = (hits + served(pair, threshold), total + 1)
    return dict(sorted(counts.items()))


def best_threshold(points: list[Point], precision: float) -> Point | None:
    """The point of highest recall whose precision is at least ``precision`` (the highest
    threshold among equals: the widest margin for questions the set did not have), or
    ``None``."""
    kept = [point for point in points if point.precision >= precision and point.recall > 0]
    if not kept:
        return None
    return max(kept, key=lambda point: (point.recall, point.threshold))


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate observed as ``successes`` in ``trials``."""
    if not trials:
        return (0.0, 1.0)
    rate = successes / trials
    centre = rate + z * z / (2 * trials)
    spread = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    return (max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale))
