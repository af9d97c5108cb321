"""The CheckpointStore contract (scenario 4) on every backend: PostgreSQL and Redis for real."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.services import POSTGRES_URL, REDIS_URL, redis_keys
from warlock_sessions.checkpoints import (
    CheckpointStore,
    DuplicateCheckpointError,
    MemoryCheckpointStore,
)
from warlock_sessions.snapshots import InvalidSnapshotError

from .conftest import needs_postgres, needs_redis, postgres_db

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("django-sqlite", id="django-sqlite", marks=[pytest.mark.django_db]),
    pytest.param("django-postgres", id="django-postgres", marks=[needs_postgres, postgres_db]),
    pytest.param("postgres", id="postgres", marks=[needs_postgres]),
    pytest.param("redis", id="redis", marks=[needs_redis]),
]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[CheckpointStore]:
    backend = request.param
    if backend == "memory":
        yield MemoryCheckpointStore()
    elif backend.startswith("django"):
        from warlock_sessions.checkpoints import DjangoCheckpointStore

        yield DjangoCheckpointStore(using="postgres" if backend == "django-postgres" else None)
    elif backend == "postgres":
        from warlock_sessions.checkpoints import PostgresCheckpointStore

        table = f"checkpoints_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            made = PostgresCheckpointStore(connection, table=table)
            connection.execute(made.schema())
            try:
                yield made
            finally:
                connection.execute(f"DROP TABLE {table}")
    else:
        from warlock_sessions.checkpoints import RedisCheckpointStore

        with redis_keys() as (client, prefix):
            yield RedisCheckpointStore(client, prefix=prefix)


def row(name: str, sid: str, turn: int, **more: Any) -> dict[str, Any]:
    return {
        "orchestrator_name": name,
        "session_id": sid,
        "turn_index": turn,
        "state": {"turn": turn, "text": "é", "empty": [], "nothing": {}},
        "signature": "6b4af2b4",
        **more,
    }


def test_load_gives_the_latest_turn_and_turns_are_append_only(store: CheckpointStore) -> None:
    assert store.load("support", "user-1") is None
    for turn in range(6):
        store.save(row("support", "user-1", turn, last_route=["billing", "triage"]))
    latest = store.load("support", "user-1")
    assert latest is not None
    assert (latest["turn_index"], latest["state"], latest["last_route"]) == (
        5,
        {"turn": 5, "text": "é", "empty": [], "nothing": {}},
        ["billing", "triage"],
    )
    assert latest["version"] is None and latest["saved_at"]
    with pytest.raises(DuplicateCheckpointError) as duplicate:
        store.save(row("support", "user-1", 3))
    assert duplicate.value.turn_index == 3
    latest_again = store.load("support", "user-1")
    assert latest_again is not None and latest_again["turn_index"] == 5


def test_names_isolate_sessions_and_list_gives_distinct_ids(store: CheckpointStore) -> None:
    store.save(row("support", "user-1", 0, last_route="billing"))
    store.save(row("support", "user-1", 1))
    store.save(row("support", "user-2", 0))
    store.save(row("support", "other", 0))
    store.save(row("sales", "user-1", 0, version="v2"))
    assert store.list("support") == ["other", "user-1", "user-2"]
    assert store.list("support", "user-") == ["user-1", "user-2"]
    assert store.list("support", "user_") == []
    sales = store.load("sales", "user-1")
    assert sales is not None and (sales["turn_index"], sales["version"]) == (0, "v2")

    assert store.delete("support", "user-1") is True
    assert store.delete("support", "user-1") is False
    assert store.load("support", "user-1") is None
    assert store.list("support") == ["other", "user-2"]
    assert store.load("sales", "user-1") is not None


def test_prune_deletes_the_turns_before_keep_before(store: CheckpointStore) -> None:
    for turn in range(6):
        store.save(row("support", "s", turn))
    store.prune("support", "s", 3)
    store.prune("support", "unknown", 3)  # no-op
    latest = store.load("support", "s")
    assert latest is not None and latest["turn_index"] == 5
    store.prune("support", "s", 5)
    assert store.list("support") == ["s"]
    store.prune("support", "s", 6)
    assert store.load("support", "s") is None and store.list("support") == []
    store.save(row("support", "s", 6))  # the turns after survive a pruned past
    latest = store.load("support", "s")
    assert latest is not None and latest["turn_index"] == 6


@pytest.mark.parametrize(
    "bad",
    [
        {"orchestrator_name": "", "session_id": "s", "turn_index": 0, "state": {}, "signature": ""},
        row("support", "s", -1),
        row("support", "s", True),  # type: ignore[arg-type]
        row("support", "s", 0, last_route=5),
        row("support", "s", 0, unknown=1),
        {**row("support", "s", 0), "state": {"x": float("nan")}},
        {**row("support", "s", 0), "signature": None},
    ],
)
def test_bad_rows_are_refused(store: CheckpointStore, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidSnapshotError):
        store.save(bad)


@pytest.mark.parametrize(
    "call",
    [
        lambda store: store.load("", "s"),
        lambda store: store.load("support", ""),
        lambda store: store.load("support", "x" * 300),
        lambda store: store.delete("support", None),
        lambda store: store.list("", None),
        lambda store: store.list("support", 5),
        lambda store: store.prune("support", "s", -1),
        lambda store: store.prune("support", "\x00", 1),
    ],
)
def test_every_store_refuses_bad_keys_alike_and_names_a_checkpoint(
    store: CheckpointStore, call: Any
) -> None:
    """Checked once, in the base (as the snapshot stores are): the memory store once answered
    ``None`` where the others raised, and the error spoke of a snapshot."""
    with pytest.raises(InvalidSnapshotError) as refused:
        call(store)
    assert "snapshot" not in str(refused.value)


@needs_redis
def test_redis_layout_ttl_and_names() -> None:
    import redis

    from warlock_sessions.checkpoints import RedisCheckpointStore

    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"warlock-test:{uuid.uuid4().hex}:"
    store = RedisCheckpointStore(client, prefix=prefix, ttl=120)
    try:
        store.save(row("support", "s1", 0))
        assert client.exists(f"{prefix}session:support:s1", f"{prefix}index:support") == 2
        assert 0 < client.ttl(f"{prefix}session:support:s1") <= 120
        assert 0 < client.ttl(f"{prefix}index:support") <= 120
        with pytest.raises(InvalidSnapshotError, match="':'"):
            store.save(row("a:b", "c", 0))
    finally:
        client.delete(f"{prefix}session:support:s1", f"{prefix}index:support")


@needs_postgres
def test_the_postgres_checkpoint_ddl_is_the_documented_one() -> None:
    from warlock_sessions.checkpoints import PostgresCheckpointStore

    ddl = PostgresCheckpointStore(POSTGRES_URL).schema()
    assert "PRIMARY KEY (orchestrator_name, session_id, turn_index)" in ddl
    assert "CREATE TABLE IF NOT EXISTS warlock_orchestrator_sessions (" in ddl
    assert "idx_warlock_orchestrator_sessions_lookup" in ddl and "turn_index DESC" in ddl
    with pytest.raises(ValueError, match="invalid table name"):
        PostgresCheckpointStore(POSTGRES_URL, table="x; DROP TABLE y")


def test_moments_come_back_as_they_were_saved_on_every_backend(store: CheckpointStore) -> None:
    """The PostgreSQL and Django stores gave back '…05.678000+00:00' for '…05.678Z'."""
    from datetime import UTC, datetime

    store.save(
        row(
            "clock",
            "s1",
            0,
            saved_at="2026-09-20T10:00:05.678Z",
            lock_expires_at=datetime(2026, 9, 20, 10, 1, 5, 678900, tzinfo=UTC),
        )
    )
    loaded = store.load("clock", "s1")
    assert loaded is not None
    assert loaded["saved_at"] == "2026-09-20T10:00:05.678Z"
    assert loaded["lock_expires_at"] == "2026-09-20T10:01:05.679Z"
    assert loaded["lock_acquired_at"] is None
    store.save(row("clock", "s1", 1))  # saved_at now, in the same shape
    latest = store.load("clock", "s1")
    assert latest is not None and latest["saved_at"].endswith("Z")
    assert len(latest["saved_at"]) == len("2026-09-20T10:00:05.678Z")
    with pytest.raises(InvalidSnapshotError, match="saved_at is a moment"):
        store.save(row("clock", "s1", 2, saved_at="yesterday"))
