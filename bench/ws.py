"""Websocket benchmark: 200 concurrent chats x 20 messages against one server process.

For each channel layer (in-memory, and channels-redis pub/sub when Redis answers) and each
ASGI server (daphne, and uvicorn), in one run:
  echo    a bare Channels consumer answering each message through group_send (the floor)
  peer    what a Django developer writes without this app: the Channels tutorial's chat made
          durable (bench/peer: each message saved with database_sync_to_async, then sent to
          the room through the layer, one frame per member)
  ours    ws/sessions/{id}/: each message a real turn through the host (PostgreSQL), checked:
          every reply exactly once, every seq in order with no gap
          (echo, peer and ours alternate over several rounds and the medians are compared,
          since this machine's speed drifts by a third between runs; every socket connects
          with its visitor's cookie, so each loads a Django session)
  http    the same turns through POST /sessions/{id}/turn/

Then, on a fresh daphne process per consumer, the memory 1,000 idle chats hold: each connects,
exchanges one message and stays connected; the growth of the server's RSS is compared.

Targets (issues 6 and 17): ours >= 0.75x echo's throughput and ours p99 <= 2x echo's, on both
layers; RSS per 1,000 idle chats <= 1.3x echo's; the websocket not slower than HTTP. Issue 29:
ours >= 1.3x the peer's messages a second, and ours' p99 (first messages included) <= 1.0x
the peer's, on both layers.
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

from bench.common import cpu_seconds, pids_named, verdict

CHATS = 200
MESSAGES = 20
ROUNDS = 3
IDLE_CHATS = 1000
#: Chats connecting at once while the idle ones are opened.
CONNECTING = 100
THROUGHPUT_TARGET = 0.75
P99_TARGET = 2.0
#: Against the durable tutorial chat (issue 29 §3): ours at least 1.3x its messages a second,
#: and ours' p99, first messages included, no longer than its.
PEER_TARGET = 1.3
PEER_P99_TARGET = 1.0
RSS_TARGET = 1.3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_daphne(layer: str, port: int) -> subprocess.Popen[bytes]:
    return start_server("daphne", layer, port)


#: How each ASGI server is started on the benchmark's application.
SERVERS = {
    "daphne": ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "bench.ws_app:application"],
    "uvicorn": [
        "-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--no-access-log",
        "--log-level", "warning", "--lifespan", "off", "bench.ws_app:application",
    ],
}  # fmt: skip


def start_server(kind: str, layer: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WARLOCK_BENCH_LAYER": layer}
    log = open(f"/tmp/{kind}-{layer}.log", "wb")  # noqa: SIM115  (the server process writes it)
    command = [sys.executable, *(part.format(port=port) for part in SERVERS[kind])]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"{kind} did not start; see /tmp/{kind}-{layer}.log")


def fresh_visitors(count: int, *, returning: bool = False) -> list[str]:
    """Clean tables, and one anonymous Django session (its cookie owns a chat) per chat: a new
    visitor's, or with ``returning`` one that has chatted before (its session already keeps
    the visitor's identity, so connecting writes nothing to it)."""
    from django.contrib.sessions.backends.db import SessionStore

    from bench.common import empty_session_tables
    from warlock_sessions.permissions import VISITOR_KEY, visitor_key

    empty_session_tables()
    keys = []
    for _ in range(count):
        store = SessionStore()
        store["bench"] = True
        store.create()
        if returning:
            store[VISITOR_KEY] = visitor_key(store.session_key or "")
            store.save()
        keys.append(store.session_key)
    return keys


def echo_socket(port: int, key: str) -> Any:
    import websockets

    # With the visitor's cookie, as every other socket here: its connect loads the session.
    return websockets.connect(
        f"ws://127.0.0.1:{port}/ws/echo/",
        additional_headers={"Cookie": f"sessionid={key}"},
        open_timeout=60,
    )


def peer_socket(port: int, key: str) -> Any:
    import websockets

    return websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/peer-{key}/",
        additional_headers={"Cookie": f"sessionid={key}"},
        open_timeout=60,
    )


