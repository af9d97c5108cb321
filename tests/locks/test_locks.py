"""Session locks (scenarios 11-13): FIFO per key in a process, aborting a wait, and the
distributed locks across real processes, including a holder killed while it holds the lock."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections

from tests.services import POSTGRES_URL, REDIS_URL, postgres_unreachable, redis_unreachable
from warlock_sessions.errors import SessionLockAborted, SessionLockTimeout
from warlock_sessions.locks import AbortSignal, InProcessLock, NoLock, SessionLock

needs_postgres = pytest.mark.skipif(
    postgres_unreachable() is not None, reason=postgres_unreachable() or ""
)
needs_redis = pytest.mark.skipif(redis_unreachable() is not None, reason=redis_unreachable() or "")


def holder(lock: SessionLock, key: str, log: list[str], name: str, hold: float = 0.2) -> Any:
    def run() -> None:
        def body() -> None:
            log.append(f"{name}:start")
            time.sleep(hold)
            log.append(f"{name}:end")

        lock.with_lock(key, body)

    return threading.Thread(target=run)


def test_one_key_runs_in_arrival_order_and_other_keys_in_parallel() -> None:
    lock = InProcessLock()
    log: list[str] = []
    a, b = holder(lock, "s", log, "a"), holder(lock, "s", log, "b")
    t = holder(lock, "t", log, "t", hold=0.05)
    a.start()
    time.sleep(0.05)
    b.start()
    t.start()
    for thread in (a, b, t):
        thread.join()
    assert [entry for entry in log if entry[0] in "ab"] == ["a:start", "a:end", "b:start", "b:end"]
    assert log.index("t:end") < log.index("a:end")  # t never waited for s
    assert lock._queues == {} and lock._held == set()  # idle entries are dropped


def test_a_holder_that_raises_does_not_wedge_the_key() -> None:
    lock = InProcessLock()
    with pytest.raises(ZeroDivisionError):
        lock.with_lock("s", lambda: 1 / 0)
    assert lock.with_lock("s", lambda: "free again") == "free again"


def test_an_aborted_wait_raises_its_reason_and_leaves_the_others_alone() -> None:
    lock = InProcessLock()
    log: list[str] = []
    first = holder(lock, "s", log, "a", hold=0.3)
    first.start()
    time.sleep(0.05)
    signal = AbortSignal()
    outcome: list[Any] = []

    def waiter() -> None:
        try:
            lock.with_lock("s", lambda: outcome.append("ran"), signal=signal)
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.05)
    reason = RuntimeError("the user left")
    signal.abort(reason)
    thread.join(2)
    assert outcome == [reason]
    first.join()
    assert log == ["a:start", "a:end"]
    assert lock.with_lock("s", lambda: "later") == "later"

    # A free lock is taken even with an aborted signal; a pre-aborted waiter behind a holder
    # raises at once, with the default reason.
    already = AbortSignal()
    already.abort()
    assert lock.with_lock("s", lambda: "fn owns cancellation", signal=already) == (
        "fn owns cancellation"
    )
    blocker = holder(lock, "s", log, "c", hold=0.3)
    blocker.start()
    time.sleep(0.05)
    started = time.monotonic()
    with pytest.raises(SessionLockAborted):
        lock.with_lock("s", lambda: None, signal=already)
    assert time.monotonic() - started < 0.1
    blocker.join()


def test_no_lock_runs_at_once() -> None:
    assert NoLock().with_lock("s", lambda: 3) == 3


# -- across processes --------------------------------------------------------------------


def make_database_lock(alias: str) -> Callable[[], SessionLock]:
    def make() -> SessionLock:
        from warlock_sessions.locks import DatabaseLock

        return DatabaseLock(alias, ttl=1.0)

    return make


def make_redis_lock(prefix: str) -> Callable[[], SessionLock]:
    def make() -> SessionLock:
        from warlock_sessions.locks import RedisLock

        return RedisLock(url=REDIS_URL, prefix=prefix, ttl=1.0)

    return make


def make_advisory_lock() -> SessionLock:
    from warlock_sessions.locks import PostgresAdvisoryLock

    return PostgresAdvisoryLock(POSTGRES_URL)


#: A pool per process: a forked child cannot use its parent's.
_POOLS: dict[int, Any] = {}


def make_pooled_advisory_lock() -> SessionLock:
    from psycopg_pool import ConnectionPool

    from warlock_sessions.locks import PostgresAdvisoryLock

    pool = _POOLS.get(os.getpid())
    if pool is None:
        pool = _POOLS[os.getpid()] = ConnectionPool(POSTGRES_URL, min_size=1, max_size=8, open=True)
    return PostgresAdvisoryLock(pool)


LEASED = [
    pytest.param("db-sqlite", marks=pytest.mark.django_db(transaction=True)),
    pytest.param(
        "db-postgres",
        marks=[
            needs_postgres,
            pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
        ],
    ),
    pytest.param("redis", marks=needs_redis),
]


@pytest.fixture(
    params=[
        *LEASED,
        pytest.param("advisory", marks=needs_postgres),
        pytest.param("advisory-pool", marks=needs_postgres),
    ]
)
def make_lock(request: pytest.FixtureRequest) -> Iterator[tuple[str, Callable[[], SessionLock]]]:
    if request.param == "db-sqlite":
        yield request.param, make_database_lock("default")
    elif request.param == "db-postgres":
        yield request.param, make_database_lock("postgres")
    elif request.param == "redis":
        yield request.param, make_redis_lock(f"warlock-test:{uuid.uuid4().hex}:lock:")
    elif request.param == "advisory":
        yield request.param, make_advisory_lock
    else:
        yield request.param, make_pooled_advisory_lock
        pool = _POOLS.pop(os.getpid(), None)
        if pool is not None:
            pool.close()


def hold_in_child(
    make: Callable[[], SessionLock], key: str, marks: str, name: str, hold: float, die: bool
) -> None:
    def body() -> None:
        with open(marks, "a") as handle:
            handle.write(f"{name}:start\n")
        time.sleep(hold)
        if die:
            os._exit(9)  # killed while holding the lock
        with open(marks, "a") as handle:
            handle.write(f"{name}:end\n")

    make().with_lock(key, body)
    connections.close_all()


def test_two_processes_take_turns(make_lock: Any, tmp_path: Any) -> None:
    _, make = make_lock
    marks = str(tmp_path / "marks")
    key = f"session:{uuid.uuid4().hex}"
    connections.close_all()
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=hold_in_child, args=(make, key, marks, name, 0.4, False))
        for name in ("p", "q")
    ]
    for child in children:
        child.start()
        time.sleep(0.1)
    for child in children:
        child.join(30)
    with open(marks) as handle:
        lines = handle.read().split()
    assert lines in (
        ["p:start", "p:end", "q:start", "q:end"],
        ["q:start", "q:end", "p:start", "p:end"],
    )


def test_a_killed_holder_is_taken_over(make_lock: Any, tmp_path: Any) -> None:
    kind, make = make_lock
    marks = str(tmp_path / "marks")
    key = f"session:{uuid.uuid4().hex}"
    connections.close_all()
    child = multiprocessing.get_context("fork").Process(
        target=hold_in_child, args=(make, key, marks, "dead", 0.1, True)
    )
    child.start()
    child.join(30)
    assert child.exitcode == 9
    started = time.monotonic()
    assert make().with_lock(key, lambda: "mine") == "mine"
    waited = time.monotonic() - started
    # A lease (1 s here) must run out first; an advisory lock dies with its connection.
    assert waited < (0.5 if kind.startswith("advisory") else 3.0)


@pytest.mark.parametrize("make_lock", LEASED, indirect=True)
def test_a_wait_times_out_and_a_stale_token_releases_nothing(make_lock: Any) -> None:
    from warlock_sessions.locks import LeasedLock

    lock = make_lock[1]()
    assert isinstance(lock, LeasedLock)
    key = f"session:{uuid.uuid4().hex}"
    assert lock._try_acquire(key, "holder")
    lock._release(key, "someone-else")  # a stale holder's release
    assert not lock._try_acquire(key, "third")  # still held by "holder"
    lock.timeout = 0.3
    with pytest.raises(SessionLockTimeout):
        lock.with_lock(key, lambda: None)
    lock._release(key, "holder")
    assert lock.with_lock(key, lambda: "free") == "free"


@needs_postgres
def test_an_advisory_wait_times_out_and_an_abort_stops_it() -> None:
    from warlock_sessions.locks import PostgresAdvisoryLock

    key = f"session:{uuid.uuid4().hex}"
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        PostgresAdvisoryLock(POSTGRES_URL).with_lock(key, lambda: (held.set(), release.wait(5)))

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    with pytest.raises(SessionLockTimeout):
        PostgresAdvisoryLock(POSTGRES_URL, timeout=0.3).with_lock(key, lambda: None)
    signal = AbortSignal()
    threading.Timer(0.2, signal.abort).start()
    with pytest.raises(SessionLockAborted):
        PostgresAdvisoryLock(POSTGRES_URL).with_lock(key, lambda: None, signal=signal)
    release.set()
    thread.join()


# -- leases that are lost ----------------------------------------------------------------


def backends(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_renewing_a_database_lock_keeps_no_connection() -> None:
    from warlock_sessions.locks import DatabaseLock

    lock = DatabaseLock("postgres", ttl=0.3)
    before = backends("postgres")
    for index in range(3):  # each turn outlives two renewals
        lock.with_lock(f"long-{index}", lambda: time.sleep(0.35))
    # One per long turn, for good, before: the renewing thread's connection was never closed.
    assert backends("postgres") == before


def take_over(lock: Any, key: str) -> None:
    """Another holder takes ``key``, as it may once this holder's lease ran out unnoticed."""
    if hasattr(lock, "client"):  # RedisLock
        lock.client.set(lock.prefix + key, "somebody-else")
    else:
        from warlock_sessions.models import SessionLockRow

        SessionLockRow.objects.using(lock.using).filter(key=key).update(token="somebody-else")


