"""Shared benchmark plumbing: a dedicated PostgreSQL database, Django configured on it, and
interleaved timing so every contender sees the same machine noise.

Benchmarks print ratios against a baseline measured in the same run, never absolute targets.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from example_project.databases import postgres_settings

ADMIN_URL = os.environ.get("WARLOCK_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
BENCH_DATABASE = os.environ.get("WARLOCK_BENCH_DATABASE", "warlock_bench")


def bench_database_url() -> str:
    """Create the benchmark database if it is missing and return its URL."""
    with psycopg.connect(ADMIN_URL, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DATABASE]
        ).fetchone()
        if not exists:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DATABASE)))
    params = psycopg.conninfo.conninfo_to_dict(ADMIN_URL)
    params["dbname"] = BENCH_DATABASE
    return psycopg.conninfo.make_conninfo(**params)


#: The connection options docs/stores.md recommends for production PostgreSQL: let psycopg
#: prepare statements that run repeatedly (Django's default disables that), and bind
#: parameters server-side (a blob travels as a parameter, not escaped into the SQL text).
RECOMMENDED_OPTIONS = {"prepare_threshold": 5, "server_side_binding": True}


def configure_django(
    database_url: str, apps: list[str] | None = None, **extra_settings: Any
) -> None:
    """Point Django at the benchmark database and migrate.

    ``default`` is configured as docs/stores.md recommends for production (DEBUG off,
    persistent connections, ``RECOMMENDED_OPTIONS``); ``client_binding`` is the same database
    with prepared statements but client-side binding, and ``django_defaults`` with Django's
    default connection options, for comparison.
    """
    import django
    from django.conf import settings
    from django.core.management import call_command

    database = {**postgres_settings(database_url), "CONN_MAX_AGE": None}
    settings.configure(
        DEBUG=False,
        USE_TZ=True,
        INSTALLED_APPS=[
            "django.contrib.contenttypes",
            "django.contrib.auth",
            *(apps or []),
            "warlock_sessions",
        ],
        DATABASES={
            "default": {**database, "OPTIONS": RECOMMENDED_OPTIONS},
            "django_defaults": {**database, "TEST": {"MIRROR": "default"}},
            "client_binding": {
                **database,
                "OPTIONS": {"prepare_threshold": 5},
                "TEST": {"MIRROR": "default"},
            },
        },
        **extra_settings,
    )
    django.setup()
    call_command("migrate", verbosity=0)


def measure(
    contenders: dict[str, Callable[[], None]], iterations: int, rounds: int = 10, warmup: int = 50
) -> dict[str, list[float]]:
    """Run each contender ``iterations`` times in total, interleaved in ``rounds``; seconds each."""
    for step in contenders.values():
        for _ in range(warmup):
            step()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    per_round = max(1, iterations // rounds)
    for _ in range(rounds):
        for name, step in contenders.items():
            timings = samples[name]
            for _ in range(per_round):
                started = time.perf_counter()
                step()
                timings.append(time.perf_counter() - started)
    return samples


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def report(samples: dict[str, list[float]], baseline: str) -> dict[str, float]:
    """Print median and p99 per contender and its median ratio to ``baseline``."""
    base = statistics.median(samples[baseline])
    ratios = {}
    width = max(map(len, samples))
    print(f"{'contender':<{width}}  {'median':>9}  {'p99':>9}  {'ratio':>6}   (n per contender)")
    for name, values in samples.items():
        median = statistics.median(values)
        ratios[name] = median / base
        print(
            f"{name:<{width}}  {median * 1e3:8.3f}ms  {p99(values) * 1e3:8.3f}ms  "
            f"{ratios[name]:5.2f}x   ({len(values)})"
        )
    return ratios


def verdict(label: str, ratio: float, limit: float, *, at_least: bool = False) -> str:
    """``label: ratio (target) OK|MISSED``; the target is a ceiling, or a floor ``at_least``."""
    met = ratio >= limit if at_least else ratio <= limit
    return f"{label}: {ratio:.2f}x (target {'>=' if at_least else '<='} {limit}x) " + (
        "OK" if met else "MISSED"
    )


def empty_tables(*models: Any) -> None:
    """Empty the tables of ``models`` so each run starts from the same state.

    ``TRUNCATE``, not ``DELETE``: this server runs with autovacuum off, so deleted rows piled
    up as dead tuples and slowed every index scan (``Host.handle`` drifted from 1.1x to 3x a
    raw load+save over a day of runs). Nor ``DELETE`` then ``VACUUM ANALYZE``: that records
    the tables as empty, the planner then scans them sequentially while a run fills them, and
    the websocket rate fell by half within one run. A truncated table has no dead rows and
    unknown statistics, which the planner treats as a table of some size."""
    from django.db import connection

    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {tables}")


def echo_agent() -> Any:
    """One reply per message, from the idle speaker: the least engine work a turn can be."""
    from warlock_sessions.engine import Agent
    from warlock_sessions.providers import RuleModel

    return Agent([], idle={"prompt": "ok"}, model=RuleModel(), name="echo")


#: The agents setting of the benchmarks that run turns.
ECHO_AGENTS = {"AGENTS": {"echo": "bench.common.echo_agent"}, "DEFAULT_AGENT": "echo"}


def vacuum() -> None:
    """``VACUUM ANALYZE`` the benchmark database (autovacuum is off on this server)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def empty_session_tables() -> None:
    """``empty_tables`` for the sessions and everything kept about them."""
    from warlock_sessions.models import SESSION_RECORDS, Session

    empty_tables(Session, *SESSION_RECORDS)


