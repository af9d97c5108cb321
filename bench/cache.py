"""Semantic cache benchmark (issue 27), on PostgreSQL without pgvector, ratios in one run:

1. Exact repeats served: 100 %.
2. Short or context-free questions asked again in a new context: 0 hits.
3. A similarity lookup at 10,000 entries in one scope: p50 <= 2 ms (DjangoCacheStore, the
   offline embedder's 256 dimensions); the same lookup once 100,000 entries of other scopes
   are stored: <= 1.3x (the scope bounds the work).
4. A hit against the offline model's turn at the demo's pace: <= 0.05x; what the cache adds
   to a miss (its lookup and its write): <= 5 %.
5. An exact hit with ENCRYPTION_KEYS (the question and reply sealed) against a plain one:
   <= 1.2x (issue 40).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import numpy as np

from bench.common import (
    bench_database_url,
    configure_django,
    empty_tables,
    measure,
    report,
    sealed,
    verdict,
)

DIMENSIONS = 256


def random_units(count: int, rng: np.random.Generator) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill(scope_of: Any, count: int, rng: np.random.Generator, namespace: str) -> None:
    """``count`` entries straight into the table, in batches (a put each would take minutes)."""
    from datetime import UTC, datetime

    from warlock_sessions.models import CacheEntry

    now = datetime.now(UTC)
    for start in range(0, count, 5000):
        size = min(5000, count - start)
        vectors = random_units(size, rng)
        CacheEntry.objects.bulk_create(
            CacheEntry(
                namespace=namespace,
                scope=scope_of(start + index),
                key=f"{start + index:064x}",
                question=f"question {start + index}",
                reply={"text": f"answer {start + index}"},
                vector=vectors[index].tobytes(),
                stored_at=now,
                expires_at=None,
            )
            for index in range(size)
        )


def lookup_p50(store: Any, namespace: str, scope: str, rng: np.random.Generator) -> float:
    queries = random_units(200, rng)
    store.similar(namespace, scope, queries[0].tolist(), 3)  # the process reads the scope once
    times = []
    for query in queries:
        started = time.perf_counter()
        store.similar(namespace, scope, query.tolist(), 3)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def similarity_benchmark() -> None:
    from django.db import connection

    from warlock_sessions.cache import DjangoCacheStore
    from warlock_sessions.cache.db import scope_vectors
    from warlock_sessions.models import CacheEntry

    empty_tables(CacheEntry)
    rng = np.random.default_rng(7)
    store, namespace = DjangoCacheStore(), "bench:v1:offline-256"
    fill(lambda index: "shared", 10_000, rng, namespace)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE warlock_cache_entries")
    alone = lookup_p50(store, namespace, "shared", rng)
    fill(lambda index: f"conversation:{index // 100}", 100_000, rng, namespace)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE warlock_cache_entries")
    scope_vectors.clear()
    crowded = lookup_p50(store, namespace, "shared", rng)
    print(f"similarity lookup, 10,000 in the scope: p50 {alone * 1e3:.3f} ms")
    print(verdict("p50 in ms at 10,000 in one scope", alone * 1e3, 2.0))
    print(f"with 100,000 in other scopes: p50 {crowded * 1e3:.3f} ms")
    print(verdict("p50 with 100,000 elsewhere / alone", crowded / alone, 1.3))
    empty_tables(CacheEntry)


def agent_call(model: Any, text: str, conversation: str, context: str | None = None) -> Any:
    from warlock_sessions.cache import CacheCall

    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    if context is not None:
        messages += [
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": context},
        ]
    return CacheCall(model, [*messages, {"role": "user", "content": text}], [], conversation)


QUESTIONS = [
    "What are your opening hours on Sunday?",
    "How do I reset my account password?",
    "Where can I park near the museum entrance?",
    "Can I bring my dog into the restaurant?",
    "Which documents do I need for the refund?",
]
SHORT = [
    *("yes", "ok", "sim", "no thanks", "and the price?", "what about it?", "do it"),
    "tell me more",
]


def behaviour_benchmark(turns: int) -> None:
    from warlock_sessions.cache import DjangoCacheStore, SemanticCache
    from warlock_sessions.models import CacheEntry
    from warlock_sessions.providers import OfflineChatModel, OfflineEmbedder

    empty_tables(CacheEntry)
    model = OfflineChatModel(delay=0.04)  # the demo's pace
    cache = SemanticCache(
        store=DjangoCacheStore(), embedder=OfflineEmbedder(), threshold=0.85, scope="shared"
    )
    for question in QUESTIONS:
        cache.chat(agent_call(model, question, "first"))
    served = sum(cache.chat(agent_call(model, q, "again")).cached == "exact" for q in QUESTIONS)
    print(f"exact repeats served: {served}/{len(QUESTIONS)} ({100 * served // len(QUESTIONS)} %)")

    rng = random.Random(3)
    for short in SHORT:
        cache.chat(agent_call(model, short, "x", context="Shall I book the table for you?"))
    hits = sum(
        cache.chat(agent_call(model, short, "y", context=rng.choice(QUESTIONS))).cached != ""
        for short in SHORT
    )
    print(f"short or context-free questions in a new context: {hits} hits (target 0)")

    def timed(text: str, conversation: str) -> float:
        started = time.perf_counter()
        cache.chat(agent_call(model, text, conversation))
        return time.perf_counter() - started

    def uncached(text: str) -> float:
        started = time.perf_counter()
        model.chat(agent_call(model, text, "m").messages, [], None)
        return time.perf_counter() - started

    # The same questions through the model alone and through a cache that misses: the
    # model's time depends on its reply, so each pair asks the same thing.
    new = [f"completely new question {index} about the parking fees" for index in range(turns)]
    own = statistics.median(uncached(text) for text in new)
    missed = statistics.median(timed(text, f"new-{index}") for index, text in enumerate(new))
    hit = statistics.median(timed(QUESTIONS[i % len(QUESTIONS)], "again") for i in range(turns))
    print(f"offline model's turn {own * 1e3:.1f} ms, a hit {hit * 1e3:.3f} ms")
    print(verdict("hit / model turn", hit / own, 0.05))
    print(verdict("a miss through the cache / the model alone, less 1", missed / own - 1, 0.05))
    empty_tables(CacheEntry)


def sealed_hit_benchmark(rounds: int) -> None:
    """Exact hits on a sealed cache and a plain one, interleaved (each store its own rows)."""
    from warlock_sessions.cache import DjangoCacheStore, SemanticCache
    from warlock_sessions.models import CacheEntry
    from warlock_sessions.providers import OfflineChatModel

    empty_tables(CacheEntry)
    model = OfflineChatModel()
    plain = SemanticCache(store=DjangoCacheStore(), scope="shared", namespace="plain")
    closed = SemanticCache(store=DjangoCacheStore(), scope="shared", namespace="sealed")
    for question in QUESTIONS:
        plain.chat(agent_call(model, question, "first"))
        sealed(lambda question=question: closed.chat(agent_call(model, question, "first")))()

    def hits(cache: SemanticCache) -> None:
        for question in QUESTIONS:
            assert cache.chat(agent_call(model, question, "again")).cached == "exact"

    samples = measure(
        {"exact hit": lambda: hits(plain), "exact hit, sealed": sealed(lambda: hits(closed))},
        iterations=rounds,
    )
    ratios = report(samples, baseline="exact hit")
    print(verdict("an exact hit sealed / plain", ratios["exact hit, sealed"], 1.2))
    empty_tables(CacheEntry)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    configure_django(bench_database_url())
    behaviour_benchmark(args.turns)
    sealed_hit_benchmark(args.rounds)
    similarity_benchmark()


if __name__ == "__main__":
    main()
