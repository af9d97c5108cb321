"""What every warlock_sessions endpoint shares: JSON bodies checked before they are parsed,
a size limit, one error format, CSRF for cookie-borne writes, and no transaction around the
request (a turn commits on its own)."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from django.db import transaction
from django.utils.decorators import method_decorator
from rest_framework import viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.schemas import DefaultSchema

from .. import tenancy
from ..conf import warlock_settings
from ..errors import InvalidInputError, TenantUnresolvedError
from ..host.wire import loads, session_id_input
from ..permissions import SessionPolicy
from .errors import ApiError, exception_handler, outage


class CheckedJSONParser(JSONParser):
    """JSON bodies through ``host.wire.loads``: too deep, NaN or out-of-range numbers are a 400
    before anything recurses over them."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return loads(stream.read())
        except InvalidInputError as error:
            raise ApiError(400, "invalid-json", f"The request body {error.why}.") from None


def spectacular_schema() -> Any:
    """drf-spectacular's ``AutoSchema`` when it is installed: the views document themselves
    whatever the project's ``DEFAULT_SCHEMA_CLASS`` (its schema view refuses any other)."""
    if find_spec("drf_spectacular") is None:
        return DefaultSchema()
    from drf_spectacular.openapi import AutoSchema

    return AutoSchema()


@method_decorator(transaction.non_atomic_requests, name="dispatch")
class WarlockViewSet(viewsets.ViewSet):
    parser_classes = [CheckedJSONParser]
    schema = spectacular_schema()

    def get_exception_handler(self) -> Any:
        return exception_handler

    def get_authenticate_header(self, request: Request) -> str:
        """The challenge of the first authenticator that has one (token, Basic), so failed
        or missing credentials are ``401`` with ``WWW-Authenticate`` wherever a client could
        send some; DRF asks only the first (the session's, which has none: a ``403``)."""
        for authenticator in self.get_authenticators():
            header = authenticator.authenticate_header(request)
            if header:
                return str(header)
        return ""  # none: 403

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with tenancy.kept_scope():  # the tenant entered in initial() ends with the request
            return super().dispatch(request, *args, **kwargs)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if response.status_code < 500:
            outage.succeeded()
        return super().finalize_response(request, response, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        limit = warlock_settings.MAX_BODY_BYTES
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not (length.isascii() and length.isdigit()):
            raise ApiError(400, "invalid-input", "Content-Length is not a number of bytes.")
        if int(length) > limit:
            raise ApiError(413, "payload-too-large", f"The request body is over {limit} bytes.")
        super().initial(request, *args, **kwargs)
        # The tenant of the requester as authenticated (a token's user too, whom no
        # middleware saw): every query of the request reads and writes only its rows.
        scope = tenancy.resolve(request)
        if scope is tenancy.UNRESOLVED:
            raise TenantUnresolvedError()
        tenancy.enter(scope)
        cookie_borne = request.successful_authenticator is None or isinstance(
            request.successful_authenticator, SessionAuthentication
        )
        if request.method not in ("GET", "HEAD", "OPTIONS") and cookie_borne:
            # A cookie identifies anonymous visitors too, so their writes need CSRF protection;
            # Basic or token credentials are not sent by a browser on its own.
            SessionAuthentication().enforce_csrf(request)


class PolicyViewSet(WarlockViewSet):
    """Endpoints on one session or conversation, judged by ``WARLOCK_SESSIONS["PERMISSION"]``,
    whose id in the URL is checked as every store checks it (400, never a 500)."""

    lookup_value_regex = r"[^/]+"
    lookup_url_kwarg: str  # each endpoint names its id

    def get_permissions(self) -> list[Any]:
        return [self.policy()]

    def policy(self) -> SessionPolicy:
        policy: SessionPolicy = warlock_settings.PERMISSION()
        return policy

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if self.lookup_url_kwarg in kwargs:
            session_id_input(kwargs[self.lookup_url_kwarg])
        super().initial(request, *args, **kwargs)