#: The key sealed contenders seal with, one per run.
BENCH_KEY = os.urandom(32)


def sealed(call: Callable[[], None]) -> Callable[[], None]:
    """``call`` with ``ENCRYPTION_KEYS`` in force (this run's key), interleaved with plain
    contenders."""
    from warlock_sessions import encryption

    return standing_in(encryption.keyring, encryption._keyring_of({"bench": BENCH_KEY}), call)


def redacting(call: Callable[[], None]) -> Callable[[], None]:
    """``call`` with ``REDACT`` naming every built-in recogniser, interleaved with contenders
    that redact nothing."""
    from warlock_sessions import redaction
    from warlock_sessions.conf import REDACT_RECOGNISERS

    every = redaction._redactor_of(list(REDACT_RECOGNISERS))
    return standing_in(redaction.redactor, every, call)


def standing_in(built: Any, value: Any, call: Callable[[], None]) -> Callable[[], None]:
    """``call`` with ``value`` standing in for what a setting builds (``BuiltFromSettings``,
    unset: ``None``), for the call alone, as cheaply as a setting read."""

    def in_force() -> None:
        built()  # the setting's own is built, then stood in for
        built._built[:] = [value]
        try:
            call()
        finally:
            built._built[:] = [None]

    return in_force


def in_a_tenant(call: Callable[[], None]) -> Callable[[], None]:
    """``call`` inside a tenant's scope (``TENANT_RESOLVER``'s requests run so), interleaved
    with contenders outside every scope."""
    from warlock_sessions.tenancy import tenant_scope

    def scoped() -> None:
        with tenant_scope("bench-tenant"):
            call()

    return scoped


def raw_jsonb_load_save(connection: psycopg.Connection, blob: dict) -> Callable[[], None]:
    """The baseline every benchmark compares with: raw psycopg ``SELECT`` + conditional
    ``UPDATE`` of ``blob`` in a jsonb column (table ``bench_raw_jsonb``, recreated here)."""
    connection.execute("DROP TABLE IF EXISTS bench_raw_jsonb")
    connection.execute(
        "CREATE TABLE bench_raw_jsonb (id text PRIMARY KEY, version integer NOT NULL,"
        " blob jsonb NOT NULL)"
    )
    connection.execute("INSERT INTO bench_raw_jsonb VALUES ('bench', 1, %s)", [Jsonb(blob)])

    def load_save() -> None:
        loaded, version = connection.execute(
            "SELECT blob, version FROM bench_raw_jsonb WHERE id = %s", ["bench"]
        ).fetchone()
        updated = connection.execute(
            "UPDATE bench_raw_jsonb SET blob = %s, version = %s WHERE id = %s AND version = %s",
            [Jsonb(loaded), version + 1, "bench", version],
        ).rowcount
        assert updated == 1

    return load_save


#: What /proc counts CPU time in.
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int], *, reaped: bool = False) -> float:
    """The user and system CPU time of ``pids`` so far (a process gone counts nothing), and
    with ``reaped`` that of their children that have ended (PostgreSQL's backends: one per
    connection, gone when the servers close theirs)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
        if reaped:
            total += int(fields[13]) + int(fields[14])
    return total / TICK


def pids_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