def test_a_holder_whose_lease_was_taken_over_is_told(
    make_lock: tuple[str, Callable[[], SessionLock]],
) -> None:
    if make_lock[0].startswith("advisory"):
        pytest.skip("an advisory lock has no lease: its connection holds it")
    from warlock_sessions.errors import LeaseLostError
    from warlock_sessions.locks import check_lease

    lock: Any = make_lock[1]()
    seen: list[str] = []

    def body() -> None:
        check_lease()  # held: fine
        take_over(lock, "lost")
        time.sleep(lock.ttl / 3 + 0.3)  # a renewal fails meanwhile
        with pytest.raises(LeaseLostError):
            check_lease()
        seen.append("told")

    lock.with_lock("lost", body)
    assert seen == ["told"]


@needs_postgres
def test_every_postgres_class_is_given_its_database_alike() -> None:
    """A pool, a connection or a conninfo string; the advisory lock refuses a connection it
    would share, and every class refuses what is none of the three."""
    import psycopg

    from warlock_sessions.checkpoints import PostgresCheckpointStore
    from warlock_sessions.locks import PostgresAdvisoryLock
    from warlock_sessions.snapshots import PostgresSnapshotStore

    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        for store_class in (PostgresSnapshotStore, PostgresCheckpointStore):
            for given in (POSTGRES_URL, connection):
                assert store_class(given).connection is given
            for wrong in (object(), "", None):
                with pytest.raises(ValueError, match=r"ConnectionPool|conninfo"):
                    store_class(wrong)
        with pytest.raises(ValueError, match="cannot share one"):
            PostgresAdvisoryLock(connection)
    assert PostgresAdvisoryLock(POSTGRES_URL).with_lock("k", lambda: 2) == 2
