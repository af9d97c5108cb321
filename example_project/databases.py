"""Django database settings from a ``postgresql://`` URL, for the example project, the test suite
and the benchmarks alike."""

from __future__ import annotations

from typing import Any

from psycopg.conninfo import conninfo_to_dict


def postgres_settings(url: str) -> dict[str, Any]:
    params = conninfo_to_dict(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": params.get("dbname", "postgres"),
        "USER": params.get("user", ""),
        "PASSWORD": params.get("password", ""),
        "HOST": params.get("host", ""),
        "PORT": str(params.get("port", "")),
    }


#: Connections in each server process's pool (docs/deployment.md sizes the rest from it).
POOL_SIZE = 16


def asgi_postgres_settings(url: str) -> dict[str, Any]:
    """Under ASGI sync work runs in threads that come and go: pool the connections, never keep
    one per thread (``CONN_MAX_AGE``), or PostgreSQL runs out ("too many clients").

    Faults (docs/deployment.md): the pool checks a connection before handing it out, by a
    look at its socket rather than a query (the ``warlock_sessions.backends.postgresql``
    engine), and replaces every dead one at once, so a database restart costs no request an
    error; a connection attempt gives up after 3 s and a request waits at most 3 s
    for a pooled connection, after which it is answered ``503`` with ``Retry-After`` rather
    than queued."""
    return {
        **postgres_settings(url),
        "ENGINE": "warlock_sessions.backends.postgresql",
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            "pool": {"min_size": 2, "max_size": POOL_SIZE, "timeout": 3},
            "connect_timeout": 3,
            "prepare_threshold": 5,
            "server_side_binding": True,
        },
    }
