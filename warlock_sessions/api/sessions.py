"""The sessions endpoints of docs/api.md: the raw store over HTTP, turns, and the event log."""

from __future__ import annotations

from functools import cached_property
from typing import Any, cast

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.utils.dateparse import parse_datetime
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from ..backends.replica import list_database
from ..claims import claim_new_session, release_claim
from ..engine import Session as SessionBlob
from ..errors import SessionConflictError
from ..host import Host, HostedTurn
from ..host.events import (
    end_user_outcome,
    end_user_payload,
    end_user_run,
    end_user_session,
    event_frame,
    wire_message,
)
from ..host.notify import forget_session
from ..host.wire import (
    admitted_turn,
    clean_text_param,
)
from ..models import Session, SessionEvent, SessionOwner, SessionQuerySet
from ..permissions import HANDOVER_ACTION, SessionAccess, used_by_another_tenant
from ..stores import default_store
from . import schema
from .base import PolicyViewSet
from .errors import ApiError, not_found, precondition_failed

EVENTS_PAGE = 500
#: The largest ``after_seq`` and ``If-Match`` version (a bigint column's range).
MAX_SEQ = 2**63 - 1


#: How far a list counts: beyond it ``count`` says this many and ``count_capped`` is true.
COUNT_CAP = 1000


class CappedPage(Page):  # type: ignore[type-arg]
    """A page that knows whether another follows from having fetched one row more."""

    def __init__(self, rows: list[Any], number: int, paginator: Any, more: bool) -> None:
        super().__init__(rows, number, paginator)
        self.more = more

    def has_next(self) -> bool:
        return self.more

    def next_page_number(self) -> int:
        return self.number + 1


class CappedPaginator(Paginator):  # type: ignore[type-arg]
    """Counts at most ``COUNT_CAP`` rows (counting a million matching sessions would cost
    more than the page itself, and grow with the table), yet serves every page: whether
    another follows is known from fetching one row more than the page holds."""

    def validate_number(self, number: Any) -> int:
        try:
            page = int(number)
        except (TypeError, ValueError):
            raise PageNotAnInteger("that page number is not a whole number") from None
        if page < 1:
            raise EmptyPage("that page number is less than 1")
        if page * self.per_page > MAX_SEQ:  # an offset no database can take: no such page
            raise EmptyPage("that page contains no results")
        return page

    def page(self, number: Any) -> CappedPage:
        page = self.validate_number(number)
        bottom = (page - 1) * self.per_page
        rows = list(self.object_list[bottom : bottom + self.per_page + 1])
        if not rows and page > 1:
            raise EmptyPage("that page contains no results")
        return CappedPage(rows[: self.per_page], page, self, more=len(rows) > self.per_page)

    @cached_property
    def count(self) -> int:
        head = self.object_list[: COUNT_CAP + 1]
        return len(head) if isinstance(head, list | tuple) else int(head.count())  # type: ignore[attr-defined]


class SessionPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    django_paginator_class = CappedPaginator

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        counted = self.page.paginator.count  # type: ignore[union-attr]
        response.data["count"] = min(counted, COUNT_CAP)
        response.data["count_capped"] = counted > COUNT_CAP
        return response


def version_header(request: Request, name: str) -> str | None:
    value = request.headers.get(name)
    return None if value is None else value.strip()


def if_none_match_holds(header: str | None, etag: str) -> bool:
    """Whether a GET's ``If-None-Match`` names the current ``etag`` (or ``*``): the client's
    copy is current, so the answer is 304 with no body."""
    if not header:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in tags or etag in tags


def etag_version(value: str) -> int:
    text = value.removeprefix("W/").strip().strip('"')
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise ApiError(
            400,
            "invalid-input",
            f"If-Match must be a version like '\"3\"', not {value!r}",
            field="If-Match",
        )
    return int(text)


