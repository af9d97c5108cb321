"""PgVectorCacheStore on a real PostgreSQL with pgvector (tests/pgvector.py): the index ranks
as the exact ranking does, a small scope among many keeps its hits however the index's scan
ends, and ``warlock_cache_index`` and check W011 say what is missing. The CacheStore contract
itself runs on it in test_stores.py."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.db import connections, transaction
from django.test import override_settings

from tests.pgvector import ALIAS, needs_pgvector, pgvector_db
from warlock_sessions.cache import DjangoCacheStore
from warlock_sessions.cache.pgvector import PgVectorCacheStore, indexed_dimensions, vector_literal

from .conftest import indexed_store

pytestmark = [needs_pgvector, pgvector_db]
DIMENSIONS = 32


def unit(vector: np.ndarray) -> list[float]:
    return [float(value) for value in vector / np.linalg.norm(vector)]


def entry(key: str, vector: list[float], scope: str = "conversation:a") -> dict[str, Any]:
    return {
        "namespace": "ns",
        "scope": scope,
        "key": key,
        "question": f"question {key}",
        "reply": {"text": f"answer {key}"},
        "vector": vector,
        "storedAt": time.time(),
        "expiresAt": None,
    }


def keys(found: list[tuple[float, dict[str, Any]]]) -> list[str]:
    return [stored["key"] for _, stored in found]


def plan(store: PgVectorCacheStore, query: list[float]) -> str:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(
            "EXPLAIN SELECT key FROM warlock_cache_entries WHERE scope = %s AND namespace = %s "
            "AND embedding IS NOT NULL ORDER BY embedding <#> %s::vector LIMIT 3",
            ["conversation:a", "ns", vector_literal(query)],
        )
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def store() -> PgVectorCacheStore:
    made: PgVectorCacheStore = indexed_store(DIMENSIONS)
    return made


def test_the_index_ranks_a_large_scope_as_the_exact_ranking_does(
    store: PgVectorCacheStore,
) -> None:
    rng = np.random.default_rng(7)
    vectors = [unit(rng.normal(size=DIMENSIONS)) for _ in range(1500)]
    for index, vector in enumerate(vectors):
        store.put(entry(f"k{index}", vector))
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("ANALYZE warlock_cache_entries")
    queries = [
        unit(np.asarray(vectors[i]) + rng.normal(scale=0.3, size=DIMENSIONS)) for i in range(40)
    ]
    assert "warlock_cache_hnsw" in plan(store, queries[0])  # the index, not a scan of the scope
    matrix = np.asarray(vectors, dtype=np.float32)
    agreed = 0
    for query in queries:
        found = store.similar("ns", "conversation:a", query, top_k=3)
        best = int(np.argmax(matrix @ np.asarray(query, dtype=np.float32)))
        if keys(found)[0] == f"k{best}":  # then with the exact ranking's score
            agreed += 1
            assert found[0][0] == pytest.approx(float(matrix[best] @ np.asarray(query)), abs=1e-3)
    assert agreed >= 39  # HNSW is approximate: at most one miss in 40


@pytest.fixture
def short_index_scans(store: PgVectorCacheStore) -> Iterator[None]:
    """The index chosen for every lookup (a sort made dear), and its scans stopped after 50
    entries, as pgvector's ``hnsw.max_scan_tuples`` stops them after 20,000 on a large
    table: for this process's connections from now on."""
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("ALTER ROLE postgres SET enable_sort = off")
        cursor.execute("ALTER ROLE postgres SET hnsw.max_scan_tuples = 50")
    connections[ALIAS].close()
    try:
        yield
    finally:
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("ALTER ROLE postgres RESET ALL")
        connections[ALIAS].close()


def test_a_small_scope_among_many_keeps_its_hits_when_the_index_scan_stops_short(
    short_index_scans: None,
) -> None:
    """Another scope's 400 answers all nearer the question: the index's scan gives up before
    it reaches this scope's three, which the exact ranking then finds, in order."""
    store = PgVectorCacheStore(using=ALIAS, dimensions=DIMENSIONS, ef_search=10)
    rng = random.Random(3)
    question = unit(np.eye(DIMENSIONS)[0])
    for index in range(400):
        near = np.eye(DIMENSIONS)[0] + np.asarray(
            [rng.uniform(-0.1, 0.1) for _ in range(DIMENSIONS)]
        )
        store.put(entry(f"theirs{index}", unit(near), scope="conversation:big"))
    for index, weight in enumerate((0.6, 0.4, 0.2)):
        mine = weight * np.eye(DIMENSIONS)[0] + np.eye(DIMENSIONS)[1 + index]
        store.put(entry(f"mine{index}", unit(mine)))
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("ANALYZE warlock_cache_entries")
    assert "warlock_cache_hnsw" in plan(store, question)
    with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
        store._search_settings(cursor)  # the index alone finds fewer than asked
        literal = vector_literal(question)
        indexed = store._nearest(
            cursor, "ns", "conversation:a", literal, 3, time.time(), indexed=True
        )
    assert len(indexed) < 3
    assert keys(store.similar("ns", "conversation:a", question, top_k=3)) == [
        "mine0",
        "mine1",
        "mine2",
    ]


