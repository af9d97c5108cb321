"""Sessions in the admin: the list with its filters and search, a session's page (transcript,
runs, log, outbox, wakes, the agent drawn) and its actions; the log, outbox and wakes."""

from __future__ import annotations

import json
from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat
from django.urls import URLPattern, path
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from ..agents import get_agent
from ..conf import warlock_settings
from ..encryption import sealing
from ..engine.session import RUN_STATUSES, text_problem
from ..erasure import Person, erase, traces_of
from ..errors import EncryptionError, InvalidSessionError
from ..host.wire import staff_account
from ..models import (
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    SessionQuerySet,
    Wake,
    work_of,
    work_of_sessions,
)
from ..permissions import HANDOVER_ACTION, SessionAccess
from .base import ReadOnlyAdmin, opened_or_why
from .handover import handover_panel, handover_view
from .transcripts import TIMELINE_LENGTH, agent_graph, session_transcript

#: The most due wakes "Fire the selected sessions' due wakes now" fires in one request.
FIRED_AT_ONCE = 1000
#: The latest messages a search looks at for the words searched (the log is the largest
#: table: the data's search column is what scales).
TRANSCRIPT_SEARCH = 200


class AgentFilter(admin.SimpleListFilter):
    """The agents configured in ``WARLOCK_SESSIONS["AGENTS"]`` (not a scan of the column)."""

    title = _("agent")
    parameter_name = "agent__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        chosen = self.value()
        names = set(warlock_settings.AGENTS) | ({chosen} if chosen else set())
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(agent=value) if value else queryset


class RunStatusFilter(admin.SimpleListFilter):
    title = _("live run status")
    parameter_name = "run_status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(status, status) for status in sorted(RUN_STATUSES)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return cast(SessionQuerySet, queryset).with_run_status(value) if value else queryset


