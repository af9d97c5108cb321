"""The CacheStore contract, on every store: reads only in their namespace and scope, never
past an entry's expiry (which nothing moves), exact ranking within a scope whatever the other
scopes hold, and removal by scope, namespace and expiry."""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warlock_sessions.cache import MemoryCacheStore

from .conftest import CacheFactory


def unit(vector: list[float]) -> list[float]:
    length = math.sqrt(sum(value * value for value in vector))
    return [value / length for value in vector]


def entry(
    key: str,
    vector: list[float] | None,
    *,
    scope: str = "conversation:a",
    namespace: str = "ns",
    expires_in: float | None = 60.0,
    question: str = "what are the opening hours",
) -> dict[str, Any]:
    stored = time.time()
    return {
        "namespace": namespace,
        "scope": scope,
        "key": key,
        "question": question,
        "reply": {"text": f"answer {key}"},
        "vector": None if vector is None else unit(vector),
        "storedAt": stored,
        "expiresAt": None if expires_in is None else stored + expires_in,
    }


def test_an_entry_is_read_only_in_its_namespace_and_scope(make_cache: CacheFactory) -> None:
    store = make_cache()
    store.put(entry("k1", [1, 0, 0]))
    found = store.get("ns", "conversation:a", "k1")
    assert found is not None and found["reply"] == {"text": "answer k1"}
    assert found["vector"] == pytest.approx([1.0, 0.0, 0.0])
    assert store.get("ns", "conversation:b", "k1") is None
    assert store.get("other", "conversation:a", "k1") is None
    assert store.get("ns", "conversation:a", "k2") is None
    store.put({**entry("k1", [0, 1, 0]), "reply": {"text": "replaced"}})
    assert store.get("ns", "conversation:a", "k1")["reply"] == {"text": "replaced"}  # type: ignore[index]


def test_an_expired_entry_is_never_read_and_a_hit_does_not_extend_it(
    make_cache: CacheFactory,
) -> None:
    store = make_cache()
    store.put(entry("soon", [1, 0, 0], expires_in=0.6))
    store.put(entry("never", [0.9, 0.1, 0], expires_in=None))
    for _ in range(3):  # hits, before it expires
        assert store.get("ns", "conversation:a", "soon") is not None
    assert [e["key"] for _, e in store.similar("ns", "conversation:a", [1, 0, 0])] == [
        "soon",
        "never",
    ]
    time.sleep(0.8)
    assert store.get("ns", "conversation:a", "soon") is None
    assert [e["key"] for _, e in store.similar("ns", "conversation:a", [1, 0, 0])] == ["never"]
    assert store.prune() in (0, 1)  # Redis expired it itself
    assert store.get("ns", "conversation:a", "never") is not None


def test_similar_ranks_exactly_within_the_scope(make_cache: CacheFactory) -> None:
    store = make_cache()
    store.put(entry("near", [1, 0.2, 0]))
    store.put(entry("far", [0, 1, 0]))
    store.put(entry("exact-only", None))
    for index in range(30):  # closer to the question, in other scopes and namespaces
        store.put(entry(f"x{index}", [1, 0, 0], scope=f"conversation:other{index}"))
        store.put(entry(f"y{index}", [1, 0, 0], namespace="elsewhere"))
    ranked = store.similar("ns", "conversation:a", unit([1, 0, 0]), top_k=5)
    assert [e["key"] for _, e in ranked] == ["near", "far"]
    assert ranked[0][0] == pytest.approx(1 / math.sqrt(1.04), abs=1e-5)
    assert ranked[1][0] == pytest.approx(0.0, abs=1e-6)
    assert store.similar("ns", "conversation:nobody", unit([1, 0, 0])) == []
    assert [e["key"] for _, e in store.similar("ns", "conversation:a", [1, 0, 0], 1)] == ["near"]


def test_entries_go_by_scope_namespace_and_expiry(make_cache: CacheFactory) -> None:
    store = make_cache()
    store.put(entry("a1", [1, 0]))
    store.put(entry("a2", [0, 1], namespace="other"))
    store.put(entry("b1", [1, 0], scope="conversation:b"))
    store.put(entry("gone", [1, 0], scope="conversation:b", expires_in=0.05))
    time.sleep(0.1)
    assert store.forget_scope("conversation:a") == 2
    assert store.get("other", "conversation:a", "a2") is None
    assert store.get("ns", "conversation:b", "b1") is not None
    store.prune()
    assert store.clear("ns") == 1
    assert store.get("ns", "conversation:b", "b1") is None
    assert store.similar("ns", "conversation:b", [1, 0]) == []