def test_warlock_cache_index_adds_the_answers_stored_before_it(capsys: Any) -> None:
    indexed_store(DIMENSIONS)  # the column of this length
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("ALTER TABLE warlock_cache_entries DROP COLUMN embedding")
    before = DjangoCacheStore(using=ALIAS)
    for index in range(3):
        before.put(entry(f"old{index}", unit(np.eye(DIMENSIONS)[index])))
    before.put(entry("other-length", [1.0, 0.0]))
    capsys.readouterr()
    call_command("warlock_cache_index", dimensions=DIMENSIONS, database=ALIAS)
    assert "3 stored answer(s) added" in capsys.readouterr().out
    store = PgVectorCacheStore(using=ALIAS, dimensions=DIMENSIONS)
    found = store.similar("ns", "conversation:a", unit(np.eye(DIMENSIONS)[1]), top_k=1)
    assert keys(found) == ["old1"]
    call_command("warlock_cache_index", dimensions=DIMENSIONS, database=ALIAS)  # again: nothing
    assert "0 stored answer(s) added" in capsys.readouterr().out


def test_an_index_of_another_length_or_a_database_without_pgvector_is_refused() -> None:
    indexed_store(DIMENSIONS)
    with pytest.raises(CommandError, match="holds vectors of 32: for 384, drop it first"):
        call_command("warlock_cache_index", dimensions=384, database=ALIAS)
    with pytest.raises(CommandError, match="'default' is not PostgreSQL"):
        call_command("warlock_cache_index", dimensions=384, database="default")
    with pytest.raises(CommandError, match="1 to 2000"):
        call_command("warlock_cache_index", dimensions=4096, database=ALIAS)


@pytest.mark.parametrize(
    "options",
    [{"dimensions": 0}, {"dimensions": 2001}, {"dimensions": "384"}, {"ef_search": 0}],
)
def test_its_options_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        PgVectorCacheStore(using=ALIAS, **options)


def test_check_w011_says_when_the_index_is_missing_or_of_another_length() -> None:
    indexed_store(DIMENSIONS)
    configured = {
        "CACHE_STORE": "warlock_sessions.cache.pgvector.PgVectorCacheStore",
        "CACHE_STORE_OPTIONS": {"using": ALIAS, "dimensions": 384},
    }
    with override_settings(WARLOCK_SESSIONS=configured):
        [warning] = [
            message
            for message in run_checks(databases=[ALIAS])
            if message.id == "warlock_sessions.W011"
        ]
        assert "an index of 32 dimensions" in warning.msg
        assert "warlock_cache_index --dimensions 384 --database pgvector" in (warning.hint or "")
        assert indexed_dimensions(ALIAS) == 32
        indexed_store(384)
        assert not [m for m in run_checks(databases=[ALIAS]) if m.id == "warlock_sessions.W011"]


def test_a_lookup_plans_for_its_scope_and_keeps_its_settings_to_itself(
    store: PgVectorCacheStore,
) -> None:
    """Each lookup asks for a custom plan (with ``prepare_threshold``, PostgreSQL may run a
    prepared statement's generic plan, made for no scope: on 100,000 answers in one scope it
    ranked them all exactly, 562 ms a lookup instead of 13, bench/cache_index.py) and the
    index's settings, for its own transaction; inside a caller's transaction (a savepoint,
    which a ``SET LOCAL`` outlives) they are put back afterwards."""
    names = ("plan_cache_mode", "hnsw.iterative_scan", "hnsw.ef_search")

    def shown(cursor: Any) -> dict[str, str]:
        found = {}
        for name in names:
            cursor.execute(f"SHOW {name}")
            found[name] = cursor.fetchone()[0]
        return found

    with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
        store._search_settings(cursor)
        assert shown(cursor) == {
            "plan_cache_mode": "force_custom_plan",
            "hnsw.iterative_scan": "strict_order",
            "hnsw.ef_search": "100",
        }
    store.put(entry("k1", unit(np.eye(DIMENSIONS)[0])))
    with connections[ALIAS].cursor() as cursor:
        defaults = shown(cursor)
        with transaction.atomic(using=ALIAS):  # the caller's own transaction
            assert keys(store.similar("ns", "conversation:a", unit(np.eye(DIMENSIONS)[0]))) == [
                "k1"
            ]
            assert shown(cursor) == defaults
    assert defaults["plan_cache_mode"] == "auto"


def test_an_index_missing_beside_a_column_of_another_length_is_refused() -> None:
    """An earlier run stopped before its index: the column's own length decides."""
    indexed_store(DIMENSIONS)
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("DROP INDEX warlock_cache_hnsw")
    assert indexed_dimensions(ALIAS) is None
    with pytest.raises(CommandError, match="holds vectors of 32: for 384"):
        call_command("warlock_cache_index", dimensions=384, database=ALIAS)


def test_check_w011_is_quiet_without_a_cache_store_and_with_options_it_refuses() -> None:
    bad = {
        "CACHE_STORE": "warlock_sessions.cache.pgvector.PgVectorCacheStore",
        "CACHE_STORE_OPTIONS": {"using": ALIAS, "dimensions": 4096},
    }
    for configured in ({}, bad):
        with override_settings(WARLOCK_SESSIONS=configured):
            from warlock_sessions.checks import check_cache_index

            assert check_cache_index(databases=[ALIAS]) == []