async def peer_chat(
    port: int, index: int, key: str, latencies: list[tuple[int, float]], problems: list[Any]
) -> None:
    """The durable tutorial chat: each message saved, then back to the room (here, the one
    member) through the layer; a message is done when its own copy is back."""
    async with peer_socket(port, key) as ws:
        for n in range(MESSAGES):
            started = time.perf_counter()
            await ws.send(json.dumps({"text": "hi", "id": f"m{n}"}))
            frame = json.loads(await asyncio.wait_for(ws.recv(), 120))
            if frame.get("client_id") != f"m{n}":
                problems.append(("peer", index, n, frame))
            latencies.append((n, time.perf_counter() - started))


async def echo_message(ws: Any, index: int, n: int, problems: list[Any]) -> None:
    await ws.send(json.dumps({"chat": index, "n": n}))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
    if reply != {"chat": index, "n": n}:
        problems.append(("echo", index, n, reply))


async def echo_chat(
    port: int, index: int, key: str, latencies: list[tuple[int, float]], problems: list[Any]
) -> None:
    async with echo_socket(port, key) as ws:
        for n in range(MESSAGES):
            started = time.perf_counter()
            await echo_message(ws, index, n, problems)
            latencies.append((n, time.perf_counter() - started))


def session_socket(port: int, key: str) -> Any:
    import websockets

    return websockets.connect(
        f"ws://127.0.0.1:{port}/ws/sessions/bench-{key}/",
        additional_headers={"Cookie": f"sessionid={key}"},
        open_timeout=60,
        max_size=None,
    )


class SessionChecks:
    """What one chat on our socket has seen: every seq in order, each reply once."""

    def __init__(self, index: int, problems: list[Any]) -> None:
        self.index, self.problems = index, problems
        self.last_seq = 0
        self.replies: set[str] = set()

    async def message(self, ws: Any, n: int) -> None:
        problems, index = self.problems, self.index
        await ws.send(json.dumps({"type": "message", "text": "hi", "id": f"m{n}"}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 120))
            if event["type"] == "error":
                problems.append(("error", index, n, event))
                return
            if event["seq"] != self.last_seq + 1:
                problems.append(("seq", index, self.last_seq, event["seq"]))
            self.last_seq = event["seq"]
            if event["type"] == "message" and event["role"] == "user":
                if event["id"] != f"m{n}":
                    problems.append(("user message", index, n, event))
            elif event["type"] == "message":
                if event["key"] in self.replies:
                    problems.append(("duplicate", index, event["key"]))
                self.replies.add(event["key"])
            if event["type"] == "turn":
                return


async def session_chat(
    port: int, index: int, key: str, latencies: list[tuple[int, float]], problems: list[Any]
) -> None:
    async with session_socket(port, key) as ws:
        checks = SessionChecks(index, problems)
        for n in range(MESSAGES):
            started = time.perf_counter()
            await checks.message(ws, n)
            latencies.append((n, time.perf_counter() - started))
        if len(checks.replies) != MESSAGES:
            problems.append(("replies", index, len(checks.replies)))


def cpu_now(server: subprocess.Popen[bytes]) -> tuple[float, float, float]:
    """CPU seconds so far of the server, PostgreSQL and this client."""
    postgres = cpu_seconds(pids_named("postgres"), reaped=True)
    return cpu_seconds([server.pid]), postgres, time.process_time()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def idle_rss(kind: str, port: int, pid: int, keys: list[str]) -> float:
    """The server's RSS growth, in MiB per 1,000 chats, while ``keys`` chats that each
    exchanged one message stay connected. A first batch, closed again, warms the process up
    (its thread pool and database connections grow to what a batch needs), so what is
    measured is what each chat holds."""
    problems: list[Any] = []
    opened = {"echo": echo_socket, "ours": session_socket}[kind]

    async def exchange(ws: Any, index: int) -> None:
        if kind == "echo":
            await echo_message(ws, index, 0, problems)
        else:
            await SessionChecks(index, problems).message(ws, 0)

    async def open_batch(batch: list[tuple[int, str]]) -> list[Any]:
        connected = await asyncio.gather(*(opened(port, key) for _, key in batch))
        await asyncio.gather(
            *(exchange(ws, index) for ws, (index, _) in zip(connected, batch, strict=True))
        )
        return list(connected)

    chats = list(enumerate(keys))
    warming, idle = chats[:CONNECTING], chats[CONNECTING:]
    await asyncio.gather(*(ws.close() for ws in await open_batch(warming)))
    await asyncio.sleep(1)
    before = rss_kib(pid)
    sockets: list[Any] = []
    try:
        for start in range(0, len(idle), CONNECTING):
            sockets += await open_batch(idle[start : start + CONNECTING])
        await asyncio.sleep(1)
        after = rss_kib(pid)
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets))
    if problems:
        raise RuntimeError(f"idle chats failed: {problems[:3]}")
    return (after - before) / 1024 / len(idle) * 1000


