"""Every API failure as ``{"code": "<kebab-case>", "detail": "<sentence>", ...}``: the
package's errors as their classes say (``failures``), DRF's own by the table below."""

from __future__ import annotations

import logging
import math
from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..backends.outages import RETRY_AFTER, OutageLog
from ..errors import SessionConflictError
from ..failures import OUTAGE, client_failure, log_for_operators

logger = logging.getLogger("warlock_sessions.api")
#: Requests that met an outage: logged once per outage, not once per request.
outage = OutageLog(logger, "requests to the API (answered 503 unavailable)")


class ApiError(exceptions.APIException):
    """An API failure with a stable ``code`` and extra fields for the JSON body."""

    def __init__(self, status_code: int, code: str, detail: str, **extra: Any) -> None:
        self.status_code = status_code
        self.code = code
        self.extra = extra
        super().__init__(detail, code)


def not_found(session_id: str) -> ApiError:
    return ApiError(404, "session-not-found", f'There is no session "{session_id}".')


def service_unavailable() -> ApiError:
    """A database, Redis or capacity fault: nothing was done, and a retry may succeed."""
    return ApiError(OUTAGE.status, OUTAGE.code, OUTAGE.detail, **OUTAGE.fields)


def precondition_failed(error: SessionConflictError) -> ApiError:
    return ApiError(
        412,
        "session-conflict",
        str(error),
        expected_version=error.expected_version,
        actual_version=error.actual_version,
    )


_CODES = {
    exceptions.ParseError: "invalid-json",
    exceptions.NotAuthenticated: "not-authenticated",
    exceptions.AuthenticationFailed: "authentication-failed",
    exceptions.PermissionDenied: "permission-denied",
    exceptions.NotFound: "not-found",
    exceptions.MethodNotAllowed: "method-not-allowed",
    exceptions.NotAcceptable: "not-acceptable",
    exceptions.UnsupportedMediaType: "unsupported-media-type",
    exceptions.Throttled: "throttled",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler with our body shape, and our exceptions mapped to their statuses."""
    exc = api_error(exc) or exc
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    response.data = _body(exc, response)
    wait = response.data.get("retry_after")
    if response.status_code == 503:
        response["Retry-After"] = str(math.ceil(wait or RETRY_AFTER))
        # The outage log tells of it, once per outage; Django's would, once per request.
        response._has_been_logged = True  # type: ignore[attr-defined]
    if response.status_code == 429 and wait is not None:  # DRF's own Throttled has it already
        response["Retry-After"] = str(math.ceil(wait))
    return response


def api_error(exc: Exception) -> ApiError | None:
    """One of the package's errors, or an outage, as the API answers it (``failures``)."""
    failure = client_failure(exc)
    if failure is None:
        return None
    if failure.outage:
        outage.failed(exc)
    log_for_operators(exc)
    return ApiError(failure.status, failure.code, failure.detail, **failure.fields)


def _body(exc: Exception, response: Response) -> dict[str, Any]:
    """The JSON body of ``response`` to ``exc``: ``{code, detail, ...}``."""
    if isinstance(exc, ApiError):
        return {"code": exc.code, "detail": str(exc.detail), **exc.extra}
    if isinstance(exc, exceptions.ValidationError):
        field, message = _first_error(exc.detail)
        return {
            "code": "invalid-input",
            "detail": f"{field}: {message}" if field else message,
            "field": field,
            "errors": exc.detail,
        }
    code = next((code for kind, code in _CODES.items() if isinstance(exc, kind)), "error")
    data = response.data
    detail = data.get("detail", str(exc)) if isinstance(data, dict) else str(exc)
    body: dict[str, Any] = {"code": code, "detail": str(detail)}
    wait = getattr(exc, "wait", None)  # set by DRF on Throttled
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        body["retry_after"] = wait
    return body


def _first_error(detail: Any, prefix: str = "") -> tuple[str, str]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            return _first_error(value, f"{prefix}.{name}".strip(".") if name else prefix)
    if isinstance(detail, list) and detail:
        return _first_error(detail[0], prefix)
    return prefix, str(detail)
