"""Chats with people in the admin: the inbox of sessions waiting for a person (oldest first,
with the last thing the customer said), and what staff do on a session's page: take it, answer
in the bot's place and hand it back (``engine.handover``), each a turn of the session's host,
so the customer's open socket shows it at once and the log records who did it."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from ..agents import default_agent_name
from ..conf import warlock_settings
from ..encryption import sealing
from ..engine.handover import handover_of
from ..engine.session import text_problem
from ..errors import (
    EncryptionError,
    InvalidInputError,
    InvalidSessionError,
    ServiceUnavailableError,
    WarlockError,
)
from ..host import Host
from ..host.wire import admitted_turn
from ..models import Session, SessionEvent, SessionOwner, WaitingSession
from ..permissions import HANDOVER_ACTION, SessionAccess
from .base import ReadOnlyAdmin
from .transcripts import last_user_text


def session_page(session_id: str) -> str:
    """The admin page of a session, its id quoted as the admin quotes ids in URLs."""
    return reverse("admin:warlock_sessions_session_change", args=[quote(session_id)])


def handover_panel(row: Session) -> dict[str, Any]:
    """Who answers the session, for its page: ``None`` values while the bot does."""
    try:
        record = handover_of(row.session) or {}
    except (InvalidSessionError, EncryptionError):
        record = {}
    return {
        "status": record.get("status", ""),
        "by": record.get("by", ""),
        "since": row.handover_since,
        "reason": record.get("reason", ""),
        # Each form posts the key it was drawn with: sent twice, it is answered once.
        "key": uuid.uuid4().hex,
        "last_seq": SessionEvent.objects.filter(session_id=row.id)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
        or 0,
    }


@require_POST
def handover_view(request: HttpRequest, object_id: str) -> HttpResponse:
    """Take, answer or hand back the session (``action``, ``text``, ``key`` posted: the page
    sends a key of its own, so a form sent twice answers once). JSON for the page's script, a
    redirect back with a message for a plain form."""
    session_id = unquote(object_id)  # the admin's own quoting, as its change page's URL has it
    if text_problem(session_id):
        raise Http404  # no row has such an id, and PostgreSQL refuses to look for one
    row = get_object_or_404(Session, pk=session_id)
    policy = warlock_settings.PERMISSION()
    access = SessionAccess(row.id, SessionOwner.of(row.id))
    if not policy.can_see(request, access) or not policy.can_act(request, HANDOVER_ACTION, access):
        return _answer(
            request,
            row,
            403,
            "permission-denied",
            str(_("Only staff who handle chats answer for the bot.")),
        )
    body = {
        "action": request.POST.get("action", ""),
        "key": request.POST.get("key") or uuid.uuid4().hex,
    }
    if body["action"] == "reply":
        body["text"] = request.POST.get("text", "").strip()
    try:
        turn_input, _context, _agent = admitted_turn(
            {"handover": body}, trusted=False, hands_over=True, user=request.user
        )
        result = Host(row.agent or default_agent_name()).handle(row.id, turn_input)
    except InvalidInputError as error:
        return _answer(request, row, 400, "invalid-input", str(error))
    except ServiceUnavailableError as error:
        return _answer(request, row, 503, "unavailable", str(error))
    except WarlockError as error:  # a lost race after retries, an agent gone
        return _answer(request, row, 409, "conflict", str(error))
    return _answer(request, row, 200, result.code or "ok", "")


def _answer(
    request: HttpRequest, row: Session, status: int, code: str, detail: str
) -> HttpResponse:
    if request.headers.get("Accept") == "application/json":
        return JsonResponse({"code": code, "detail": str(detail)}, status=status)
    if detail:
        messages.error(request, detail)
    return HttpResponseRedirect(session_page(row.pk))


@admin.register(WaitingSession)
class WaitingSessionAdmin(ReadOnlyAdmin):
    """The inbox: each chat people have, the one waiting longest first."""

    list_display = ["chat", "who_answers", "handover_since", "last_said", "agent"]
    # The chat column is its own link to the session's page: the list's would nest a second.
    list_display_links = None

    class Media:
        css = {"all": ("warlock_sessions/admin-lists.css",)}

    list_filter = ["handover"]
    search_fields = ["id"]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        said = SessionEvent.objects.filter(
            session_id=OuterRef("id"), type="message", payload__role="user"
        ).order_by("-seq")
        queryset: QuerySet[Any] = super().get_queryset(request)
        annotated: QuerySet[Any] = queryset.annotate(
            last_user_text=Subquery(said.values("payload__text")[:1])
        )
        return annotated

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or request.user.has_perm(
            "warlock_sessions.view_session"
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """A chat's page is its session's, where staff answer it."""
        return HttpResponseRedirect(session_page(unquote(object_id)))

    @admin.display(description=_("chat"), ordering="id")
    def chat(self, obj: WaitingSession) -> str:
        """The session's id, linked to its page, where staff answer it."""
        return format_html('<a href="{}">{}</a>', session_page(obj.pk), obj.pk)

    @admin.display(description=_("who answers"), ordering="handover")
    def who_answers(self, obj: WaitingSession) -> str:
        if obj.handover != "taken":
            return str(_("waiting for a person"))
        try:
            by = (handover_of(obj.session) or {}).get("by") or "?"
        except (InvalidSessionError, EncryptionError):
            by = "?"
        return str(_("taken by %(name)s") % {"name": by})

    @admin.display(description=_("last said by the customer"))
    def last_said(self, obj: Any) -> str:
        # A sealed log (ENCRYPTION_KEYS) cannot be read by the list's query: read it here.
        try:
            text = last_user_text(obj.pk) if sealing() else (obj.last_user_text or "")
        except EncryptionError:
            text = "?"
        return text if len(text) <= 120 else text[:119] + "…"

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}
