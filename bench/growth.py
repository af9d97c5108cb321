"""How cost grows with one conversation's length, on PostgreSQL, in one run:

* ``Host.handle`` message turns at the 10th, 1,000th and 10,000th turn of one session (the
  blob stays bounded by its 50-entry limits; the log grows). Target: the last <= 1.2x the
  first.
* the websocket's replay of the last 100 events (``SessionConsumer.logged_after``, the read
  and the frames; not the socket's transport) of a session with 10,000 events, against all
  100 of a session with 100. Target: <= 1.2x.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import ECHO_AGENTS, bench_database_url, configure_django, vacuum, verdict

CHECKPOINTS = (10, 1_000, 10_000)
TARGET = 1.2


def timed(step: Callable[[], Any], times: int) -> float:
    """The median seconds of ``times`` calls."""
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        step()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    configure_django(bench_database_url(), WARLOCK_SESSIONS=ECHO_AGENTS)

    from bench.common import empty_session_tables
    from warlock_sessions.host import Host
    from warlock_sessions.models import SessionEvent
    from warlock_sessions.realtime.sessions import SessionConsumer
    from warlock_sessions.stores import DjangoStore

    empty_session_tables()
    host = Host("echo", DjangoStore(agent="echo"))
    count = iter(range(10**9))

    def turn() -> None:
        host.handle("long", {"message": {"text": "hi", "id": f"m{next(count)}"}})

    print("autovacuum is off on this server: each point is measured as reached and after a VACUUM")
    costs: dict[int, float] = {}
    vacuumed: dict[int, float] = {}
    done = 0
    for checkpoint in CHECKPOINTS:
        while done < checkpoint - args.samples // 2:
            turn()
            done += 1
        costs[checkpoint] = timed(turn, args.samples)
        vacuum()
        vacuumed[checkpoint] = timed(turn, args.samples)
        done += 2 * args.samples
    for checkpoint in CHECKPOINTS:
        print(
            f"turn ~{checkpoint:>6}: {costs[checkpoint] * 1e3:.3f} ms "
            f"({costs[checkpoint] / costs[10]:.2f}x the 10th); after VACUUM "
            f"{vacuumed[checkpoint] * 1e3:.3f} ms ({vacuumed[checkpoint] / vacuumed[10]:.2f}x)"
        )
    print(verdict("Host.handle at 10,000 turns / at 10", costs[10_000] / costs[10], TARGET))
    print(verdict("the same, each after a VACUUM", vacuumed[10_000] / vacuumed[10], TARGET))

    with_log = SessionEvent.objects.filter(session_id="long").count()
    print(f"\nthe long session logged {with_log} events")
    for session_id, events in (("short-log", 100), ("long-log", 10_000)):
        SessionEvent.objects.bulk_create(
            SessionEvent(
                session_id=session_id,
                seq=seq,
                type="message",
                payload={"key": f"k{seq}", "text": "hello", "kind": "ai", "afterMs": 0},
            )
            for seq in range(1, events + 1)
        )
    vacuum()
    consumer = SessionConsumer()

    def replay(session_id: str, after: int) -> Callable[[], None]:
        def run() -> None:
            consumer.session_id = session_id
            assert len(consumer.logged_after(after)) == 100

        return run

    short_samples: list[float] = []
    long_samples: list[float] = []
    for _ in range(10):  # alternated, so both see the same machine
        short_samples.append(timed(replay("short-log", 0), args.samples))
        long_samples.append(timed(replay("long-log", 9_900), args.samples))
    short, long = statistics.median(short_samples), statistics.median(long_samples)
    print(f"replay of the last 100 of 100: {short * 1e3:.3f} ms; of 10,000: {long * 1e3:.3f} ms")
    print(verdict("replay of the last 100 of 10,000 / of 100", long / short, TARGET))


if __name__ == "__main__":
    main()