async def http_chat(
    port: int, index: int, key: str, latencies: list[tuple[int, float]], problems: list[Any]
) -> None:
    import httpx

    cookies = {"sessionid": key, "csrftoken": "b" * 32}
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", cookies=cookies, timeout=120
    ) as client:
        for n in range(MESSAGES):
            started = time.perf_counter()
            while True:  # a 503 (the pool full for 3 s) is sent again when it says, as clients do
                response = await client.post(
                    f"/sessions/http-{index}/turn/",
                    json={"message": {"text": "hi", "id": f"m{n}"}},
                    headers={"X-CSRFToken": "b" * 32},
                )
                if response.status_code != 503:
                    break
                await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
            if response.status_code != 200 or len(response.json().get("messages", [])) != 1:
                problems.append(("http", index, n, response.status_code, response.text[:200]))
            latencies.append((n, time.perf_counter() - started))


async def run_load(kind: str, port: int, keys: list[str]) -> dict[str, Any]:
    latencies: list[tuple[int, float]] = []
    problems: list[Any] = []
    chat = {"echo": echo_chat, "peer": peer_chat, "ours": session_chat, "http": http_chat}[kind]
    started = time.perf_counter()
    results = await asyncio.gather(
        *(chat(port, index, key, latencies, problems) for index, key in enumerate(keys)),
        return_exceptions=True,
    )
    elapsed = time.perf_counter() - started
    problems += [
        ("exception", repr(result)[:200]) for result in results if isinstance(result, BaseException)
    ]
    seconds = [took for _, took in latencies]
    later = [took for n, took in latencies if n > 0]
    return {
        "rate": len(latencies) / elapsed,
        "p50": statistics.median(seconds) if seconds else 0,
        "p99": p99(seconds),
        "p99 later": p99(later),  # without each chat's first message (it waits on the connects)
        "done": len(latencies),
        "problems": problems,
    }


def p99(seconds: list[float]) -> float:
    return statistics.quantiles(seconds, n=100)[98] if len(seconds) > 1 else 0


def describe(result: dict[str, Any]) -> str:
    if not result["problems"]:
        return f"{result['done']} msgs, every reply once, seq in order"
    problems = result["problems"]
    return f"{result['done']} msgs, {len(problems)} PROBLEMS e.g. {problems[:2]}"


