"""Servers side by side: the same chats through 1 and then 2 daphne processes on the Redis
layer and one PostgreSQL, interleaved over rounds (medians compared).

Each chat has two tabs of one visitor: the first speaks, the second only listens. With one
server both are on it; with two, the listener is on the other server, so every turn also
crosses between servers (the Redis layer) to reach it. Measured per turn:

  turns/s and p99     as a client sees them (one 2-core machine: a second server adds no
                      cores here, so this shows the cost of crossing, not the gain)
  server CPU          the daphne processes' own CPU time (/proc), per turn
  PostgreSQL CPU      every postgres process of the cluster, per turn
  Redis CPU           redis-server's, per turn
  transactions        pg_stat_database's commits of the benchmark database, per turn
  statements          what one turn sends to the database, counted in this process (each is
                      one round trip): it does not depend on how many servers there are

Target (issue 29): what a turn costs the servers, PostgreSQL and Redis together grows by at
most 10 % from 1 server to 2. The capacity model of docs/deployment.md comes from these.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

from bench.common import cpu_seconds, pids_named, verdict
from bench.ws import SessionChecks, free_port, fresh_visitors, p99, session_socket, start_daphne

CHATS = 60
MESSAGES = 20
ROUNDS = 3
CROSSING_TARGET = 1.10


def commits(database_url: str) -> int:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def listen(port: int, key: str, seen: list[int], stop: asyncio.Event) -> None:
    async with session_socket(port, key) as ws:
        while not stop.is_set():
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
            except TimeoutError:
                continue
            if "seq" in frame:
                seen.append(frame["seq"])


async def chat(
    ports: list[int], index: int, key: str, latencies: list[float], problems: list[Any]
) -> None:
    speaker_port = ports[index % len(ports)]
    listener_port = ports[(index + 1) % len(ports)]
    heard: list[int] = []
    stop = asyncio.Event()
    listener = asyncio.create_task(listen(listener_port, key, heard, stop))
    async with session_socket(speaker_port, key) as ws:
        checks = SessionChecks(index, problems)
        for n in range(MESSAGES):
            started = time.perf_counter()
            await checks.message(ws, n)
            latencies.append(time.perf_counter() - started)
        deadline = time.monotonic() + 10
        while (not heard or max(heard) < checks.last_seq) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    stop.set()
    await listener
    if sorted(set(heard)) != list(range(1, checks.last_seq + 1)):
        problems.append(("listener", index, len(heard), checks.last_seq))


async def load(ports: list[int], keys: list[str]) -> dict[str, Any]:
    latencies: list[float] = []
    problems: list[Any] = []
    started = time.perf_counter()
    results = await asyncio.gather(
        *(chat(ports, index, key, latencies, problems) for index, key in enumerate(keys)),
        return_exceptions=True,
    )
    problems += [repr(result)[:200] for result in results if isinstance(result, BaseException)]
    return {
        "elapsed": time.perf_counter() - started,
        "turns": len(latencies),
        "p99": p99(latencies),
        "problems": problems,
    }


def one_round(servers: int, database_url: str) -> dict[str, float]:
    ports = [free_port() for _ in range(servers)]
    processes = [start_daphne("redis", port) for port in ports]
    try:
        keys = fresh_visitors(CHATS)
        servers_before = cpu_seconds([process.pid for process in processes])
        others_before = {
            "postgres": cpu_seconds(pids_named("postgres"), reaped=True),
            "redis": cpu_seconds(pids_named("redis-server")),
        }
        time.sleep(1)  # the statistics of the set-up reach pg_stat_database first
        committed = commits(database_url)
        result = asyncio.run(load(ports, keys))
        spent = {"server": cpu_seconds([process.pid for process in processes]) - servers_before}
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)
    time.sleep(1.5)  # the servers' backends end, are reaped and flush their statistics
    spent["postgres"] = cpu_seconds(pids_named("postgres"), reaped=True) - others_before["postgres"]
    spent["redis"] = cpu_seconds(pids_named("redis-server")) - others_before["redis"]
    committed = commits(database_url) - committed
    if result["problems"]:
        raise RuntimeError(f"{servers} server(s): {result['problems'][:3]}")
    turns = result["turns"]
    return {
        "turns/s": turns / result["elapsed"],
        "p99 ms": result["p99"] * 1e3,
        "server ms": spent["server"] / turns * 1e3,
        "postgres ms": spent["postgres"] / turns * 1e3,
        "redis ms": spent["redis"] / turns * 1e3,
        "commits": committed / turns,
    }


def statements_per_turn() -> float:
    """What one socket-sized turn (a message and its reply) sends to the database."""
    from django.db import connection

    from warlock_sessions.agents import get_agent
    from warlock_sessions.host import Host
    from warlock_sessions.stores import DjangoStore

    host = Host(get_agent("echo"), DjangoStore())
    host.handle("bench-statements", {"message": {"text": "hi", "id": "warm"}})
    sent: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sent.append(sql)
        return execute(sql, params, many, context)

    turns = 20
    with connection.execute_wrapper(count):
        for n in range(turns):
            host.handle("bench-statements", {"message": {"text": "hi", "id": f"m{n}"}})
    return len(sent) / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    from bench.common import bench_database_url

    database_url = bench_database_url()
    os.environ["WARLOCK_BENCH_DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.ws_settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from tests.services import redis_unreachable

    if redis_unreachable():
        print(f"cluster: skipped ({redis_unreachable()})")
        return
    print(
        f"{CHATS} chats x {MESSAGES} messages, a listening tab each, Redis layer, PostgreSQL; "
        f"1 and 2 daphne servers interleaved over {args.rounds} rounds"
    )
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for servers in (1, 2):
            figures = one_round(servers, database_url)
            runs[servers].append(figures)
            print(
                f"  {servers} server(s): "
                + ", ".join(f"{name} {value:.2f}" for name, value in figures.items())
            )
    median = {
        servers: {name: statistics.median(run[name] for run in found) for name in found[0]}
        for servers, found in runs.items()
    }
    statements = statements_per_turn()
    for servers, figures in median.items():
        print(
            f"{servers} server(s), medians: "
            + ", ".join(f"{name} {value:.2f}" for name, value in figures.items())
        )
    print(f"statements (round trips) per turn: {statements:.1f}, whatever the servers")
    cost = {
        servers: figures["server ms"] + figures["postgres ms"] + figures["redis ms"]
        for servers, figures in median.items()
    }
    print(verdict("CPU per turn, 2 servers / 1", cost[2] / cost[1], CROSSING_TARGET))
    one = median[1]
    print(
        f"capacity: {1000 / one['server ms']:.0f} turns/s per server core, "
        f"{1000 / one['postgres ms']:.0f} per PostgreSQL core, "
        f"{1000 / max(one['redis ms'], 1e-3):.0f} per Redis core; the first bottleneck is "
        + max(
            ("the servers", one["server ms"]),
            ("PostgreSQL", one["postgres ms"]),
            ("Redis", one["redis ms"]),
            key=lambda item: item[1],
        )[0]
    )


if __name__ == "__main__":
    main()
