"""What each snapshot backend promises beyond the shared contract: the PostgreSQL DDL and key
layouts, and the local stores' file modes, atomicity and key encoding."""

from __future__ import annotations

import os
import sqlite3
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from tests.services import POSTGRES_URL, REDIS_URL
from warlock_sessions.snapshots import FileSnapshotStore, SqliteSnapshotStore

from .conftest import needs_postgres, needs_redis


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


# -- PostgreSQL and Redis -------------------------------------------------------------------


@needs_postgres
def test_the_postgres_store_gives_its_exact_ddl_and_reads_text_payloads() -> None:
    from warlock_sessions.snapshots import PostgresSnapshotStore

    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        store = PostgresSnapshotStore(connection)
        assert store.schema() == (
            "CREATE TABLE IF NOT EXISTS warlock_supervisor_snapshots (\n"
            "  run_id    TEXT PRIMARY KEY,\n"
            "  payload   JSONB NOT NULL,\n"
            "  saved_at  TIMESTAMPTZ NOT NULL DEFAULT now()\n"
            ");\n"
            "CREATE INDEX IF NOT EXISTS idx_warlock_supervisor_snapshots_saved_at ON "
            "warlock_supervisor_snapshots (saved_at);"
        )
        table = f"snap_{uuid.uuid4().hex[:10]}"
        store = PostgresSnapshotStore(connection, table=table)
        connection.execute(store.schema())
        try:
            # A row whose jsonb holds the snapshot as a JSON string, as some writers leave it.
            connection.execute(
                f"INSERT INTO {table} (run_id, payload) VALUES ('r1', to_jsonb(%s::text))",
                ['{"runId": "r1", "step": 2}'],
            )
            assert store.load("r1") == {"runId": "r1", "step": 2}
        finally:
            connection.execute(f"DROP TABLE {table}")


def test_an_unsafe_postgres_table_name_is_refused_when_the_store_is_built() -> None:
    from warlock_sessions.snapshots import PostgresSnapshotStore

    with pytest.raises(ValueError, match=r"invalid table name 'evil; DROP TABLE x'"):
        PostgresSnapshotStore("dbname=any", table="evil; DROP TABLE x")


@needs_postgres
def test_the_postgres_store_works_on_a_pool_and_inside_the_callers_transaction() -> None:
    from psycopg_pool import ConnectionPool

    from warlock_sessions.snapshots import PostgresSnapshotStore

    table = f"snap_{uuid.uuid4().hex[:10]}"
    with ConnectionPool(POSTGRES_URL, min_size=1, max_size=2, open=True) as pool:
        store = PostgresSnapshotStore(pool, table=table)
        with pool.connection() as connection:
            connection.execute(store.schema())
        try:
            store.save({"runId": "p", "n": 1})
            assert store.load("p") == {"runId": "p", "n": 1}
            with psycopg.connect(POSTGRES_URL) as connection:  # not autocommit
                inside = PostgresSnapshotStore(connection, table=table)
                with connection.transaction():
                    inside.save({"runId": "q"})
                assert store.load("q") == {"runId": "q"}
        finally:
            with pool.connection() as connection:
                connection.execute(f"DROP TABLE {table}")


@needs_redis
def test_redis_keys_and_ttl() -> None:
    import redis

    from warlock_sessions.snapshots import RedisSnapshotStore

    client = redis.Redis.from_url(REDIS_URL)
    run = f"r-{uuid.uuid4().hex}"
    try:
        RedisSnapshotStore(client).save({"runId": run})
        assert client.get(f"warlock:supervisor:snapshot:{run}") is not None
        RedisSnapshotStore(client, prefix="app:snap:", ttl=120).save({"runId": run})
        assert 0 < client.ttl(f"app:snap:{run}") <= 120
    finally:
        client.delete(f"warlock:supervisor:snapshot:{run}", f"app:snap:{run}")
    with pytest.raises(ValueError, match="ttl"):
        RedisSnapshotStore(client, ttl=0)


