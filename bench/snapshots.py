"""Snapshot benchmark on PostgreSQL, two figures:

1. One save + one load of a workflow snapshot (~8 KB): DjangoSnapshotStore, against
   PostgresSnapshotStore on a raw psycopg connection (the baseline), and LangGraph's
   PostgresSaver put + get_tuple of the same payload.
   Targets (issue 13): Django <= 1.1x the PostgreSQL store; both <= 0.8x LangGraph.
2. A 20-step workflow with the Django store against the same workflow with no store: the
   snapshot overhead per step, against one raw psycopg upsert of the same snapshot.
   Target: <= 1.5x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import psycopg
from psycopg.types.json import Jsonb

from bench.common import (
    bench_database_url,
    configure_django,
    empty_tables,
    measure,
    report,
    verdict,
)

STEPS = 20


def snapshot_payload(run_id: str) -> dict:
    """What a workflow's snapshot holds halfway: an input, each step's record and a state of
    a few kilobytes."""
    state = {
        f"step_{i}": {"items": [{"sku": f"A{j}", "qty": j} for j in range(8)], "note": "é" * 40}
        for i in range(10)
    }
    steps = {
        f"step_{i}": {
            "status": "completed",
            "startedAt": "2026-12-01T10:00:00.000Z",
            "endedAt": "2026-12-01T10:00:01.000Z",
            "attempts": 1,
        }
        for i in range(10)
    }
    return {
        "runId": run_id,
        "workflowName": "bench",
        "signature": "1f24a29c",
        "input": {"order": 42, "customer": "ana@example.com"},
        "state": state,
        "steps": steps,
        "next": "step_10",
        "status": "running",
        "startedAt": "2026-12-01T10:00:00.000Z",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--workflows", type=int, default=60)
    args = parser.parse_args()

    url = bench_database_url()
    configure_django(url)

    from warlock_sessions.models import Snapshot
    from warlock_sessions.snapshots import DjangoSnapshotStore, PostgresSnapshotStore
    from warlock_sessions.workflows import Step, Workflow

    payload = snapshot_payload("bench")
    print(f"snapshot: {len(json.dumps(payload)) / 1024:.1f} KiB; {args.iterations} pairs each")

    empty_tables(Snapshot)
    django_store = DjangoSnapshotStore()
    raw = psycopg.connect(url, autocommit=True)
    postgres_store = PostgresSnapshotStore(raw, table="bench_snapshots")
    raw.execute("DROP TABLE IF EXISTS bench_snapshots")
    raw.execute(postgres_store.schema())

    def django_pair() -> None:
        django_store.save(payload)
        django_store.load("bench")

    def postgres_pair() -> None:
        postgres_store.save(payload)
        postgres_store.load("bench")

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver

    saver_context = PostgresSaver.from_conn_string(url)
    saver = saver_context.__enter__()
    saver.setup()
    with saver.conn.cursor() as cursor:
        cursor.execute("TRUNCATE checkpoints, checkpoint_blobs")
    thread = {"configurable": {"thread_id": "snap", "checkpoint_ns": ""}}
    version = 0

    def langgraph_pair() -> None:
        nonlocal version
        version += 1
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"snapshot": payload}
        checkpoint["channel_versions"] = {"snapshot": version}
        saver.put(thread, checkpoint, {}, {"snapshot": version})
        saver.get_tuple(thread)

    samples = measure(
        {
            "PostgresSnapshotStore": postgres_pair,
            "DjangoSnapshotStore": django_pair,
            "langgraph": langgraph_pair,
        },
        iterations=args.iterations,
    )
    ratios = report(samples, baseline="PostgresSnapshotStore")
    print(
        verdict("DjangoSnapshotStore / PostgresSnapshotStore", ratios["DjangoSnapshotStore"], 1.1)
    )
    lang = ratios["langgraph"]
    print(verdict("DjangoSnapshotStore / langgraph", ratios["DjangoSnapshotStore"] / lang, 0.8))
    print(verdict("PostgresSnapshotStore / langgraph", 1 / lang, 0.8))
    saver_context.__exit__(None, None, None)

    # -- 2. a 20-step workflow ---------------------------------------------------------------
    raw.execute("DROP TABLE IF EXISTS bench_raw_snapshots")
    raw.execute(
        "CREATE TABLE bench_raw_snapshots (run_id text PRIMARY KEY, payload jsonb, "
        "saved_at timestamptz)"
    )

    def raw_upsert() -> None:
        raw.execute(
            "INSERT INTO bench_raw_snapshots VALUES (%s, %s, now()) ON CONFLICT (run_id) "
            "DO UPDATE SET payload = EXCLUDED.payload, saved_at = EXCLUDED.saved_at",
            ["bench", Jsonb(payload)],
        )

    state_part = payload["state"]["step_0"]
    steps = [Step(f"step_{i}", run=lambda ctx: state_part) for i in range(STEPS)]
    stored = Workflow("bench-stored", steps, store=django_store)
    unstored = Workflow("bench-unstored", steps)  # no store: nothing is saved
    timings: dict[str, list[float]] = {"stored": [], "unstored": [], "upsert": []}
    for warm in range(5):
        stored.execute(run_id=f"warm-{warm}")
        unstored.execute()
    for index in range(args.workflows):  # interleaved, so each sees the same machine noise
        for name, workflow in (("stored", stored), ("unstored", unstored)):
            started = time.perf_counter()
            workflow.execute(run_id=f"wf-{name}-{index}")
            timings[name].append(time.perf_counter() - started)
        for _ in range(STEPS + 1):
            started = time.perf_counter()
            raw_upsert()
            timings["upsert"].append(time.perf_counter() - started)
    per_step = (statistics.median(timings["stored"]) - statistics.median(timings["unstored"])) / (
        STEPS + 1  # a save per step, and the final one
    )
    upsert = statistics.median(timings["upsert"])
    print(
        f"20-step workflow: {statistics.median(timings['stored']) * 1e3:.2f} ms with the Django "
        f"store, {statistics.median(timings['unstored']) * 1e3:.2f} ms without; "
        f"{per_step * 1e3:.3f} ms of snapshot per step, raw upsert {upsert * 1e3:.3f} ms"
    )
    print(verdict("snapshot overhead per step / raw upsert", per_step / upsert, 1.5))
    raw.close()


if __name__ == "__main__":
    main()
