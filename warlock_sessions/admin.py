"""Read-only admin inspection of stored sessions (a blob is only ever written by a Store)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from .engine.session import RUN_STATUSES
from .errors import InvalidSessionError
from .models import Session, SessionQuerySet


class RunStatusFilter(admin.SimpleListFilter):
    title = _("live run status")
    parameter_name = "run_status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(status, status) for status in sorted(RUN_STATUSES)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        value = self.value()
        return queryset.with_run_status(value) if value else queryset  # type: ignore[attr-defined]


class RunFlowFilter(admin.SimpleListFilter):
    title = _("live run flow")
    parameter_name = "flow"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        flows: set[str] = set()
        for tokens in Session.objects.exclude(run_flows="").values_list("run_flows", flat=True)[
            :1000
        ]:
            flows.update(tokens.split())
        return [(flow, flow) for flow in sorted(flows)]

    def queryset(self, request: HttpRequest, queryset: SessionQuerySet) -> QuerySet[Session]:
        value = self.value()
        return queryset.with_flow(value) if value else queryset


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["id", "agent", "version", "run_statuses", "run_flows", "updated_at"]
    list_filter = ["agent", RunStatusFilter, RunFlowFilter, "updated_at"]
    search_fields = ["id"]
    date_hierarchy = "updated_at"
    fields = ["id", "agent", "version", "created_at", "updated_at", "pretty_blob"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Session | None = None) -> bool:
        return False

    @admin.display(description=_("session blob"))
    def pretty_blob(self, obj: Session) -> str:
        try:
            text = json.dumps(obj.session, indent=2, ensure_ascii=False)
        except InvalidSessionError as error:
            return format_html('<p class="errornote">{}</p><pre>{}</pre>', error, obj.blob)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)
