"""Websocket benchmark: 200 concurrent chats x 20 messages against one daphne process.

For each channel layer (in-memory, and channels-redis pub/sub when Redis answers), in one run:
  echo    a bare Channels consumer answering each message through group_send (the floor)
          (echo and ours alternate over several rounds and the medians are compared, since
          this machine's speed drifts by a third between runs)
  ours    ws/sessions/{id}/: each message a real turn through the host (PostgreSQL), checked:
          every reply exactly once, every seq in order with no gap
  http    the same turns through POST /sessions/{id}/turn/

Target (issue 6): ours >= 0.5x echo's throughput; websocket not slower than HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

CHATS = 200
MESSAGES = 20
ROUNDS = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_daphne(layer: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WARLOCK_BENCH_LAYER": layer}
    log = open(f"/tmp/daphne-{layer}.log", "wb")  # noqa: SIM115  (the server process writes it)
    command = [
        sys.executable,
        "-m",
        "daphne",
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        "bench.ws_app:application",
    ]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"daphne did not start; see /tmp/daphne-{layer}.log")


def fresh_visitors(count: int) -> list[str]:
    """Clean tables, and one anonymous Django session (its cookie owns a chat) per chat."""
    from django.contrib.sessions.backends.db import SessionStore

    from bench.common import empty_session_tables

    empty_session_tables()
    keys = []
    for _ in range(count):
        store = SessionStore()
        store["bench"] = True
        store.create()
        keys.append(store.session_key)
    return keys


async def echo_chat(port: int, index: int, latencies: list[float], problems: list[Any]) -> None:
    import websockets

    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/echo/", open_timeout=60) as ws:
        for n in range(MESSAGES):
            started = time.perf_counter()
            await ws.send(json.dumps({"chat": index, "n": n}))
            reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if reply != {"chat": index, "n": n}:
                problems.append(("echo", index, n, reply))
            latencies.append(time.perf_counter() - started)


async def session_chat(
    port: int, index: int, key: str, latencies: list[float], problems: list[Any]
) -> None:
    import websockets

    url = f"ws://127.0.0.1:{port}/ws/sessions/bench-{index}/"
    async with websockets.connect(
        url, additional_headers={"Cookie": f"sessionid={key}"}, open_timeout=60, max_size=None
    ) as ws:
        last_seq = 0
        replies: set[str] = set()
        for n in range(MESSAGES):
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "message", "text": "hi", "id": f"m{n}"}))
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 120))
                if event["type"] == "error":
                    problems.append(("error", index, n, event))
                    break
                if event["seq"] != last_seq + 1:
                    problems.append(("seq", index, last_seq, event["seq"]))
                last_seq = event["seq"]
                if event["type"] == "message" and event["role"] == "user":
                    if event["id"] != f"m{n}":
                        problems.append(("user message", index, n, event))
                elif event["type"] == "message":
                    if event["key"] in replies:
                        problems.append(("duplicate", index, event["key"]))
                    replies.add(event["key"])
                if event["type"] == "turn":
                    break
            latencies.append(time.perf_counter() - started)
        if len(replies) != MESSAGES:
            problems.append(("replies", index, len(replies)))


async def http_chat(
    port: int, index: int, key: str, latencies: list[float], problems: list[Any]
) -> None:
    import httpx

    cookies = {"sessionid": key, "csrftoken": "b" * 32}
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", cookies=cookies, timeout=120
    ) as client:
        for n in range(MESSAGES):
            started = time.perf_counter()
            response = await client.post(
                f"/sessions/http-{index}/turn/",
                json={"message": {"text": "hi", "id": f"m{n}"}},
                headers={"X-CSRFToken": "b" * 32},
            )
            if response.status_code != 200 or len(response.json().get("messages", [])) != 1:
                problems.append(("http", index, n, response.status_code, response.text[:200]))
            latencies.append(time.perf_counter() - started)


async def run_load(kind: str, port: int, keys: list[str]) -> dict[str, Any]:
    latencies: list[float] = []
    problems: list[Any] = []
    chats = {
        "echo": lambda i: echo_chat(port, i, latencies, problems),
        "ours": lambda i: session_chat(port, i, keys[i], latencies, problems),
        "http": lambda i: http_chat(port, i, keys[i], latencies, problems),
    }[kind]
    started = time.perf_counter()
    results = await asyncio.gather(*(chats(i) for i in range(len(keys))), return_exceptions=True)
    elapsed = time.perf_counter() - started
    problems += [
        ("exception", repr(result)[:200]) for result in results if isinstance(result, BaseException)
    ]
    return {
        "rate": len(latencies) / elapsed,
        "p50": statistics.median(latencies) if latencies else 0,
        "p99": statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else 0,
        "done": len(latencies),
        "problems": problems,
    }


def describe(result: dict[str, Any]) -> str:
    if not result["problems"]:
        return f"{result['done']} msgs, every reply once, seq in order"
    problems = result["problems"]
    return f"{result['done']} msgs, {len(problems)} PROBLEMS e.g. {problems[:2]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=CHATS)
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="echo/ours pairs, interleaved (median taken)"
    )
    args = parser.parse_args()
    from bench.common import bench_database_url

    os.environ["WARLOCK_BENCH_DATABASE_URL"] = bench_database_url()
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.ws_settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from tests.services import redis_unreachable

    layers = ["memory"] + ([] if redis_unreachable() else ["redis"])
    print(
        f"{args.chats} concurrent chats x {MESSAGES} messages, one daphne process, PostgreSQL; "
        f"echo and ours interleaved over {args.rounds} rounds, then http once"
    )
    print(f"{'layer':<7} {'load':<5} {'msg/s':>8} {'p50':>9} {'p99':>9}  checked")
    for layer in layers:
        port = free_port()
        server = start_daphne(layer, port)
        try:
            rates: dict[str, list[float]] = {"echo": [], "ours": []}
            for kind in [*(["echo", "ours"] * args.rounds), "http"]:
                result = asyncio.run(run_load(kind, port, fresh_visitors(args.chats)))
                rates.setdefault(kind, []).append(result["rate"])
                print(
                    f"{layer:<7} {kind:<5} {result['rate']:8.0f} {result['p50'] * 1e3:7.1f}ms "
                    f"{result['p99'] * 1e3:7.1f}ms  {describe(result)}"
                )
            echo, ours, http = (statistics.median(rates[kind]) for kind in ("echo", "ours", "http"))
            pairs = zip(rates["ours"], rates["echo"], strict=True)
            per_round = [mine / floor for mine, floor in pairs]
            print(
                f"{layer}: ours / echo = {ours / echo:.2f}x (medians; rounds "
                f"{min(per_round):.2f}-{max(per_round):.2f}x; target >= 0.5x) "
                f"{'OK' if ours / echo >= 0.5 else 'MISSED'}; ours / http = {ours / http:.2f}x "
                f"(target >= 1x) {'OK' if ours >= http else 'MISSED'}"
            )
        finally:
            server.kill()
            server.wait(10)


if __name__ == "__main__":
    main()
