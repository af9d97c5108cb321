"""Costs at production size: each hot path on nearly empty tables, then on tables seeded with
1,000,000 sessions, 10,000,000 log entries, 1,000,000 wakes (1 % due) and 2,000,000 outbox
rows, in the same run, as a ratio (target: <= 1.3x). Then each hot statement's plan
(``EXPLAIN (ANALYZE, BUFFERS)``) is read for sequential scans of a large table, and turns per
second are measured while ``warlock_prune`` deletes a million rows (target: >= 0.8x).

    python -m bench.scale                  # full size (see docs/benchmarks.md for how long)
    python -m bench.scale --scale 0.01     # a quick run at a hundredth of it
    WARLOCK_SCALE=0.1 make bench

Seeding is SQL (``generate_series``), not the ORM. This server runs with autovacuum off: the
seeded phase is measured twice, right after seeding and after ``VACUUM ANALYZE``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import (
    ECHO_AGENTS,
    bench_database_url,
    configure_django,
    empty_session_tables,
    measure,
    vacuum,
    verdict,
)

SESSIONS = 1_000_000
EVENTS = 10_000_000
WAKES = 1_000_000
OUTBOX = 2_000_000
HOT_EVENTS = 10_000
TARGET = 1.3
PRUNE_TARGET = 0.8
MESSAGE_IDS = itertools.count()


def configure(url: str) -> None:
    from tests import settings as test_settings

    configure_django(
        url,
        apps=[
            "django.contrib.admin",
            "django.contrib.sessions",
            "django.contrib.messages",
            "rest_framework",
        ],
        ROOT_URLCONF="bench.scale_urls",
        SECRET_KEY="bench",
        ALLOWED_HOSTS=["*"],
        # The admin's middleware and templates, as the test suite configures them.
        MIDDLEWARE=test_settings.MIDDLEWARE,
        TEMPLATES=test_settings.TEMPLATES,
        WARLOCK_SESSIONS=ECHO_AGENTS,
    )


def bucket_sql(session: str) -> str:
    """A wake's or outbox row's bucket, of the session id ``session`` (an SQL expression)."""
    from warlock_sessions.models import bucket_sql

    return bucket_sql(session)


def sql(statement: str, params: list[Any] | None = None) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])


def seed_hot_rows() -> None:
    """What both phases measure: a busy session with its log, due wakes, due outbox rows."""
    from warlock_sessions.host import Host
    from warlock_sessions.stores import DjangoStore
    from warlock_sessions.testing import realistic_session

    DjangoStore(agent="echo").save(realistic_session("hot"), 0)
    host = Host("echo", DjangoStore(agent="echo"))
    for index in range(60):  # the session the turns are measured on, at its steady size
        host.handle("turns", {"message": {"text": "hi", "id": f"warm{index}"}})
    sql(
        "INSERT INTO warlock_sessions_sessionevent (session_id, seq, type, payload, created_at) "
        "SELECT 'hot', g, 'message', jsonb_build_object('key', 'k' || g, 'text', 'hello', "
        "'kind', 'ai', 'afterMs', 0), now() - interval '2 days' "
        "FROM generate_series(1, %s) AS g",
        [HOT_EVENTS],
    )
    sql(
        "INSERT INTO warlock_sessions_wake (key, session_id, bucket, attempts, last_error, "
        "created_at, agent, due_at, status) SELECT 'due:' || g, 'due' || g, "
        + bucket_sql("'due' || g")
        + ", 0, '', now(), 'echo', "
        "now() - interval '1 minute', 'pending' FROM generate_series(1, 100) AS g"
    )
    sql(
        "INSERT INTO warlock_sessions_outboundmessage (key, session_id, bucket, attempts, "
        "last_error, created_at, kind, text, after_ms, payload, status, deliver_after) "
        "SELECT 'due:' || g, 'due' || g, " + bucket_sql("'due' || g") + ", 0, '', now(), 'ai', "
        "'hello', 0, '{}'::jsonb, 'pending', "
        "now() - interval '1 minute' FROM generate_series(1, 100) AS g"
    )


def seed_bulk(scale: float, prefix: str = "s") -> dict[str, float]:
    """The production-size rows, by SQL (session ids ``<prefix><n>``, a letter); the seconds
    each table took."""
    assert prefix.isalpha()
    sessions, events = max(1, int(SESSIONS * scale)), int(EVENTS * scale)
    wakes, outbox = int(WAKES * scale), int(OUTBOX * scale)
    took: dict[str, float] = {}
    statements = {
        "sessions": (
            "INSERT INTO warlock_sessions_session (id, version, agent, blob, run_flows, "
            "run_statuses, search_text, created_at, updated_at) SELECT '{p}' || g, 3, "
            "(ARRAY['booking', 'support', 'sales'])[g %% 3 + 1], "
            "jsonb_build_object('id', '{p}' || g, 'v', 4, 'data', "
            "jsonb_build_object('name', 'user ' || g), 'runs', '[]'::jsonb, 'claims', "
            "'{{}}'::jsonb, 'inputs', jsonb_build_array('m' || g), "
            "'metadata', '{{}}'::jsonb)::text, "
            "(ARRAY[' booking ', ' reminder ', ' booking reminder ', '', '', ' support ', "
            "' sales ', '', ' booking ', ''])[g %% 10 + 1], "
            "(ARRAY[' asking ', ' waiting ', ' asking waiting ', '', '', ' running ', "
            "' suspended ', '', ' asking ', ''])[g %% 10 + 1], "
            "'user ' || g || ' user' || g || '@example.com', "
            "now() - g * interval '1 second', now() - g * interval '1 second' "
            "FROM generate_series(1, %s) AS g",
            [sessions],
        ),
        "events": (
            "INSERT INTO warlock_sessions_sessionevent (session_id, seq, type, payload, "
            "created_at) SELECT '{p}' || (g %% %s + 1), g / %s + 1, 'message', "
            "jsonb_build_object('role', 'user', 'text', 'hello', 'id', 'm' || g), "
            "now() - interval '1 day' FROM generate_series(1, %s) AS g",
            [sessions, sessions, events],
        ),
        "wakes": (
            "INSERT INTO warlock_sessions_wake (key, session_id, bucket, attempts, last_error, "
            "created_at, agent, due_at, status) SELECT 'w:' || g, '{p}' || g, "
            + bucket_sql("'{p}' || g")
            + ", 0, '', now(), "
            "'echo', CASE WHEN g %% 100 = 0 THEN now() - interval '1 minute' "
            "ELSE now() + interval '1 day' END, 'pending' FROM generate_series(1, %s) AS g",
            [wakes],
        ),
        "outbox": (
            "INSERT INTO warlock_sessions_outboundmessage (key, session_id, bucket, attempts, "
            "last_error, created_at, kind, text, after_ms, payload, status, deliver_after, "
            "delivered_at) SELECT 'o:' || g, '{p}' || (g %% %s + 1), "
            + bucket_sql("'{p}' || (g %% %s + 1)")
            + ", 0, '', "
            "now() - interval '10 days', 'ai', 'hello', 0, '{{}}'::jsonb, "
            "CASE WHEN g %% 20 = 0 THEN 'pending' ELSE 'delivered' END, "
            "now() + interval '1 day', now() FROM generate_series(1, %s) AS g",
            [sessions, sessions, outbox],
        ),
    }
    for name, (statement, params) in statements.items():
        started = time.perf_counter()
        sql(statement.format(p=prefix), params)
        took[name] = time.perf_counter() - started
    return took


def operations() -> dict[str, Callable[[], None]]:
    """The hot paths, each one call; run against whatever the tables hold."""
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.db.models import Q
    from django.test import Client
    from django.utils import timezone

    from warlock_sessions.host import Host
    from warlock_sessions.host.worker import claim
    from warlock_sessions.models import OutboundMessage, Wake
    from warlock_sessions.stores import DjangoStore

    store = DjangoStore(agent="echo")
    host = Host("echo", store)
    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", "pw"
    )
    client = Client()
    client.force_login(user)

    def load_save() -> None:
        session = store.load("hot")
        assert session is not None
        store.save(session, session["version"])

    def message_turn() -> None:
        # Ids unique across phases: a repeated one is a duplicate input, a turn that saves
        # nothing (the nearly-empty phase once looked five times slower than the seeded one).
        host.handle("turns", {"message": {"text": "hi", "id": f"m{next(MESSAGE_IDS)}"}})

    def rolled_back(work: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with transaction.atomic():
                work()
                transaction.set_rollback(True)

        return run

    def due_wakes() -> None:
        due = Q(status=Wake.Status.PENDING, due_at__lte=timezone.now())
        assert len(claim(Wake, due, 100)) == 100

    def due_outbox() -> None:
        due = Q(status=OutboundMessage.Status.PENDING, deliver_after__lte=timezone.now())
        assert len(claim(OutboundMessage, due, 100)) == 100

    def get(url: str) -> Callable[[], None]:
        def run() -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return run

    return {
        "DjangoStore load+save": load_save,
        "Host.handle message turn": message_turn,
        "events ?after_seq (10,000 logged)": get(
            f"/api/sessions/hot/events/?after_seq={HOT_EVENTS - 100}"
        ),
        "worker claim of 100 due wakes": rolled_back(due_wakes),
        "outbox claim of 100 due rows": rolled_back(due_outbox),
        "API list ?agent": get("/api/sessions/?agent=echo"),
        "API list ?flow": get("/api/sessions/?flow=booking"),
        "API list ?run_status": get("/api/sessions/?run_status=waiting"),
        "API list ?updated_after": get("/api/sessions/?updated_after=2000-01-01T00:00:00Z"),
        "admin changelist ?q=": get("/admin/warlock_sessions/session/?q=user42@example.com"),
    }


def medians(iterations: int) -> dict[str, float]:
    import statistics

    samples = measure(operations(), iterations=iterations, rounds=5, warmup=5)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=float(os.environ.get("WARLOCK_SCALE", 1)))
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    configure(bench_database_url())
    print(
        "autovacuum is off on this server: the seeded phase is measured before and after a VACUUM"
    )
    started = time.perf_counter()
    empty_session_tables()
    seed_hot_rows()
    # "Empty" is a thousand sessions (and their log, wakes and outbox): enough that each list
    # page is full, so the two phases render the same rows and only the tables' size differs.
    seed_bulk(0.001, prefix="a")
    vacuum()
    empty = medians(args.iterations)
    took = seed_bulk(args.scale)
    print(
        "seeded at scale", args.scale, {name: f"{seconds:.0f}s" for name, seconds in took.items()}
    )
    seeded = medians(args.iterations)
    vacuum()
    vacuumed = medians(args.iterations)
    width = max(map(len, empty))
    columns = ("empty", "seeded", "ratio", "vacuumed", "ratio")
    print(f"{'operation':<{width}}  " + "  ".join(f"{column:>9}" for column in columns))
    for name, base in empty.items():
        print(
            f"{name:<{width}}  {base * 1e3:8.3f}ms  {seeded[name] * 1e3:8.3f}ms  "
            f"{seeded[name] / base:5.2f}x  {vacuumed[name] * 1e3:8.3f}ms  "
            f"{vacuumed[name] / base:5.2f}x"
        )
    for name, base in empty.items():
        print(verdict(f"{name}, seeded and vacuumed / empty", vacuumed[name] / base, TARGET))
    print_plans()
    prune_ratio()
    print(f"(the whole run took {time.perf_counter() - started:.0f}s at scale {args.scale})")


HOT_STATEMENTS = {
    "load": "SELECT blob, version FROM warlock_sessions_session WHERE id = 'hot'",
    "events after seq": "SELECT * FROM warlock_sessions_sessionevent "
    "WHERE session_id = 'hot' AND seq > 9900 ORDER BY seq LIMIT 500",
    "due wakes": "SELECT id FROM warlock_sessions_wake WHERE status = 'pending' "
    "AND due_at <= now() ORDER BY due_at LIMIT 100",
    "due outbox": "SELECT id FROM warlock_sessions_outboundmessage WHERE status = 'pending' "
    "AND deliver_after <= now() ORDER BY deliver_after LIMIT 100",
    "list by flow": "SELECT id FROM warlock_sessions_session WHERE run_flows LIKE '% reminder %' "
    "ORDER BY updated_at DESC, id LIMIT 51",
    "list by run status": "SELECT id FROM warlock_sessions_session "
    "WHERE run_statuses LIKE '% waiting %' ORDER BY updated_at DESC, id LIMIT 51",
    "list updated after": "SELECT id FROM warlock_sessions_session "
    "WHERE updated_at >= now() - interval '1 hour' ORDER BY updated_at DESC, id LIMIT 51",
    "search": "SELECT id FROM warlock_sessions_session WHERE to_tsvector('simple'::regconfig, "
    "COALESCE(search_text, '')) @@ plainto_tsquery('simple'::regconfig, 'user42@example.com')",
}
LARGE_TABLES = (
    "warlock_sessions_session",
    "warlock_sessions_sessionevent",
    "warlock_sessions_wake",
    "warlock_sessions_outboundmessage",
)


def print_plans() -> None:
    from django.db import connection

    print("\nplans of the hot statements on the seeded tables:")
    for name, statement in HOT_STATEMENTS.items():
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement}")
            plan = [row[0] for row in cursor.fetchall()]
        scans = [
            table for table in LARGE_TABLES if any(f"Seq Scan on {table}" in line for line in plan)
        ]
        print(f"  {name}: {'SEQUENTIAL SCAN of ' + ', '.join(scans) if scans else 'index only'}")
        print(
            "    " + "\n    ".join(line for line in plan if "Scan" in line or "Execution" in line)
        )


def prune_ratio() -> None:
    """Turns per second while ``manage.py warlock_prune`` deletes the seeded log (all but each
    session's last ten entries), run as an operator runs it (a process of its own), against
    turns per second without it."""
    turn = operations()["Host.handle message turn"]

    def turns_per_second(seconds: float) -> float:
        done, until = 0, time.perf_counter() + seconds
        while time.perf_counter() < until:
            turn()
            done += 1
        return done / seconds

    alone = turns_per_second(5)
    command = [
        *(sys.executable, "-m", "django", "warlock_prune", "--events", "1h", "--keep-events", "9"),
        *("--sessions", "never", "--outbox", "never", "--wakes", "never"),
    ]
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.ws_settings",
        "WARLOCK_BENCH_DATABASE_URL": bench_database_url(),
    }
    started = time.perf_counter()
    pruning = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    done = 0
    while pruning.poll() is None:  # the whole prune, its count and every batch
        turn()
        done += 1
    during = done / (time.perf_counter() - started)
    output = pruning.stdout.read() if pruning.stdout else ""
    if pruning.returncode:
        raise RuntimeError(f"warlock_prune failed ({pruning.returncode}): {output}")
    ratio = during / alone
    print(
        f"\nwarlock_prune ({output.strip().splitlines()[0]}) took "
        f"{time.perf_counter() - started:.0f}s; turns/s alone {alone:.0f}, during it {during:.0f}"
    )
    print(verdict("turns/s during a prune / without", ratio, PRUNE_TARGET, at_least=True))


if __name__ == "__main__":
    main()