class RunFlowFilter(admin.SimpleListFilter):
    title = _("live run flow")
    parameter_name = "flow"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        """The flows of the configured agents (not a scan of a million sessions)."""
        flows: set[str] = set()
        for name in warlock_settings.AGENTS:
            try:
                flows.update(get_agent(name).flows)
            except Exception:  # a broken agent must not break the list
                continue
        chosen = self.value()
        return [(flow, flow) for flow in sorted(flows | ({chosen} if chosen else set()))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return cast(SessionQuerySet, queryset).with_flow(value) if value else queryset


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting the row forgets the session whole (log, outbox, wakes, owner).
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    # Short headers, and the version on the session's page only: the columns beside the sidebar
    # and the filters fit a laptop's width.
    list_display = [
        "id",
        "agent",
        "handover",
        "statuses",
        "flows",
        "blob_size",
        "updated_at",
    ]
    list_filter = (AgentFilter, RunStatusFilter, RunFlowFilter, "handover", "updated_at")

    class Media:
        css = {"all": ("warlock_sessions/admin-lists.css",)}

    # At a million sessions a full count, a date hierarchy or a distinct scan of the agent
    # column would each read the whole table on every page: none is shown.
    show_full_result_count = False
    search_fields = ["id"]

    @property
    def search_help_text(self) -> str:  # type: ignore[override]
        if sealing():  # a sealed session's data and log are not in the clear to search
            return str(
                _(
                    "An id or its start, or an anonymous visitor's key (sealed sessions are not "
                    "searched by content)."
                )
            )
        return str(
            _(
                "An id or its start, an anonymous visitor's key, any text in the session's data "
                "(a name, an e-mail; accents ignored), or words said in it."
            )
        )

    fields = ("id", "agent", "owner", "version", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["fire_due_wakes", "export_json", "erase_people"]

    @admin.display(description=_("owner"))
    def owner(self, obj: Session) -> str:
        """Who the session belongs to: a user, or an anonymous visitor by a fingerprint of
        their key. Never the key: it is their Django session's key, which would let whoever
        reads it act as them; the search box finds a visitor's sessions by the key, and the
        erase action erases a session's visitor without it."""
        found = SessionOwner.objects.using(obj._state.db).filter(session_id=obj.id).first()
        if found is None:
            return str(_("nobody (made by server code or staff)"))
        if found.user_id is not None:
            return str(_("user %(user)s") % {"user": found.user})
        return str(Person(visitor=found.anonymous_key))  # as the erase logs name them

    change_form_template = "admin/warlock_sessions/session/change_form.html"

    @admin.action(
        description=_("Erase the people of the selected sessions, everywhere"),
        permissions=["erase"],
    )
    def erase_people(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """Each selected session's owner (a user or a visitor: all their sessions and
        conversations), or the session alone when nobody owns it, after a confirmation that
        says how many rows of each kind go."""
        people = people_of([str(key) for key in queryset.values_list("pk", flat=True)])
        if request.POST.get("confirmed") != "yes":
            totals: dict[str, int] = {}
            for person in people.values():
                for what, count in erase(person, dry_run=True).items():
                    totals[what] = totals.get(what, 0) + count
            return render(
                request,
                "admin/warlock_sessions/session/erase.html",
                {
                    **self.admin_site.each_context(request),
                    "title": _("Erase these people everywhere?"),
                    "people": sorted(people),
                    "totals": sorted(totals.items()),
                    "others_forks": sorted(
                        {
                            fork
                            for person in people.values()
                            for fork in traces_of(person).others_forks
                        }
                    ),
                    "sessions": queryset,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "opts": self.model._meta,
                },
            )
        others_forks = "keep" if request.POST.get("keep_others_forks") == "yes" else "erase"
        for label, person in sorted(people.items()):
            erased = erase(person, by=f"the admin, {request.user}", others_forks=others_forks)
            said = ", ".join(f"{what}: {count}" for what, count in erased.items() if count)
            self.message_user(request, f"{label}: erased ({said or 'nothing left'})")
        return None

    def has_fire_permission(self, request: HttpRequest) -> bool:
        """Firing a wake runs a turn: whoever may send turns to any session (``change``)."""
        return bool(request.user.has_perm("warlock_sessions.change_session"))

    def has_erase_permission(self, request: HttpRequest) -> bool:
        """An erase deletes the people's sessions and conversations: both permissions."""
        return bool(
            request.user.has_perm("warlock_sessions.delete_session")
            and request.user.has_perm("warlock_sessions.delete_conversation")
        )

    def page_context(self, row: Any) -> dict[str, Any]:
        context: dict[str, Any] = {}
        try:
            blob = row.session
        except (InvalidSessionError, EncryptionError):
            blob = None
        context["runs"] = [
            {
                "id": run["id"],
                "flow": run["flowId"],
                "step": run["stepId"],
                "status": run["status"],
                "until": (run.get("waiting") or {}).get("until", ""),
                "hop": run["hop"],
                "started": run["startedAt"],
            }
            for run in (blob or {}).get("runs", [])
        ]
        context["claims"] = sorted((blob or {}).get("claims", {}).items())
        context["inputs"] = list(reversed((blob or {}).get("inputs", [])))[:20]
        context["timeline"] = [
            {
                "seq": event.seq,
                "type": event.type,
                "created_at": event.created_at,
                "payload": opened_or_why(lambda event=event: event.opened_payload),
            }
            for event in SessionEvent.objects.filter(session_id=row.id).order_by("-seq")[
                :TIMELINE_LENGTH
            ]
        ]
        language = (blob or {}).get("metadata", {}).get("language")
        context["transcript"] = session_transcript(row.id, language)
        context["wakes"] = Wake.objects.filter(**work_of(row.id), status=Wake.Status.PENDING)
        outbox = list(
            OutboundMessage.objects.filter(**work_of(row.id)).order_by("-created_at", "-id")[
                :TIMELINE_LENGTH
            ]
        )
        for message in outbox:  # opened here: one that does not open says why
            message.shown = opened_or_why(lambda message=message: message.opened_text)  # type: ignore[attr-defined]
        context["outbox"] = outbox
        context["raw_blob"] = self.pretty_blob(row)
        context["agent_graph"], context["agent_problem"] = agent_graph(row.agent, blob)
        context["handover"] = {**handover_panel(row), "language": language or ""}
        return context

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        policy = warlock_settings.PERMISSION()
        access = SessionAccess(unquote(object_id), None)
        account = staff_account(request.user)
        context = {
            "may_answer": policy.can_act(request, HANDOVER_ACTION, access),
            # As a handover record names them: the page offers no take of one's own chat.
            "staff_name": account[1] if account else "",
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, extra_context=context)

    def get_urls(self) -> list[URLPattern]:
        answer = path(
            "<path:object_id>/handover/",
            self.admin_site.admin_view(handover_view),
            name="warlock_sessions_session_handover",
        )
        return [answer, *super().get_urls()]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request).annotate(stored_size=Length("blob"))
        return cast("QuerySet[Any]", queryset)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """By id or its start, by what a person knows of the conversation (its data's text,
        through the search column and its full-text index on PostgreSQL, accents ignored),
        or by what was said in it (the latest ``TRANSCRIPT_SEARCH`` messages that say it:
        found after its data was cleared)."""
        term = search_term.strip()
        if not term or text_problem(term):
            return super().get_search_results(request, queryset, term)
        sessions = cast(SessionQuerySet, queryset)
        said = (
            SessionEvent.objects.using(queryset.db)
            .filter(type="message", payload__text__icontains=term)
            .order_by("-seq")
            .values_list("session_id", flat=True)[:TRANSCRIPT_SEARCH]
        )
        owned = SessionOwner.objects.using(queryset.db).filter(user=None, anonymous_key=term)
        found = (
            queryset.filter(id__startswith=term)
            | sessions.saying(term)
            | queryset.filter(id__in=owned.values("session_id"))
        )
        if sealing():  # a sealed log is not searched: what it says is not in the clear
            return found, False
        return found | queryset.filter(id__in=list(said)), False

    @admin.display(description=_("runs"), ordering="run_statuses")
    def statuses(self, obj: Session) -> str:
        """The statuses of the session's live runs."""
        return obj.run_statuses or "—"

    @admin.display(description=_("flows"), ordering="run_flows")
    def flows(self, obj: Session) -> str:
        """The flows of the session's live runs."""
        return obj.run_flows or "—"

    @admin.display(description=_("size"), ordering="stored_size")
    def blob_size(self, obj: Any) -> str:
        return filesizeformat(obj.stored_size)

    def pretty_blob(self, obj: Session) -> str:
        try:
            text = json.dumps(obj.session, indent=2, ensure_ascii=False)
        except (InvalidSessionError, EncryptionError) as error:
            return format_html('<p class="errornote">{}</p><pre>{}</pre>', error, obj.blob)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    @admin.action(description=_("Fire the selected sessions' due wakes now"), permissions=["fire"])
    def fire_due_wakes(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        from django.db.models import Q
        from django.utils import timezone

        from ..host.worker import claim, fire_wake

        # A bucket at a time: each claim reads one shard of a distributed database.
        due = Q(status=Wake.Status.PENDING, due_at__lte=timezone.now())
        chosen = work_of_sessions(queryset.values_list("id", flat=True))
        due &= Q(session_id__in=chosen["session_id__in"])
        wakes: list[Wake] = []
        for bucket in chosen["bucket__in"]:
            if len(wakes) < FIRED_AT_ONCE:
                wakes += claim(Wake, due, FIRED_AT_ONCE - len(wakes), buckets=[bucket])
        for wake in wakes:
            fire_wake(wake)
        self.message_user(
            request, _("Fired %(count)d due wake(s).") % {"count": len(wakes)}, messages.SUCCESS
        )

    @admin.action(description=_("Export the selected sessions as JSON"))
    def export_json(self, request: HttpRequest, queryset: QuerySet[Session]) -> HttpResponse:
        sessions: list[Any] = []
        for row in queryset.order_by("id"):
            try:
                sessions.append(row.session)
            except (InvalidSessionError, EncryptionError) as error:
                sessions.append({"id": row.id, "unreadable": str(error), "blob": row.blob})
        response = HttpResponse(
            json.dumps(sessions, indent=2, ensure_ascii=False), content_type="application/json"
        )
        response["Content-Disposition"] = 'attachment; filename="sessions.json"'
        return response


@admin.register(SessionEvent)
class SessionEventAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "seq", "type", "created_at"]
    # The payload opened (it may be sealed: ENCRYPTION_KEYS), never the stored column.
    fields = ("session_id", "seq", "type", "created_at", "said")
    readonly_fields = fields

    @admin.display(description=_("payload"))
    def said(self, obj: SessionEvent) -> str:
        return opened_or_why(lambda: obj.opened_payload)

    list_filter = ["type", "created_at"]
    search_fields = ["session_id"]


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "key", "kind", "status", "attempts", "deliver_after"]
    fields = (
        "session_id", "key", "kind", "status", "attempts", "last_error", "deliver_after",
        "delivered_at", "said",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description=_("message"))
    def said(self, obj: OutboundMessage) -> str:
        return opened_or_why(lambda: obj.opened_payload)

    list_filter = ["status", "kind"]
    search_fields = ["session_id", "key"]


@admin.register(Wake)
class WakeAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "key", "agent", "due_at", "status", "attempts"]
    list_filter = ["status", "agent"]
    search_fields = ["session_id", "key"]


def people_of(session_ids: list[str]) -> dict[str, Person]:
    """Whom erasing these sessions means, by how the admin names them (with the selected
    sessions that lead to them): each session's owner (a user, or an anonymous visitor), or
    the session itself when nobody owns it."""
    people: dict[str, Person] = {}
    selected: dict[str, list[str]] = {}
    owners = {
        row.session_id: row for row in SessionOwner.objects.filter(session_id__in=session_ids)
    }
    for session_id in session_ids:
        owner = owners.get(session_id)
        if owner is not None and owner.user_id is not None:
            label = f"user {owner.user}"
            people[label] = Person(user=owner.user_id)
        elif owner is not None and owner.anonymous_key:
            person = Person(visitor=owner.anonymous_key)
            label = str(person)  # a digest: the key is the visitor's session cookie
            people[label] = person
        else:
            people[f"session {session_id} (owned by nobody)"] = Person(session=session_id)
            continue
        selected.setdefault(label, []).append(session_id)
    return {
        f"{label} (selected: {', '.join(selected[label])})" if label in selected else label: person
        for label, person in people.items()
    }
