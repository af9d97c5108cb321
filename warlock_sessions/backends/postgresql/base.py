"""Django's PostgreSQL backend, with a pool that notices a restart and comes back with the
server.

* Django builds the pool with a check of its own choosing (a query per connection handed out,
  with ``CONN_HEALTH_CHECKS``; else none) and refuses another in ``OPTIONS["pool"]``; this
  backend gives the pool ``backends.connections.check_pooled`` once it is built.
* psycopg_pool retries a failed connection with a delay that doubles each time (1, 2, 4 … s)
  for ``reconnect_timeout`` (5 minutes by default) and starts no other attempt meanwhile: after
  a long outage the pool would stay empty for up to half as long again once the server is
  back. Unless ``OPTIONS["pool"]`` says otherwise, this backend gives up each retry after
  ``RECONNECT_TIMEOUT`` seconds, so the next request starts a fresh attempt at once.

Everything else is Django's."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base

from ..connections import check_pooled

#: How long the pool retries one failed connection before the next request starts anew.
RECONNECT_TIMEOUT = 5.0


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        pool = super().pool
        # psycopg_pool reads both at each use: its check at each getconn, the retry limit
        # when a connection attempt starts.
        if pool is not None and getattr(pool, "_check", check_pooled) is not check_pooled:
            pool._check = check_pooled
            options = self.settings_dict["OPTIONS"].get("pool")
            if not isinstance(options, dict) or "reconnect_timeout" not in options:
                pool.reconnect_timeout = RECONNECT_TIMEOUT
        return pool