# -- files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0])
def test_new_directories_are_0700_and_files_0600_whatever_the_umask(
    tmp_path: Path, mask: int
) -> None:
    with umask(mask):
        FileSnapshotStore(tmp_path / "a" / "b" / "snapshots").save({"runId": "r"})
    for directory in ("a", "a/b", "a/b/snapshots"):
        assert mode(tmp_path / directory) == 0o700, directory
    assert mode(tmp_path / "a/b/snapshots/r.json") == 0o600


def test_existing_modes_are_left_alone_but_a_rewritten_file_is_private(tmp_path: Path) -> None:
    directory = tmp_path / "snapshots"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    for name in ("r.json", "other.json"):
        (directory / name).write_text('{"runId": "x"}')
        os.chmod(directory / name, 0o644)

    FileSnapshotStore(directory).save({"runId": "r"})

    assert mode(directory) == 0o755
    assert mode(directory / "r.json") == 0o600
    assert mode(directory / "other.json") == 0o644


@pytest.mark.parametrize(
    ("dir_mode", "file_mode"),
    [(0o770, 0o600), (0o702, 0o600), (0o700, 0o620), (0o700, 0o602), (0o700, 0o1600),
     (0o700, -1), (0o700, True), (0o700, "600"), (0o500, 0o600), (0o700, 0o400)],
)  # fmt: skip
def test_modes_that_let_others_write_or_lock_the_owner_out_are_refused(
    tmp_path: Path, dir_mode: object, file_mode: object
) -> None:
    with pytest.raises(ValueError):
        FileSnapshotStore(tmp_path, dir_mode=dir_mode, file_mode=file_mode)  # type: ignore[arg-type]


