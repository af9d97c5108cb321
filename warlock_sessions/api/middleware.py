"""``ServiceUnavailableMiddleware``: a fault of the database or the channel layer anywhere in a
request is ``503`` with ``Retry-After``, and the API never answers an HTML page.

DRF's views map the faults they see themselves (``api.errors``). What fails around a view is
out of their reach: the session middleware saving a visitor's session, authentication reading
the user, a plain Django view. Django turns such an error into a 500 page (the debug page
under ``DEBUG``); this middleware, placed first in ``MIDDLEWARE``, sees which error it was
(``got_request_exception``) and answers instead: ``503 unavailable`` for an outage, and, for
the API's own endpoints, JSON with a stable ``code`` for anything else. A view that mints an
anonymous visitor for an address past ``MAX_NEW_VISITORS_PER_ADDRESS`` answers ``429``."""

from __future__ import annotations

import math
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.signals import got_request_exception
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse

from ..backends.outages import RETRY_AFTER, unavailable
from ..errors import NewVisitorsThrottledError
from .errors import ApiError, outage, service_unavailable

_EXCEPTION = "_warlock_exception"


@receiver(got_request_exception)
def _remember_exception(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is not None:
        setattr(request, _EXCEPTION, sys.exc_info()[1])


def speaks_json(request: HttpRequest) -> bool:
    """Whether the request went to one of the package's JSON endpoints, or asked for JSON."""
    match = getattr(request, "resolver_match", None)
    module = getattr(getattr(match, "func", None), "__module__", "") or ""
    view_class = getattr(getattr(match, "func", None), "cls", None)
    return (
        module.startswith("warlock_sessions.")
        or (view_class is not None and view_class.__module__.startswith("warlock_sessions."))
        or "application/json" in request.headers.get("Accept", "")
    )


def fault_response(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """``response``, or what answers instead of it when it is a 500 for an outage or a 500 of
    a JSON endpoint."""
    if response.status_code != 500:
        return response
    error = getattr(request, _EXCEPTION, None)
    json = speaks_json(request)
    if error is not None and unavailable(error):
        outage.failed(error)
        answer: HttpResponse = (
            problem_response(service_unavailable())
            if json
            else HttpResponse(
                "The service is temporarily unavailable. Try again in a moment.",
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        )
        answer["Retry-After"] = str(RETRY_AFTER)
        answer._has_been_logged = True  # type: ignore[attr-defined]  # the outage log has it
        return answer
    if json:
        return JsonResponse(
            {"code": "server-error", "detail": "The server failed on this request; it is logged."},
            status=500,
        )
    return response


def problem_response(problem: ApiError) -> JsonResponse:
    """An API error as the API's own handler shapes it: ``{code, detail, ...}``."""
    return JsonResponse(
        {"code": problem.code, "detail": str(problem.detail), **problem.extra},
        status=problem.status_code,
    )


class ServiceUnavailableMiddleware:
    """Put it first in ``MIDDLEWARE`` (docs/deployment.md). Sync and async alike."""

    sync_capable = True
    async_capable = True

    def __init__(
        self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]
    ) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        response = self.get_response(request)
        return fault_response(request, response)  # type: ignore[arg-type]

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        response = await self.get_response(request)  # type: ignore[misc]
        return fault_response(request, response)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A view of the project's own that mints a visitor (``anonymous_key(request,
        create=True)``, the chat page's pattern) for an address that has had its new visitors
        for the hour: ``429`` with ``Retry-After``, not a 500."""
        if not isinstance(exception, NewVisitorsThrottledError):
            return None
        wait = max(1, math.ceil(exception.wait or 1))
        answer: HttpResponse = (
            problem_response(ApiError(429, "throttled", str(exception), retry_after=wait))
            if speaks_json(request)
            else HttpResponse(
                "Too many new visitors from your address just now. Try again later, or keep "
                "your cookies.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
        )
        answer["Retry-After"] = str(wait)
        return answer