class SessionViewSet(PolicyViewSet):
    """Sessions: list, read (with ``ETag``), write raw blobs (staff), delete, turns, events."""

    lookup_url_kwarg = "session_id"
    pagination_class = SessionPagination

    # -- access -------------------------------------------------------------------------------

    def access(self, request: Request, session_id: str, action: str | None = None) -> SessionAccess:
        """The session as this requester may see it: 404 unless they may, 403 for an action
        (the endpoint's, or ``action``) they may see but not do."""
        access = SessionAccess(session_id, SessionOwner.of(session_id))
        if not self.policy().can_see(request, access) or (
            access.owner is None
            and used_by_another_tenant(session_id, getattr(default_store(), "using", None))
        ):
            raise not_found(session_id)
        if action is None:
            self.check_object_permissions(request, access)
        elif not self.policy().can_act(request, action, access):
            self.permission_denied(request)
        return access

    # -- endpoints ----------------------------------------------------------------------------

    @schema.LIST
    def list(self, request: Request) -> Response:
        rows: SessionQuerySet = self.policy().visible(
            request, Session.objects.using(list_database(Session)).all()
        )
        params = {
            name: clean_text_param(name, str(value)) for name, value in request.query_params.items()
        }
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
                try:
                    moment = parse_datetime(params[name])
                except ValueError:  # well formed, but no such day or offset
                    moment = None
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
                for row in page or []
            ]
        )

    @schema.RETRIEVE
    def retrieve(self, request: Request, session_id: str) -> Response:
        self.access(request, session_id)
        session = default_store().load(session_id)
        if session is None:
            raise not_found(session_id)
        etag = f'"{session["version"]}"'
        if if_none_match_holds(request.headers.get("If-None-Match"), etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        if not self.policy().reads_staff_notes(request):
            session = cast(SessionBlob, end_user_session(session))
        return Response(
            {"id": session_id, "version": session["version"], "session": session},
            headers={"ETag": etag},
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
        blob = session_of_body(request.data, session_id)
        try:
            saved = default_store().save(cast(SessionBlob, blob), expected)
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
        forget_session(session_id)  # what the log, outbox, wakes and owner kept of it
        return Response(status=status.HTTP_204_NO_CONTENT)

    @schema.TURN
    @action(detail=True, methods=["post"])
    def turn(self, request: Request, session_id: str) -> Response:
        policy = self.policy()
        handover = isinstance(request.data, dict) and "handover" in request.data
        turn_input, context, agent_name = admitted_turn(
            request.data,
            trusted=policy.is_trusted(request),
            hands_over=handover
            and policy.can_act(request, HANDOVER_ACTION, SessionAccess(session_id, None)),
            user=request.user,
        )
        store = default_store()
        claimed = claim_new_session(request, session_id, store)  # a new one is its starter's
        try:
            self.access(request, session_id, HANDOVER_ACTION if handover else None)
            result = Host(agent_name, store).handle(session_id, turn_input, context)
        except Exception:
            if claimed is not None:
                release_claim(claimed, store)
            raise
        if claimed is not None and not result.changed:
            # Nothing was made (a wake or a handover for no session): the id stays unused.
            release_claim(claimed, store)
        return Response(turn_body(result, staff=self.policy().reads_staff_notes(request)))

    @schema.EVENTS
    @action(detail=True, methods=["get"])
    def events(self, request: Request, session_id: str) -> Response:
        access = self.access(request, session_id)
        raw = request.query_params.get("after_seq", "0")
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
            raise ValidationError({"after_seq": "expected a whole number"})
        if access.owner is None and default_store().load(session_id) is None:
            raise not_found(session_id)
        rows = SessionEvent.objects.filter(session_id=session_id, seq__gt=int(raw)).order_by("seq")[
            :EVENTS_PAGE
        ]
        events = [
            event_frame({"seq": row.seq, "type": row.type, "payload": row.opened_payload})
            for row in rows
        ]
        return Response({"events": events, "last_seq": events[-1]["seq"] if events else int(raw)})


def session_of_body(data: Any, session_id: str) -> dict[str, Any]:
    """The blob a PUT carries: the envelope GET returns (``{"id", "version", "session"}``) or
    the bare blob, either way for the session its URL names."""
    if not isinstance(data, dict):
        raise ApiError(400, "invalid-session", "The body must be a session envelope or blob.")
    blob = data.get("session") if "session" in data and "v" not in data else data
    if not isinstance(blob, dict):
        raise ApiError(400, "invalid-session", "The envelope's session must be a v4 blob.")
    named_ids = [("session.id", blob.get("id", session_id))]
    if blob is not data:
        named_ids.append(("id", data.get("id", session_id)))
    for where, named in named_ids:
        if named != session_id:
            raise ApiError(
                400,
                "id-mismatch",
                f"The body's {where} is {named!r:.80}, but the URL names {session_id!r:.80}.",
                field=where,
            )
    return blob


def turn_body(result: HostedTurn, *, staff: bool) -> dict[str, Any]:
    """The turn's answer in the API's own spelling: each message with ``after_ms`` and the
    logged events as the events endpoint and the socket send them. ``afterMs`` and each event's
    raw ``payload`` stay beside them until 0.4, for clients written against 0.2. A message
    says what a chat shows (``text``, ``kind``, ``key``, ``after_ms``, ``media``, ``by``), not
    which run and step of the engine said it (the outcomes say that). An end user's (not
    ``staff``) has none of what staff write for staff."""
    body = result.as_dict()
    body["messages"] = [
        {**wire_message(message), "after_ms": message["afterMs"]} for message in body["messages"]
    ]
    body["events"] = [
        {
            **event_frame(event),
            "payload": event["payload"]
            if staff
            else end_user_payload(event["type"], event["payload"]),
        }
        for event in result.events
    ]
    if not staff:
        body["session"] = end_user_session(body["session"])
        body["outcomes"] = [end_user_outcome(line) for line in body["outcomes"]]
        body["ended"] = [end_user_run(run) for run in body["ended"]]
    body["version"] = result.session["version"]
    return body