def test_group_readable_modes_are_honoured_exactly(tmp_path: Path) -> None:
    with umask(0o077):
        FileSnapshotStore(tmp_path / "s", dir_mode=0o750, file_mode=0o640).save({"runId": "r"})
    assert mode(tmp_path / "s/r.json") == 0o640


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSnapshotStore(tmp_path)
    store.save({"runId": "r", "v": 1})

    def refuse(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        store.save({"runId": "r", "v": 2})
    monkeypatch.undo()

    assert store.load("r") == {"runId": "r", "v": 1}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["r.json"]


def test_every_key_is_one_file_inside_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "snapshots"
    store = FileSnapshotStore(directory)
    keys = ["../x", "..", ".", "/etc/passwd", "a/b", "a\\b", "session:../../x", "%2e%2e%2f",
            "é", "'*()!~"]  # fmt: skip
    for key in keys:
        store.save({"runId": key})
    names = sorted(path.name for path in directory.iterdir())
    assert names == sorted(quote(key, safe="!*'()") + ".json" for key in keys)
    assert all((directory / name).parent == directory for name in names)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["snapshots"]
    assert store.load("a/b") == {"runId": "a/b"} and store.load("a%2Fb") is None
    for bad in ("x" * 300, ""):
        with pytest.raises(ValueError):
            store.save({"runId": bad})


def test_stray_temp_files_and_symlinks_are_never_read_or_listed(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    store.save({"runId": "r"})
    (tmp_path / ".r.json.123.abcd.tmp").write_text('{"runId": "half"}')
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "elsewhere.json").write_text('{"runId": "elsewhere"}')
    os.symlink(tmp_path / "elsewhere.json", tmp_path / "link.json")
    assert store.list() == ["elsewhere", "r"]
    with pytest.raises(Exception, match="cannot be opened"):
        store.load("link")


# -- SQLite ---------------------------------------------------------------------------------


def test_a_new_sqlite_file_is_private_and_its_sidecars_too(tmp_path: Path) -> None:
    path = tmp_path / "new" / "db.sqlite"
    path.parent.mkdir(mode=0o700)
    (tmp_path / "new" / "db.sqlite-wal").write_bytes(b"")
    os.chmod(tmp_path / "new" / "db.sqlite-wal", 0o644)
    store = SqliteSnapshotStore(tmp_path / "deeper" / "db.sqlite")
    store.save({"runId": "r"})
    assert mode(tmp_path / "deeper") == 0o700
    assert mode(tmp_path / "deeper" / "db.sqlite") == 0o600

    SqliteSnapshotStore(path)
    assert mode(path) == 0o600
    assert mode(tmp_path / "new" / "db.sqlite-wal") == 0o600
    SqliteSnapshotStore(path)  # twice is fine


def test_sqlite_in_memory_creates_nothing_and_a_dangling_symlink_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = SqliteSnapshotStore(":memory:")
    store.save({"runId": "r"})
    assert store.load("r") == {"runId": "r"} and list(tmp_path.iterdir()) == []
    os.symlink(tmp_path / "nowhere" / "db.sqlite", tmp_path / "link.sqlite")
    with pytest.raises(ValueError, match="symbolic link"):
        SqliteSnapshotStore(tmp_path / "link.sqlite")
    assert not (tmp_path / "nowhere").exists()


def test_sqlite_without_create_table_needs_the_table(tmp_path: Path) -> None:
    store = SqliteSnapshotStore(tmp_path / "db.sqlite", create_table=False)
    with pytest.raises(sqlite3.OperationalError):
        store.load("r")
    connection = sqlite3.connect(tmp_path / "mine.sqlite")
    shared = SqliteSnapshotStore(database=connection, table="runs")
    shared.save({"runId": "r"})
    shared.close()  # the caller's connection stays open
    assert connection.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    with pytest.raises(ValueError, match="invalid table name"):
        SqliteSnapshotStore(database=connection, table="runs; DROP TABLE runs")


def test_a_key_whose_file_name_and_temp_name_would_not_fit_is_refused(tmp_path: Path) -> None:
    from warlock_sessions.snapshots import InvalidSnapshotError

    store = FileSnapshotStore(tmp_path)
    store.save({"runId": "k" * 215})  # 220 bytes with ".json": its temp name still fits
    assert store.load("k" * 215) == {"runId": "k" * 215}
    with pytest.raises(InvalidSnapshotError, match="over 220 bytes"):
        store.save({"runId": "k" * 231})


@needs_redis
def test_the_redis_classes_take_a_server_alike_and_ttls_in_float_seconds() -> None:
    """One shape for all four: exactly one of ``client`` or ``url`` (none guesses a server), a
    prefix written before each key as it is, and a TTL in seconds that may have a fraction."""
    import redis

    from warlock_sessions.checkpoints import RedisCheckpointStore
    from warlock_sessions.locks import RedisLock
    from warlock_sessions.snapshots import RedisSnapshotStore
    from warlock_sessions.stores import RedisStore

    client = redis.Redis.from_url(REDIS_URL)

    class OnlyGet:
        def get(self, key: str) -> None:
            return None

    for redis_class in (RedisStore, RedisSnapshotStore, RedisCheckpointStore, RedisLock):
        with pytest.raises(ValueError, match="exactly one of client= or url="):
            redis_class()
        with pytest.raises(ValueError, match=r"needs a redis\.Redis client, not OnlyGet"):
            redis_class(OnlyGet())  # accepted, then every save failed and was only logged
        for ttl in (0, -1, True, "5"):
            with pytest.raises(ValueError, match="ttl"):
                redis_class(client, ttl=ttl)
        built = redis_class(client, prefix="app:x:", ttl=0.0004)
        assert built.key("k") == "app:x:k" and built.ttl_ms == 1  # never 0, which is no TTL
    assert RedisStore(client).key("s") == "warlock:session:s"
    assert RedisSnapshotStore(client).key("r") == "warlock:supervisor:snapshot:r"
    assert RedisCheckpointStore(client).key("index:n") == "warlock:orchestrator:index:n"
    assert RedisLock(client).key("c") == "warlock:lock:c"
    with pytest.raises(ValueError, match="pass 'app:orch:' to keep the keys"):
        RedisCheckpointStore(client, prefix="app:orch")  # its keys were 'app:orch:session:…'
    run = f"r-{uuid.uuid4().hex}"
    try:
        RedisSnapshotStore(url=REDIS_URL, prefix="app:snap:", ttl=1.5).save({"runId": run})
        assert 0 < client.pttl(f"app:snap:{run}") <= 1500
    finally:
        client.delete(f"app:snap:{run}")