def throughput(
    layer: str, chats: int, rounds: int, server_kind: str = "daphne", *, returning: bool = False
) -> None:
    """Echo, the peer and ours interleaved over ``rounds``, then HTTP once, on one server
    process, for new visitors or ``returning`` ones."""
    port = free_port()
    server = start_server(server_kind, layer, port)
    try:
        runs: dict[str, list[dict[str, Any]]] = {"echo": [], "peer": [], "ours": [], "http": []}
        for kind in [*(["echo", "peer", "ours"] * rounds), "http"]:
            visitors = fresh_visitors(chats, returning=returning)
            before = cpu_now(server)
            result = asyncio.run(run_load(kind, port, visitors))
            result["cpu"] = [
                (after - was) / result["done"] * 1e3
                for after, was in zip(cpu_now(server), before, strict=True)
            ]
            runs[kind].append(result)
            print(
                f"{server_kind:<7} {'returning' if returning else 'new':<9} {layer:<7} "
                f"{kind:<5} {result['rate']:8.0f} "
                f"{result['p50'] * 1e3:7.1f}ms {result['p99'] * 1e3:7.1f}ms  {describe(result)}"
            )
    finally:
        server.kill()
        server.wait(10)
    rate, tail, later_tail = (
        {kind: statistics.median(run[measure] for run in runs[kind]) for kind in runs}
        for measure in ("rate", "p99", "p99 later")
    )
    per_round = [
        mine["rate"] / floor["rate"] for mine, floor in zip(runs["ours"], runs["echo"], strict=True)
    ]
    who = "returning" if returning else "new"
    print(
        f"{server_kind}, {layer}, {who} visitors: rounds of ours / echo "
        f"{min(per_round):.2f}-{max(per_round):.2f}x; medians:"
    )
    speed = rate["ours"] / rate["echo"]
    print("  " + verdict("ours / echo, msg/s", speed, THROUGHPUT_TARGET, at_least=True))
    print("  " + verdict("ours / echo, p99", tail["ours"] / tail["echo"], P99_TARGET))
    print(
        f"  (p99 without each chat's first message, which waits on the other chats' connects: "
        f"{later_tail['ours'] / later_tail['echo']:.2f}x)"
    )
    print("  " + verdict("ours / http, msg/s", rate["ours"] / rate["http"], 1, at_least=True))
    print(
        "  "
        + verdict("ours / peer, msg/s", rate["ours"] / rate["peer"], PEER_TARGET, at_least=True)
    )
    print("  " + verdict("ours / peer, p99 (all)", tail["ours"] / tail["peer"], PEER_P99_TARGET))
    print(
        f"  (ours / peer, p99 without each chat's first message: "
        f"{later_tail['ours'] / later_tail['peer']:.2f}x)"
    )
    for kind in ("peer", "ours"):
        server_ms, postgres_ms, client_ms = (
            statistics.median(run["cpu"][part] for run in runs[kind]) for part in range(3)
        )
        print(
            f"  CPU per message, {kind}: server {server_ms:.2f} ms, PostgreSQL "
            f"{postgres_ms:.2f} ms, client {client_ms:.2f} ms"
        )


def memory(layer: str, idle_chats: int) -> None:
    """RSS per 1,000 idle chats, each consumer on a fresh daphne process."""
    growth = {}
    for kind in ("echo", "ours"):
        port = free_port()
        server = start_daphne(layer, port)
        try:
            visitors = fresh_visitors(idle_chats + CONNECTING)
            growth[kind] = asyncio.run(idle_rss(kind, port, server.pid, visitors))
        finally:
            server.kill()
            server.wait(10)
    label = (
        f"{layer}: RSS per 1,000 idle chats, ours {growth['ours']:.1f} MiB / echo "
        f"{growth['echo']:.1f} MiB"
    )
    print(verdict(label, growth["ours"] / growth["echo"], RSS_TARGET))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=CHATS)
    parser.add_argument(
        "--servers", nargs="+", choices=sorted(SERVERS), default=["daphne", "uvicorn"]
    )
    parser.add_argument(
        "--visitors", nargs="+", choices=["new", "returning"], default=["new", "returning"]
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="echo/ours pairs, interleaved (median taken)"
    )
    parser.add_argument(
        "--idle-chats", type=int, default=IDLE_CHATS, help="for the RSS measure (0: skip it)"
    )
    args = parser.parse_args()
    from bench.common import bench_database_url

    os.environ["WARLOCK_BENCH_DATABASE_URL"] = bench_database_url()
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.ws_settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", run_syncdb=True, verbosity=0)  # the peer's table too
    from tests.services import redis_unreachable

    layers = ["memory"] + ([] if redis_unreachable() else ["redis"])
    print(
        f"{args.chats} concurrent chats x {MESSAGES} messages, one daphne process, PostgreSQL; "
        f"echo and ours interleaved over {args.rounds} rounds, then http once"
    )
    print(f"{'layer':<7} {'load':<5} {'msg/s':>8} {'p50':>9} {'p99':>9}  checked")
    for layer in layers:
        for server_kind in args.servers:
            for visitors in args.visitors:
                throughput(
                    layer, args.chats, args.rounds, server_kind, returning=visitors == "returning"
                )
    for layer in layers if args.idle_chats > 0 else []:  # --idle-chats 0: throughput only
        memory(layer, args.idle_chats)


if __name__ == "__main__":
    main()
