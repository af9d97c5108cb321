"""The sessions endpoints of CONTRACT §4: the raw store over HTTP, turns, and the event log."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.dateparse import parse_datetime
from django.utils.decorators import method_decorator
from rest_framework import status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from ..conf import warlock_settings
from ..engine import ProviderError
from ..errors import SessionConflictError
from ..host import Host
from ..host.records import event_frame, forget_session
from ..host.wire import parse_turn
from ..models import Session, SessionEvent, SessionOwner
from ..permissions import SessionAccess, anonymous_key, claim_owner, may_see
from ..stores import default_store
from . import schema
from .errors import ApiError, exception_handler, not_found, precondition_failed

EVENTS_PAGE = 500


class SessionPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def version_header(request: Request, name: str) -> str | None:
    value = request.headers.get(name)
    return None if value is None else value.strip()


def etag_version(value: str) -> int:
    text = value.removeprefix("W/").strip().strip('"')
    if not text.isdigit():
        raise ApiError(
            400,
            "invalid-input",
            f"If-Match must be a version like '\"3\"', not {value!r}",
            field="If-Match",
        )
    return int(text)


@method_decorator(transaction.non_atomic_requests, name="dispatch")
class SessionViewSet(viewsets.ViewSet):
    """Sessions: list, read (with ``ETag``), write raw blobs (staff), delete, turns, events."""

    lookup_value_regex = r"[^/]+"
    lookup_url_kwarg = "session_id"
    pagination_class = SessionPagination

    def get_permissions(self) -> list[Any]:
        return [warlock_settings.PERMISSION()]

    def get_exception_handler(self) -> Any:
        return exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        limit = warlock_settings.MAX_BODY_BYTES
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit:
            raise ApiError(413, "payload-too-large", f"The request body is over {limit} bytes.")
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD", "OPTIONS") and request.auth is None:
            # A cookie identifies anonymous visitors too, so their writes need CSRF protection.
            SessionAuthentication().enforce_csrf(request)

    # -- access -------------------------------------------------------------------------------

    def access(self, request: Request, session_id: str) -> SessionAccess:
        """The session as this requester may see it: 404 unless they may, 403 for an action
        they may see but not do."""
        access = SessionAccess(
            session_id, SessionOwner.objects.filter(session_id=session_id).first()
        )
        policy = self.get_permissions()[0]
        if not may_see(policy, request, access):
            raise not_found(session_id)
        self.check_object_permissions(request, access)
        return access

    # -- endpoints ----------------------------------------------------------------------------

    @schema.LIST
    def list(self, request: Request) -> Response:
        rows = Session.objects.all()
        user = request.user
        if not (user and (user.is_staff or user.has_perm("warlock_sessions.view_session"))):
            if user and user.is_authenticated:
                owned = SessionOwner.objects.filter(user=user)
            else:
                owned = SessionOwner.objects.filter(user=None, anonymous_key=anonymous_key(request))
            rows = rows.filter(id__in=owned.values("session_id"))
        params = request.query_params
        if params.get("agent"):
            rows = rows.filter(agent=params["agent"])
        if params.get("run_status"):
            rows = rows.with_run_status(params["run_status"])
        if params.get("flow"):
            rows = rows.with_flow(params["flow"])
        for name, lookup in (
            ("updated_after", "updated_at__gte"),
            ("updated_before", "updated_at__lt"),
        ):
            if params.get(name):
                moment = parse_datetime(params[name])
                if moment is None:
                    raise ValidationError({name: "expected an ISO-8601 date and time"})
                rows = rows.filter(**{lookup: moment})
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows.order_by("-updated_at", "id"), request, view=self)
        return paginator.get_paginated_response(
            [
                {
                    "id": row.id,
                    "version": row.version,
                    "agent": row.agent,
                    "run_flows": row.run_flows.split(),
                    "run_statuses": row.run_statuses.split(),
                    "updated_at": row.updated_at,
                }
                for row in page
            ]
        )

    @schema.RETRIEVE
    def retrieve(self, request: Request, session_id: str) -> Response:
        self.access(request, session_id)
        session = default_store().load(session_id)
        if session is None:
            raise not_found(session_id)
        return Response(
            {"id": session_id, "version": session["version"], "session": session},
            headers={"ETag": f'"{session["version"]}"'},
        )

    @schema.UPDATE
    def update(self, request: Request, session_id: str) -> Response:
        self.access(request, session_id)
        if_match, if_none_match = (
            version_header(request, "If-Match"),
            version_header(request, "If-None-Match"),
        )
        if (if_match is None) == (if_none_match is None):
            raise ApiError(
                400,
                "invalid-input",
                'Send If-Match: "<version>" to update or If-None-Match: * to create.',
                field="If-Match",
            )
        if if_none_match is not None and if_none_match != "*":
            raise ApiError(
                400, "invalid-input", "If-None-Match takes only *.", field="If-None-Match"
            )
        expected = 0 if if_match is None else etag_version(if_match)
        if not isinstance(request.data, dict):
            raise ApiError(400, "invalid-session", "The body must be a v4 session object.")
        try:
            saved = default_store().save(request.data, expected)
        except SessionConflictError as error:
            raise precondition_failed(error) from None
        except (TypeError, ValueError) as error:
            raise ApiError(400, "invalid-session", str(error)) from None
        return Response(
            {"id": session_id, "version": saved["version"], "session": saved},
            status=status.HTTP_201_CREATED if expected == 0 else status.HTTP_200_OK,
            headers={"ETag": f'"{saved["version"]}"'},
        )

    @schema.DESTROY
    def destroy(self, request: Request, session_id: str) -> Response:
        access = self.access(request, session_id)
        existed = default_store().delete(session_id)
        if not existed and access.owner is None:
            raise not_found(session_id)
        forget_session(session_id)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @schema.TURN
    @action(detail=True, methods=["post"])
    def turn(self, request: Request, session_id: str) -> Response:
        turn_input, context, agent = parse_turn(request.data)
        store = default_store()
        if (
            not SessionOwner.objects.filter(session_id=session_id).exists()
            and store.load(session_id) is None
        ):
            claim_owner(request, session_id)  # a new session belongs to whoever starts it
        self.access(request, session_id)
        try:
            result = Host(agent, store).handle(session_id, turn_input, context)
        except ProviderError as error:
            raise ApiError(
                503, error.code, f"The model provider failed: {error}", retryable=error.retryable
            ) from None
        return Response({**result.as_dict(), "version": result.session["version"]})

    @schema.EVENTS
    @action(detail=True, methods=["get"])
    def events(self, request: Request, session_id: str) -> Response:
        self.access(request, session_id)
        raw = request.query_params.get("after_seq", "0")
        if not raw.isdigit():
            raise ValidationError({"after_seq": "expected a whole number"})
        rows = SessionEvent.objects.filter(session_id=session_id, seq__gt=int(raw)).order_by("seq")[
            :EVENTS_PAGE
        ]
        events = [
            event_frame({"seq": row.seq, "type": row.type, "payload": row.payload}) for row in rows
        ]
        return Response({"events": events, "last_seq": events[-1]["seq"] if events else int(raw)})
