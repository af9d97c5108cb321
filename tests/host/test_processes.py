"""The host and worker across real processes on the real databases: a conflict storm, a crash
between turn() and save, two workers over 2,000 wakes, a timer through the worker process."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from tests.partitioned import partitioned
from warlock_sessions import signals
from warlock_sessions.errors import SessionConflictError
from warlock_sessions.host import Host, Shard, Worker, run_due_wakes
from warlock_sessions.models import OutboundMessage, SessionEvent, Wake
from warlock_sessions.stores import DjangoStore
from warlock_sessions.testing.wakes import seed_due_wakes

from .conftest import echo_agent, needs_postgres, timer_agent

FORK = multiprocessing.get_context("fork")
POSTGRES_ONLY = [
    needs_postgres,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]


def worker_settings(alias: str, by_bucket: bool = False) -> dict[str, Any]:
    """What a worker process needs: the agent by name, and the store on the test's database;
    claims a bucket at a time with ``by_bucket``, and on the partitioned schema (as on
    Citus)."""
    return {
        "AGENTS": {"timer": "tests.host.conftest.timer_agent"},
        "STORE_OPTIONS": {"using": alias},
        "CLAIM_BY_BUCKET": by_bucket or partitioned(),
    }


def forked(target: Any, *args: Any) -> Any:
    """Start ``target`` in a forked process that shares no database connection with us."""
    connections.close_all()
    process = FORK.Process(target=target, args=args)
    process.start()
    return process


def _storm_sender(alias: str, sender: int, count: int, results: Any) -> None:
    host = Host(echo_agent(), DjangoStore(using=alias), max_conflict_retries=3)
    conflicts = refused = 0

    def count_conflict(**kwargs: Any) -> None:
        nonlocal conflicts
        conflicts += 1

    signals.session_conflict.connect(count_conflict, weak=False)
    for index in range(count):
        while True:
            try:
                host.handle("storm", {"message": {"text": "hi", "id": f"p{sender}-{index}"}})
                break
            except SessionConflictError:
                refused += 1  # refused after the retries: the caller sends it again
    results.put((conflicts, refused))


@pytest.mark.parametrize("alias", [pytest.param("postgres", marks=POSTGRES_ONLY)])
def test_conflict_storm_8_processes_100_messages_each(alias: str) -> None:
    senders, per_sender = 8, 100
    Host(echo_agent(), DjangoStore(using=alias)).handle(
        "storm", {"message": {"text": "hi", "id": "first"}}
    )
    results = FORK.Queue()
    processes = [
        forked(_storm_sender, alias, sender, per_sender, results) for sender in range(senders)
    ]
    outcomes = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0

    total = senders * per_sender + 1
    turns = SessionEvent.objects.using(alias).filter(session_id="storm", type="turn")
    applied = Counter(event.payload["input"]["id"] for event in turns)
    assert len(applied) == total and set(applied.values()) == {1}  # every message exactly once
    keys = list(
        OutboundMessage.objects.using(alias)
        .filter(session_id="storm")
        .values_list("key", flat=True)
    )
    assert len(keys) == total and len(set(keys)) == total
    assert set(keys) == {f"idle:{message_id}" for message_id in applied}
    seqs = list(
        SessionEvent.objects.using(alias)
        .filter(session_id="storm")
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1))
    assert DjangoStore(using=alias).load("storm")["version"] == total
    conflicts = sum(c for c, _ in outcomes)
    refused = sum(r for _, r in outcomes)
    print(
        f"\nconflict storm: {total} turns committed, {conflicts} conflicts replayed "
        f"({conflicts / total:.2f} per turn), {refused} calls refused after 3 retries and resent"
    )


def _three_session_sender(alias: str, sender: int, count: int, results: Any) -> None:
    host = Host(echo_agent(), DjangoStore(using=alias))  # the default MAX_CONFLICT_RETRIES
    refused = 0
    for index in range(count):
        session_id = f"busy-{(sender + index) % 3}"
        try:
            host.handle(session_id, {"message": {"text": "hi", "id": f"p{sender}-{index}"}})
        except SessionConflictError:
            refused += 1
    results.put(refused)


@pytest.mark.parametrize("alias", [pytest.param("postgres", marks=POSTGRES_ONLY)])
def test_six_processes_on_three_sessions_get_no_call_refused_with_the_defaults(alias: str) -> None:
    senders, per_sender = 6, 80
    results = FORK.Queue()
    processes = [
        forked(_three_session_sender, alias, sender, per_sender, results)
        for sender in range(senders)
    ]
    refused = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    assert sum(refused) == 0
    turns = SessionEvent.objects.using(alias).filter(type="turn", session_id__startswith="busy-")
    assert turns.count() == senders * per_sender


def _crash_before_save(alias: str, marker: str) -> None:
    def block(sender: Any, session_id: str, input: Any, result: Any, **kwargs: Any) -> None:
        Path(marker).write_text(json.dumps([m["key"] for m in result.messages]))
        time.sleep(600)  # killed here, between turn() and the save

    signals.turn_computed.connect(block, weak=False)
    run_due_wakes(10, using=alias)


def test_a_worker_killed_between_turn_and_save_leaves_the_session_untouched(
    alias: str, tmp_path: Path
) -> None:
    host = Host(timer_agent(), DjangoStore(using=alias))
    host.handle("c1", {"start": {"flow": "lembrete", "key": "k1"}})
    Wake.objects.using(alias).update(due_at="2000-01-01T00:00:00Z")
    before = DjangoStore(using=alias).load("c1")
    marker = tmp_path / "computed.json"

    with override_settings(WARLOCK_SESSIONS={**worker_settings(alias), "LEASE_SECONDS": 1}):
        worker = forked(_crash_before_save, alias, str(marker))
        deadline = time.monotonic() + 30
        while not marker.exists() or not marker.read_text():
            assert time.monotonic() < deadline, "the worker never computed the turn"
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        computed_keys = json.loads(marker.read_text())

        assert DjangoStore(using=alias).load("c1") == before
        assert not OutboundMessage.objects.using(alias).exists()
        time.sleep(1.2)  # the dead worker's lease runs out
        assert run_due_wakes(10, using=alias) == 1

    assert computed_keys == ["lembrete#k1:aviso:1"]
    assert list(OutboundMessage.objects.using(alias).values_list("key", flat=True)) == computed_keys
    assert DjangoStore(using=alias).load("c1")["version"] == before["version"] + 1


def _work(alias: str) -> None:
    Worker(batch=50, poll_interval=0.05, using=alias).run()


def fire_all_then_stop(alias: str, workers: list[Any], timeout: float) -> None:
    """Wait until no wake is pending, then stop the worker processes with SIGTERM."""
    deadline = time.monotonic() + timeout
    while Wake.objects.using(alias).filter(status="pending").exists():
        assert time.monotonic() < deadline, "wakes left due"
        time.sleep(0.1)
    for worker in workers:
        os.kill(worker.pid, signal.SIGTERM)
        worker.join(30)
        assert worker.exitcode == 0


@pytest.mark.parametrize("by_bucket", [False, True], ids=["together", "by-bucket"])
@pytest.mark.parametrize("alias", [pytest.param("postgres", marks=POSTGRES_ONLY)])
def test_two_workers_fire_2000_wakes_on_200_sessions_each_exactly_once(
    alias: str, by_bucket: bool
) -> None:
    seed_due_wakes(DjangoStore(using=alias, agent="timer"), sessions=200, flows=10, agent="timer")

    with override_settings(WARLOCK_SESSIONS=worker_settings(alias, by_bucket)):
        workers = [forked(_work, alias) for _ in range(2)]
        fire_all_then_stop(alias, workers, timeout=240)

    assert Wake.objects.using(alias).filter(status="fired").count() == 2000
    keys = Counter(OutboundMessage.objects.using(alias).values_list("session_id", "key"))
    assert len(keys) == 2000 and set(keys.values()) == {1}
    assert all(DjangoStore(using=alias).load(f"s{i}")["runs"] == [] for i in range(0, 200, 17))


def _worker_command(alias: str) -> None:
    from django.core.management import call_command

    call_command("warlock_worker", poll_interval=0.1, database=alias, verbosity=0)


def test_a_timer_fires_through_the_worker_process_which_stops_on_sigterm(alias: str) -> None:
    with override_settings(WARLOCK_SESSIONS=worker_settings(alias)):
        started = Host("timer", DjangoStore(using=alias)).handle(
            "t1", {"start": {"flow": "lembrete", "key": "k"}}
        )
        assert [w["key"].rsplit(":", 1)[0] for w in started.schedule] == ["lembrete#k:espera"]
        worker = forked(_worker_command, alias)
        deadline = time.monotonic() + 30
        while not OutboundMessage.objects.using(alias).filter(session_id="t1").exists():
            assert time.monotonic() < deadline, "the timer never fired"
            time.sleep(0.1)
        os.kill(worker.pid, signal.SIGTERM)
        worker.join(15)
    assert worker.exitcode == 0
    message = OutboundMessage.objects.using(alias).get(session_id="t1")
    assert (message.key, message.text) == ("lembrete#k:aviso:1", "Hora do lembrete!")
    assert SessionEvent.objects.using(alias).filter(session_id="t1", type="message").count() == 1
    assert Wake.objects.using(alias).get().status == "fired"


def _sharded_worker(alias: str, shard: str) -> None:
    from django.core.management import call_command

    call_command("warlock_worker", poll_interval=0.05, database=alias, shard=shard, verbosity=0)


def test_sharded_workers_each_fire_only_their_sessions_wakes(alias: str) -> None:
    """``--shard k/n``: workers of different shards never claim from the same sessions."""
    seed_due_wakes(DjangoStore(using=alias, agent="timer"), sessions=40, flows=3, agent="timer")
    first, second = Shard(0, 2), Shard(1, 2)
    sessions = set(Wake.objects.using(alias).values_list("session_id", flat=True))
    mine = {session for session in sessions if first.holds(session)}
    assert 0 < len(mine) < len(sessions)  # both shards hold some of the 40
    with override_settings(WARLOCK_SESSIONS=worker_settings(alias)):
        assert run_due_wakes(500, using=alias, shard=first) == 3 * len(mine)
        left = set(Wake.objects.using(alias).filter(status="pending").values_list("session_id"))
        assert {session for (session,) in left} == sessions - mine
        workers = [forked(_sharded_worker, alias, str(shard)) for shard in (first, second)]
        fire_all_then_stop(alias, workers, timeout=60)
    keys = Counter(OutboundMessage.objects.using(alias).values_list("session_id", "key"))
    assert len(keys) == 120 and set(keys.values()) == {1}


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "0/0", "0/33", "-1/2"])
def test_a_shard_is_index_over_count(text: str) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--shard: "):
        call_command("warlock_worker", shard=text, once=True, verbosity=0)


@pytest.mark.parametrize("alias", [pytest.param("postgres", marks=POSTGRES_ONLY)])
def test_long_work_beside_the_wakes_does_not_hold_them_up(alias: str) -> None:
    """A long resume ran inside the pass: no wake fired until it was done."""
    import threading
    from datetime import timedelta

    from django.utils import timezone

    Host(timer_agent(), DjangoStore(using=alias)).handle(
        "c1", {"start": {"flow": "lembrete", "key": "k1"}}
    )
    fired = threading.Event()

    def on_fired(**kwargs: Any) -> None:
        fired.set()

    signals.wake_fired.connect(on_fired, weak=False)
    seen: list[bool] = []

    def long_resume(limit: int, *, using: str | None, should_stop: Any) -> int:
        if not seen:  # the first call: a run whose step takes long
            Wake.objects.using(alias).update(due_at=timezone.now() + timedelta(seconds=0.3))
            seen.append(fired.wait(10))
            worker.stop()
        return 1

    worker = Worker(batch=10, poll_interval=0.05, using=alias, more_work=[long_resume])
    try:
        with override_settings(WARLOCK_SESSIONS=worker_settings(alias)):
            worker.run()
    finally:
        signals.wake_fired.disconnect(on_fired)
    assert seen == [True]
