"""Host benchmark on PostgreSQL, two figures:

1. One message turn end to end through Host.handle (load + turn + save + outbox + events +
   wakes) on a ~24 KB session, against one raw-psycopg load+save of the same blob.
   Target (issue 5): <= 2x.
2. Two worker processes firing 2,000 due wakes on 200 sessions, against the single-process
   Host.handle message-turn rate on the same sessions. Target: >= 0.5x.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import statistics
import time
from typing import Any

import psycopg

from bench.common import (
    bench_database_url,
    configure_django,
    empty_tables,
    in_a_tenant,
    measure,
    raw_jsonb_load_save,
    redacting,
    report,
    sealed,
    verdict,
)
from bench.engine import FIELDS
from bench.engine import FLOWS as ENGINE_FLOWS

# The engine benchmark's agent, with its asking run staying to answer every message (so the
# session keeps its size) and a silence flow that re-arms a wake on every turn.
TRIAGEM = {
    **ENGINE_FLOWS[0],
    "onEnd": "stay",
    "steps": [ENGINE_FLOWS[0]["steps"][0], {"id": "fim", "prompt": "Posso ajudar?"}],
}
FLOWS = [
    TRIAGEM,
    *ENGINE_FLOWS[1:],
    {"id": "lembrete", "on": [{"silence": "1h"}], "steps": [{"id": "oi", "prompt": "Oi?"}]},
]
WAKE_FLOWS = [
    {"id": f"f{i}", "steps": [{"id": "w", "wait": "1h"}, {"id": "s", "say": f"done {i}"}]}
    for i in range(10)
]


class ConstantModel:
    """Answers every request the same way, like a scripted model that never runs out."""

    def understand(self, request: Any) -> Any:
        from warlock_sessions.engine import Understanding

        return Understanding(flows={"funil": 10})

    def speak(self, request: Any) -> Any:
        from warlock_sessions.engine import Spoken

        return Spoken("Claro, posso ajudar com isso.")


def bench_agent() -> Any:
    from warlock_sessions.engine import Agent

    return Agent(
        FLOWS + WAKE_FLOWS,
        fields=FIELDS,
        model=ConstantModel(),
        name="bench",
        idle={"prompt": "ok"},
    )


def _work() -> None:
    from warlock_sessions.host import Worker

    Worker(batch=50, poll_interval=0.05).run()


def message_turn_ratio(iterations: int) -> float:
    from warlock_sessions.host import Host
    from warlock_sessions.models import AppliedInput, OutboundMessage, Session, SessionEvent, Wake
    from warlock_sessions.stores import DjangoStore
    from warlock_sessions.testing import realistic_session

    empty_tables(Session, SessionEvent, OutboundMessage, Wake, AppliedInput)
    blob = realistic_session("bench")
    DjangoStore().save(blob, 0)
    sealed(lambda: DjangoStore().save({**blob, "id": "sealed"}, 0))()
    DjangoStore().save({**blob, "id": "redacted"}, 0)
    in_a_tenant(lambda: DjangoStore().save({**blob, "id": "tenant"}, 0))()
    host = Host(bench_agent(), DjangoStore())
    counter = iter(range(10**9))

    def handle(session_id: str = "bench") -> None:
        said = {"message": {"text": "e aí?", "id": f"b{next(counter)}"}}
        result = host.handle(session_id, said)
        assert result.changed and result.messages

    with psycopg.connect(bench_database_url(), autocommit=True) as raw:
        samples = measure(
            {
                "raw-psycopg-load+save": raw_jsonb_load_save(raw, blob),
                "Host.handle message turn": handle,
                "Host.handle message turn, sealed": sealed(lambda: handle("sealed")),
                "Host.handle message turn, redacted": redacting(lambda: handle("redacted")),
                "Host.handle message turn, in a tenant": in_a_tenant(lambda: handle("tenant")),
            },
            iterations=iterations,
        )
    ratios = report(samples, baseline="raw-psycopg-load+save")
    size = len(DjangoStore().load("bench")["runs"][0]["outcomes"])
    print(f"(the session kept its size: {size} outcome lines on its asking run)")
    print(verdict("Host.handle / raw load+save", ratios["Host.handle message turn"], 2.0))
    sealed_ratio = ratios["Host.handle message turn, sealed"] / ratios["Host.handle message turn"]
    # Issue 30 (encryption at rest): sealing costs <= 10 %.
    print(verdict("Host.handle sealed / plain", sealed_ratio, 1.1))
    redacted_ratio = (
        ratios["Host.handle message turn, redacted"] / ratios["Host.handle message turn"]
    )
    # Issue 40: REDACT (every recogniser) costs a turn <= 10 %.
    print(verdict("Host.handle with REDACT / without", redacted_ratio, 1.1))
    tenant_ratio = (
        ratios["Host.handle message turn, in a tenant"] / ratios["Host.handle message turn"]
    )
    # Issue 45 §2 (tenants; issue 30 §4 asked <= 10 %): a tenant's scope costs <= 5 %.
    print(verdict("Host.handle in a tenant / no tenant", tenant_ratio, 1.05))
    return ratios["Host.handle message turn"]


def worker_throughput_ratio() -> float:
    from django.db import connections

    from warlock_sessions.host import Host
    from warlock_sessions.models import AppliedInput, OutboundMessage, Session, SessionEvent, Wake
    from warlock_sessions.stores import DjangoStore
    from warlock_sessions.testing.wakes import seed_due_wakes

    empty_tables(Session, SessionEvent, OutboundMessage, Wake, AppliedInput)
    store = DjangoStore(agent="bench")
    # The wakes are due from the start; no worker runs until the single-process rate is taken.
    seed_due_wakes(store, sessions=200, flows=10, agent="bench", prefix="w")
    host = Host("bench", store)
    timings = []
    for index in range(200):
        started = time.perf_counter()
        host.handle(f"w{index}", {"message": {"text": "oi", "id": "m1"}})
        timings.append(time.perf_counter() - started)
    single_rate = 1 / statistics.median(timings)

    connections.close_all()
    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    workers = [context.Process(target=_work) for _ in range(2)]
    for worker in workers:
        worker.start()
    due_wakes = Wake.objects.filter(key__contains="#k:w:")  # not the silence wakes the turns armed
    while due_wakes.filter(status="pending").exists():
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    for worker in workers:
        os.kill(worker.pid, signal.SIGTERM)
        worker.join(30)
    fired = due_wakes.filter(status="fired").count()
    messages = OutboundMessage.objects.filter(
        session_id__startswith="w", key__contains=":s:"
    ).count()
    worker_rate = fired / elapsed
    ratio = worker_rate / single_rate
    print(f"\nsingle-process Host.handle message turns: {single_rate:.0f}/s (median of 200)")
    print(
        f"2 workers over {fired} due wakes ({messages} messages, each once): "
        f"{worker_rate:.0f} wakes/s"
    )
    print(
        f"worker throughput: {ratio:.2f}x the single-process rate (target >= 0.5x) "
        f"{'OK' if ratio >= 0.5 else 'MISSED'}"
    )
    assert fired == 2000 and messages == 2000
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    configure_django(
        bench_database_url(),
        WARLOCK_SESSIONS={"AGENTS": {"bench": "bench.host.bench_agent"}, "POLL_INTERVAL": 0.05},
    )
    message_turn_ratio(args.iterations)
    worker_throughput_ratio()


if __name__ == "__main__":
    main()
