"""Django's PostgreSQL backend, with ``stores.pool.check_pooled`` as its pool's health check.

Django builds the pool with a check of its own choosing (a query per connection handed out,
with ``CONN_HEALTH_CHECKS``; else none) and refuses another in ``OPTIONS["pool"]``; this
backend gives the pool ``check_pooled`` once it is built. Everything else is Django's."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base

from ..pool import check_pooled


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        pool = super().pool
        # psycopg_pool keeps its check callback here; it is read at each getconn.
        if pool is not None and getattr(pool, "_check", check_pooled) is not check_pooled:
            pool._check = check_pooled
        return pool
