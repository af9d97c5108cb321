"""Durable runs in the admin: snapshots (their progress; resumed by a worker when asked for
here, past drift only once confirmed) and orchestrators' checkpoints."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from ..checkpoints.base import opened_state
from ..errors import EncryptionError, WarlockError
from ..models import Checkpoint, Snapshot
from ..snapshots.base import opened_snapshot
from ..snapshots.db import DjangoSnapshotStore
from ..workflows.registry import definition_of, drift_of
from ..workflows.resumes import FAILED, QUEUED, RESUMING, ask_resume
from ..workflows.runs import cancel_saved, refuse_cancelled
from .base import ReadOnlyAdmin, pretty_json


class SnapshotStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        statuses = ("running", "completed", "failed", "max-iterations", "cancelled")
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
        return queryset.filter(
            key__in=[key for key, stored in rows if drift_of(_payload(key, stored)) == value]
        )


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """The run snapshots of ``DjangoSnapshotStore``: read them, see which a changed definition
    would refuse, resume them (forcing past drift only after a confirmation), cancel running
    ones, delete them."""

    list_display = [
        "key",
        "run_name",
        "run_status",
        "progress",
        "resume_state",
        "definition",
        "version",
        "saved_at",
    ]
    list_filter = (SnapshotStatusFilter, SnapshotDriftFilter, "saved_at")
    search_fields = ["^key"]  # by prefix
    fields = ("key", "version", "saved_at", "progress", "resume_state", "pretty_payload")
    readonly_fields = fields
    actions = ["resume_runs", "force_resume_runs", "cancel_runs"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    @admin.display(description=_("run of"))
    def run_name(self, obj: Snapshot) -> str:
        payload = _payload(obj.key, obj.payload)
        names = ("orchestratorName", "workflowName", "supervisorName")
        return str(next((payload[name] for name in names if payload.get(name)), ""))

    @admin.display(description=_("status"))
    def run_status(self, obj: Snapshot) -> str:
        return str(_payload(obj.key, obj.payload).get("status", ""))

    @admin.display(description=_("definition"))
    def definition(self, obj: Snapshot) -> str:
        payload = _payload(obj.key, obj.payload)
        return drift_of(payload) if payload else "unknown"

    @admin.display(description=_("progress"))
    def progress(self, obj: Snapshot) -> str:
        payload = _payload(obj.key, obj.payload)
        return progress_of(payload) if payload else ""

    @admin.display(description=_("resume"))
    def resume_state(self, obj: Snapshot) -> str:
        ask = obj.resume if isinstance(obj.resume, dict) else None
        if ask is None:
            return ""
        status = ask.get("status")
        if status == QUEUED:
            return str(_("queued for a worker by %(by)s") % {"by": ask.get("by", "")})
        if status == FAILED:
            return str(_("failed: %(error)s") % {"error": ask.get("error", "")})
        return str(_("a worker is resuming it since %(at)s") % {"at": ask.get("startedAt", "")})

    @admin.display(description=_("snapshot"))
    def pretty_payload(self, obj: Snapshot) -> str:
        return pretty_json(_payload(obj.key, obj.payload))

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

    @admin.action(description=_("Cancel the selected running runs"), permissions=["change"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Each running run is saved as cancelled; the process running it (if any) stops at
        its next save. A settled run is left as it was."""
        store = DjangoSnapshotStore(queryset.db)
        reason = f"cancelled in the admin by {request.user}"
        for key in queryset.order_by("key").values_list("key", flat=True):
            try:
                cancel_saved(store, key, reason)
            except WarlockError as error:
                self.message_user(request, f"{key}: {error}", messages.WARNING)
                continue
            self.message_user(request, f"{key}: cancelled", messages.SUCCESS)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Resuming and cancelling are the changes the admin makes; the snapshot itself stays
        # read-only (its form shows no editable field).
        return admin.ModelAdmin.has_change_permission(self, request, obj)

    def _resume(self, request: HttpRequest, queryset: QuerySet[Any], *, force: bool) -> None:
        """Each run this process can resume is queued for a worker (a long run must not hold
        the request); one it would refuse (no definition of that name here, a changed
        definition or a cancel without ``force``) is refused now, and stays as it was."""
        for row in queryset.order_by("key"):
            payload = _payload(row.key, row.payload)
            refusal = self._refusal(row.key, payload, force)
            if refusal:
                self.message_user(request, f"{row.key}: {refusal}", messages.ERROR)
                continue
            asked = ask_resume(row.key, by=str(request.user), force=force, using=queryset.db)
            if asked is None:
                self.message_user(
                    request, _("%(key)s: no longer saved.") % {"key": row.key}, messages.WARNING
                )
                continue
            if asked == RESUMING:
                self.message_user(
                    request,
                    _("%(key)s: a worker is resuming it now; this ask was not queued.")
                    % {"key": row.key},
                    messages.WARNING,
                )
                continue
            self.message_user(
                request,
                _("%(key)s: queued; a worker resumes it (reload to follow its progress).")
                % {"key": row.key},
                messages.SUCCESS,
            )

    @staticmethod
    def _refusal(key: str, payload: dict[str, Any], force: bool) -> str:
        if definition_of(payload) is None:
            return str(_("no workflow or supervisor of that name is loaded here."))
        try:
            refuse_cancelled(payload, key, force)
        except WarlockError as error:
            return str(error)
        if drift_of(payload) == "drifted" and not force:
            return str(
                _(
                    "was saved with signature %(saved)s, which the definition loaded here "
                    "no longer accepts; resume it with the action that resumes past a "
                    "changed definition"
                )
                % {"saved": payload.get("signature")}
            )
        return ""


def progress_of(payload: dict[str, Any]) -> str:
    """How far a run got, from its snapshot: a workflow's steps done (of its definition's,
    when loaded here) and the next; a supervisor's iteration."""
    steps = payload.get("steps")
    if isinstance(steps, dict):
        done = sum(
            isinstance(record, dict) and record.get("status") in ("completed", "skipped")
            for record in steps.values()
        )
        total = len(getattr(definition_of(payload), "steps", ()) or ())
        text = (
            _("%(done)s of %(total)s steps") % {"done": done, "total": total}
            if total
            else _("%(done)s steps") % {"done": done}
        )
        following = payload.get("next")
        if payload.get("status") == "running" and isinstance(following, str):
            return str(_("%(text)s; next: %(step)s") % {"text": text, "step": following})
        return str(text)
    if isinstance(payload.get("iteration"), int):
        return str(_("iteration %(number)s") % {"number": payload["iteration"] + 1})
    return ""


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
        try:
            return pretty_json(opened_state(obj))
        except EncryptionError as error:
            return str(error)


def _payload(key: str, stored: Any) -> dict[str, Any]:
    """A row's snapshot as saved (opened if sealed); ``{}`` for one that is not an object."""
    try:
        return opened_snapshot(stored, key) if isinstance(stored, dict) else {}
    except EncryptionError:  # listed as a run of no name and status; its page says why
        return {}