@pytest.mark.parametrize("seed", range(3))
def test_forged_keys_and_vectors_never_cross_scopes(make_cache: CacheFactory, seed: int) -> None:
    """Every scope holds the same keys and the same vectors: a read in one scope only ever
    returns that scope's own entries."""
    store = make_cache()
    rng = random.Random(seed)
    scopes = [f"conversation:{name}" for name in ("alice", "bob", "carol")]
    vectors = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(6)]
    for scope in scopes:
        for index, vector in enumerate(vectors):
            store.put({**entry(f"k{index}", vector, scope=scope), "question": scope})
    for scope in scopes:
        for index, vector in enumerate(vectors):
            found = store.get("ns", scope, f"k{index}")
            assert found is not None and found["question"] == scope
            for _, near in store.similar("ns", scope, unit(vector), top_k=6):
                assert near["scope"] == scope and near["question"] == scope


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scopes=st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=4, unique=True),
    key=st.text(min_size=1, max_size=30),
)
def test_any_scope_text_stays_apart(scopes: list[str], key: str) -> None:
    store = MemoryCacheStore()
    for scope in scopes:
        store.put({**entry(key, [1, 0], scope=scope), "question": scope})
    for scope in scopes:
        found = store.get("ns", scope, key)
        assert found is not None and found["question"] == scope
        assert [e["scope"] for _, e in store.similar("ns", scope, [1, 0])] == [scope]


def test_a_bounded_memory_store_keeps_the_most_recently_used() -> None:
    store = MemoryCacheStore(max_entries=2)
    store.put(entry("a", [1, 0]))
    store.put(entry("b", [0, 1]))
    assert store.get("ns", "conversation:a", "a") is not None  # a is recent now
    store.put(entry("c", [1, 1]))
    assert store.get("ns", "conversation:a", "b") is None
    assert store.get("ns", "conversation:a", "a") is not None


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_the_django_store_sees_rows_other_processes_wrote_and_removed() -> None:
    from warlock_sessions.cache import DjangoCacheStore
    from warlock_sessions.cache.db import scope_vectors
    from warlock_sessions.models import CacheEntry

    scope_vectors.clear()
    mine, theirs = DjangoCacheStore(), DjangoCacheStore()
    mine.put(entry("a", [1, 0, 0]))
    assert [e["key"] for _, e in mine.similar("ns", "conversation:a", [1, 0, 0])] == ["a"]
    theirs.put(entry("b", [0, 1, 0]))  # appended: read alone
    assert [e["key"] for _, e in mine.similar("ns", "conversation:a", [0, 1, 0], 1)] == ["b"]
    CacheEntry.objects.filter(key="a").delete()  # removed behind its back: read again
    assert [e["key"] for _, e in mine.similar("ns", "conversation:a", [1, 0, 0])] == ["b"]
    theirs.put(entry("b", [0, 0, 1]))  # replaced: a new row
    assert [e["key"] for _, e in mine.similar("ns", "conversation:a", [0, 0, 1], 1)] == ["b"]
    assert mine.similar("ns", "conversation:a", [0, 0, 1], 1)[0][0] == pytest.approx(1.0)


def test_vectors_of_another_length_are_left_out(make_cache: CacheFactory) -> None:
    """An embedder that changed its length made every lookup of the scope fail."""
    store = make_cache()
    store.put(entry("old", [1, 0, 0]))
    store.put(entry("new", [1, 0]))
    assert [e["key"] for _, e in store.similar("ns", "conversation:a", [1.0, 0.0])] == ["new"]
    with pytest.raises(ValueError, match="finite"):
        store.put(entry("nan", [float("nan"), 1.0]))


@pytest.mark.parametrize("backend", ["redis"])
def test_a_redis_store_never_reaches_a_store_whose_prefix_extends_its_own(backend: str) -> None:
    from tests.services import redis_keys, redis_unreachable
    from warlock_sessions.cache import RedisCacheStore

    if redis_unreachable():
        pytest.skip(redis_unreachable() or "")
    with redis_keys() as (client, base):
        short = RedisCacheStore(client, prefix=base)
        longer = RedisCacheStore(client, prefix=base + "b:")
        short.put(entry("a", [1, 0]))
        longer.put(entry("b", [1, 0]))
        short.clear("ns")
        short.forget_scope("conversation:a")
        short.prune()
        assert longer.get("ns", "conversation:a", "b") is not None
        assert [e["key"] for _, e in longer.similar("ns", "conversation:a", [1, 0])] == ["b"]
