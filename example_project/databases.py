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


def asgi_postgres_settings(url: str) -> dict[str, Any]:
    """Under ASGI sync work runs in threads that come and go: pool the connections, never keep
    one per thread (``CONN_MAX_AGE``), or PostgreSQL runs out ("too many clients")."""
    return {
        **postgres_settings(url),
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            "pool": {"min_size": 2, "max_size": 16},
            "prepare_threshold": 5,
            "server_side_binding": True,
        },
    }
