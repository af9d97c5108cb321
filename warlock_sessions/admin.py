"""Admin inspection of sessions, their event log, outbox and wakes, of run snapshots and
checkpoints, and of conversations as transcripts. Read-only: a blob is only ever written
through a Store (the API's PUT does that with the version check)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from .agents import get_agent
from .conf import warlock_settings
from .engine.graph import mermaid
from .engine.session import RUN_STATUSES, text_problem
from .errors import InvalidSessionError, WarlockError
from .models import (
    Checkpoint,
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionQuerySet,
    Snapshot,
    Wake,
)
from .providers.chat import attachments_of, content_text
from .workflows.registry import definition_of, drift_of

TIMELINE_LENGTH = 100


if TYPE_CHECKING:  # the stubs make ModelAdmin generic; Django's class is not subscriptable
    BaseAdmin = admin.ModelAdmin[Any]
else:
    BaseAdmin = admin.ModelAdmin


class ReadOnlyAdmin(BaseAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # One log row, message or wake deleted alone would leave its session inconsistent;
        # deleting the session forgets all of them together.
        return False

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        if text_problem(object_id):
            return None  # no row has such an id, and PostgreSQL refuses to look for one
        return super().get_object(request, object_id, from_field)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        if text_problem(search_term):
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        given = [*request.GET.lists(), *request.POST.lists()]
        if any(text_problem(text) for name, values in given for text in [name, *values]):
            # A filter, search or selected id PostgreSQL cannot compare with (a 500 otherwise).
            return HttpResponseBadRequest("A filter, search or selection holds a NUL.")
        return super().changelist_view(request, extra_context)


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

    list_display = [
        "id",
        "agent",
        "version",
        "run_statuses",
        "run_flows",
        "blob_size",
        "updated_at",
    ]
    list_filter = (AgentFilter, RunStatusFilter, RunFlowFilter, "updated_at")
    # At a million sessions a full count, a date hierarchy or a distinct scan of the agent
    # column would each read the whole table on every page: none is shown.
    show_full_result_count = False
    search_fields = ["id"]
    search_help_text = _("An id, or any text in the session's data: a name, an e-mail.")
    fields = ("id", "agent", "version", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["fire_due_wakes", "export_json"]
    change_form_template = "admin/warlock_sessions/session/change_form.html"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if row is not None:
            try:
                blob = row.session
            except InvalidSessionError:
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
                    "payload": json.dumps(event.payload, indent=2, ensure_ascii=False),
                }
                for event in SessionEvent.objects.filter(session_id=row.id).order_by("-seq")[
                    :TIMELINE_LENGTH
                ]
            ]
            context["transcript"] = session_transcript(row.id)
            context["wakes"] = Wake.objects.filter(session_id=row.id, status=Wake.Status.PENDING)
            context["outbox"] = OutboundMessage.objects.filter(session_id=row.id).order_by(
                "-created_at", "-id"
            )[:TIMELINE_LENGTH]
            context["raw_blob"] = self.pretty_blob(row)
            context["agent_graph"], context["agent_problem"] = agent_graph(row.agent, blob)
        return super().change_view(request, object_id, form_url, extra_context=context)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request).annotate(stored_size=Length("blob"))
        return cast("QuerySet[Any]", queryset)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """By id, or by what a person knows of the conversation (its data's text), through
        the search column and its full-text index (on PostgreSQL) rather than the blob."""
        term = search_term.strip()
        if not term or text_problem(term):
            return super().get_search_results(request, queryset, term)
        sessions = cast(SessionQuerySet, queryset)
        return queryset.filter(id=term) | sessions.saying(term), False

    @admin.display(description=_("blob size"), ordering="stored_size")
    def blob_size(self, obj: Any) -> str:
        return filesizeformat(obj.stored_size)

    def pretty_blob(self, obj: Session) -> str:
        try:
            text = json.dumps(obj.session, indent=2, ensure_ascii=False)
        except InvalidSessionError as error:
            return format_html('<p class="errornote">{}</p><pre>{}</pre>', error, obj.blob)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    @admin.action(description=_("Fire the selected sessions' due wakes now"))
    def fire_due_wakes(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        from django.db.models import Q
        from django.utils import timezone

        from .host.worker import claim, fire_wake

        due = Q(
            status=Wake.Status.PENDING,
            due_at__lte=timezone.now(),
            session_id__in=list(queryset.values_list("id", flat=True)),
        )
        wakes = claim(Wake, due, 1000)
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
            except InvalidSessionError as error:
                sessions.append({"id": row.id, "unreadable": str(error), "blob": row.blob})
        response = HttpResponse(
            json.dumps(sessions, indent=2, ensure_ascii=False), content_type="application/json"
        )
        response["Content-Disposition"] = 'attachment; filename="sessions.json"'
        return response


@admin.register(SessionEvent)
class SessionEventAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "seq", "type", "created_at"]
    list_filter = ["type", "created_at"]
    search_fields = ["session_id"]


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "key", "kind", "status", "attempts", "deliver_after"]
    list_filter = ["status", "kind"]
    search_fields = ["session_id", "key"]


@admin.register(Wake)
class WakeAdmin(ReadOnlyAdmin):
    list_display = ["session_id", "key", "agent", "due_at", "status", "attempts"]
    list_filter = ["status", "agent"]
    search_fields = ["session_id", "key"]


def agent_graph(agent_name: str, blob: Any) -> tuple[str, str]:
    """The session's agent as a Mermaid flowchart with its runs' current steps highlighted,
    or why it cannot be drawn."""
    if not agent_name:
        return "", str(_("The session does not say which agent it belongs to."))
    try:
        agent = get_agent(agent_name)
    except Exception as error:
        return "", f"The agent {agent_name!r} cannot be built: {error}"
    current = [(run["flowId"], run["stepId"]) for run in (blob or {}).get("runs", [])]
    return mermaid(agent, current), ""


def session_transcript(session_id: str) -> list[dict[str, Any]]:
    """Both sides of a session's conversation from its log, oldest first (the latest
    ``TIMELINE_LENGTH`` messages)."""
    said = SessionEvent.objects.filter(session_id=session_id, type="message").order_by("-seq")
    return [
        {
            "who": "user" if event.payload.get("role") == "user" else "bot",
            "text": event.payload.get("text", ""),
            "at": event.created_at,
        }
        for event in reversed(said[:TIMELINE_LENGTH])
    ]


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)


class SnapshotStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        statuses = ("running", "completed", "failed", "max-iterations")
        return [(status, status) for status in statuses]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(payload__status=value) if value else queryset


class SnapshotDriftFilter(admin.SimpleListFilter):
    """Whether the workflow or supervisor registered in this process under the run's name
    would resume it as it is (``current``), would refuse it (``drifted``), or is unknown."""

    title = _("definition")
    parameter_name = "drift"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, value) for value in ("current", "drifted", "unknown")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        rows = queryset.values_list("key", "payload")
        return queryset.filter(key__in=[key for key, payload in rows if drift_of(payload) == value])


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """The run snapshots of ``DjangoSnapshotStore``: read them, see which a changed definition
    would refuse, resume them (forcing past drift only after a confirmation), delete them."""

    list_display = ["key", "run_name", "run_status", "definition", "version", "saved_at"]
    list_filter = (SnapshotStatusFilter, SnapshotDriftFilter, "saved_at")
    search_fields = ["^key"]  # by prefix
    fields = ("key", "version", "saved_at", "pretty_payload")
    readonly_fields = fields
    actions = ["resume_runs", "force_resume_runs"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    @admin.display(description=_("run of"))
    def run_name(self, obj: Snapshot) -> str:
        payload = obj.payload if isinstance(obj.payload, dict) else {}
        names = ("orchestratorName", "workflowName", "supervisorName")
        return str(next((payload[name] for name in names if payload.get(name)), ""))

    @admin.display(description=_("status"))
    def run_status(self, obj: Snapshot) -> str:
        return str((obj.payload or {}).get("status", "")) if isinstance(obj.payload, dict) else ""

    @admin.display(description=_("definition"))
    def definition(self, obj: Snapshot) -> str:
        return drift_of(obj.payload) if isinstance(obj.payload, dict) else "unknown"

    @admin.display(description=_("snapshot"))
    def pretty_payload(self, obj: Snapshot) -> str:
        return pretty_json(obj.payload)

    @admin.action(description=_("Resume the selected runs"), permissions=["change"])
    def resume_runs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._resume(request, queryset, force=False)

    @admin.action(
        description=_("Resume the selected runs, even those a changed definition refuses"),
        permissions=["change"],
    )
    def force_resume_runs(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        if request.POST.get("confirmed") != "yes":
            drifted = [row.key for row in queryset if self.definition(row) == "drifted"]
            return render(
                request,
                "admin/warlock_sessions/snapshot/force_resume.html",
                {
                    **self.admin_site.each_context(request),
                    "title": _("Resume runs past a changed definition?"),
                    "snapshots": queryset,
                    "drifted": drifted,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                    "opts": self.model._meta,
                },
            )
        self._resume(request, queryset, force=True)
        return None

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Resuming is the one change the admin makes; the snapshot itself stays read-only
        # (its form shows no editable field).
        return admin.ModelAdmin.has_change_permission(self, request, obj)

    def _resume(self, request: HttpRequest, queryset: QuerySet[Any], *, force: bool) -> None:
        for row in queryset.order_by("key"):
            payload = row.payload if isinstance(row.payload, dict) else {}
            definition = definition_of(payload)
            if definition is None:
                self.message_user(
                    request,
                    _("%(key)s: no workflow or supervisor of that name is loaded here.")
                    % {"key": row.key},
                    messages.WARNING,
                )
                continue
            try:
                status = definition.resume_saved(row.key, payload, force=force)
            except WarlockError as error:  # drift, or no store: the run stays as it was
                self.message_user(request, f"{row.key}: {error}", messages.ERROR)
                continue
            self.message_user(request, f"{row.key}: {status}", messages.SUCCESS)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["orchestrator_name", "session_id", "turn_index", "version", "saved_at"]
    list_filter = ("orchestrator_name", "saved_at")
    search_fields = ["^session_id"]
    fields = (
        "orchestrator_name",
        "session_id",
        "turn_index",
        "signature",
        "version",
        "last_route",
        "summarized_through",
        "saved_at",
        "pretty_state",
    )
    readonly_fields = fields

    @admin.display(description=_("state"))
    def pretty_state(self, obj: Checkpoint) -> str:
        return pretty_json(obj.state)


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    """A conversation as a transcript: tool calls and results folded, provider blocks shown as
    kept, forks linked both ways. Read-only, as sessions are; deleting removes its messages."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    list_display = ["id", "turns", "version", "pending_turn", "owner", "updated_at"]
    list_filter = ("updated_at",)
    search_fields = ["id"]
    date_hierarchy = "updated_at"
    # Not the anonymous visitor's key: it was their Django session key, a credential.
    fields = ("id", "version", "turns", "owner", "created_at", "updated_at")
    readonly_fields = fields
    change_form_template = "admin/warlock_sessions/conversation/change_form.html"

    @admin.display(description=_("pending turn"), boolean=True)
    def pending_turn(self, obj: Conversation) -> bool:
        return obj.pending is not None

    @admin.display(description=_("owner"))
    def owner(self, obj: Conversation) -> str:
        if obj.user_id:
            return str(obj.user)
        return str(_("anonymous visitor")) if obj.anonymous_key else "—"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if row is not None:
            rows = ConversationMessage.objects.filter(conversation=row).order_by("position")
            context["transcript"] = [transcript_line(m.position, m.message) for m in rows]
            context["pending"] = row.pending
            if row.forked_from:
                source = row.forked_from.get("id", "")
                context["forked_from"] = {
                    "id": source,
                    "count": row.forked_from.get("messageCount"),
                    "url": self._url(source),
                }
            context["forks"] = [
                {"id": fork, "url": self._url(fork)}
                for fork in Conversation.objects.filter(forked_from__id=row.id)
                .order_by("created_at")
                .values_list("id", flat=True)
            ]
        return super().change_view(request, object_id, form_url, extra_context=context)

    @staticmethod
    def _url(conversation_id: str) -> str:
        return reverse("admin:warlock_sessions_conversation_change", args=[quote(conversation_id)])


def transcript_line(position: int, message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    return {
        "position": position,
        "role": message.get("role", "?"),
        "text": content_text(content),
        "attachments": attachments_of(content),
        "summary": (message.get("metadata") or {}).get("compaction"),
        "tool_calls": [
            {**call, "input": json.dumps(call.get("input"), ensure_ascii=False, indent=2)}
            for call in message.get("toolCalls") or []
        ],
        "tool_call_id": message.get("toolCallId"),
        "result": content if isinstance(content, str) else json.dumps(content),
        "blocks": json.dumps(message["blocks"], indent=2) if message.get("blocks") else "",
    }
