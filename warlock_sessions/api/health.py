"""``/healthz`` and ``/readyz`` for load balancers and orchestrators (docs/deployment.md).

``/healthz``: the process serves requests (it touches no service, so a database outage does
not get every server restarted). ``/readyz``: each database the package writes to answers
``SELECT 1`` and the default channel layer takes a message, each within ``READY_TIMEOUT``;
``503`` naming the check that failed otherwise, so the balancer sends new clients elsewhere
(why it failed goes to the log, once per outage: the page is public)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from django.conf import settings
from django.db import connections, router
from django.http import HttpRequest, JsonResponse
from django.urls import path

from ..backends.outages import RETRY_AFTER, OutageLog
from ..host.threads import ProcessThreads, in_worker_thread
from ..models import Session

logger = logging.getLogger("warlock_sessions.health")

#: Seconds each check of ``/readyz`` may take.
READY_TIMEOUT = 2.0


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database_answers(alias: str) -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1")


#: Threads of the database check's own: probes that wait on an unreachable database must not
#: hold the threads the sockets' database calls run on.
_probe_threads = ProcessThreads("warlock-readyz", lambda: 2)


async def _check_database() -> None:
    alias = router.db_for_write(Session) or "default"
    await in_worker_thread(_database_answers, _probe_threads.get())(alias)


async def _check_channel_layer() -> None:
    if not getattr(settings, "CHANNEL_LAYERS", None):
        return
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is not None:  # a group nobody joins: the layer's server answers, no one hears
        await layer.group_send("warlock_readyz", {"type": "warlock.readyz"})


_CHECKS: dict[str, tuple[Callable[[], Awaitable[None]], OutageLog]] = {
    "database": (_check_database, OutageLog(logger, "/readyz: the database")),
    "channel_layer": (_check_channel_layer, OutageLog(logger, "/readyz: the channel layer")),
}


async def _outcome(check: Callable[[], Awaitable[None]], outage: OutageLog) -> str:
    try:
        await asyncio.wait_for(check(), READY_TIMEOUT)
    except Exception as error:
        outage.failed(error)
        return "unavailable"
    outage.succeeded()
    return "ok"


async def readyz(request: HttpRequest) -> JsonResponse:
    outcomes = await asyncio.gather(*(_outcome(*check) for check in _CHECKS.values()))
    checks = dict(zip(_CHECKS, outcomes, strict=True))
    ready = all(value == "ok" for value in checks.values())
    response = JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks})
    if not ready:
        response.status_code = 503
        response["Retry-After"] = str(RETRY_AFTER)
    return response


#: ``path("", include("warlock_sessions.api.health"))`` serves both at the project's root.
urlpatterns = [
    path("healthz", healthz, name="warlock-healthz"),
    path("readyz", readyz, name="warlock-readyz"),
]
