"""What every page of the admin shares: read-only model admins that refuse input PostgreSQL
cannot compare with, and JSON shown as it is stored."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from ..backends.replica import list_database
from ..engine.session import text_problem
from ..errors import EncryptionError

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

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        # Nothing on these pages can be edited (an admin that may "change" rows does so only
        # through its actions): a view, with no save buttons.
        context = {
            "title": _("View %s") % self.model._meta.verbose_name,
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
            **(extra_context or {}),
        }
        if row is not None:
            context.update(self.page_context(row))
        return super().change_view(request, object_id, form_url, extra_context=context)

    def page_context(self, row: Any) -> dict[str, Any]:
        """What a row's page shows besides its fields, for its template: nothing here."""
        return {}

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
        if request.method in ("GET", "HEAD"):  # a list to read; an action acts on the primary
            request.warlock_list_database = list_database(self.model)  # type: ignore[attr-defined]
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """On a list page, the rows as ``READ_REPLICA`` has them (a row's own page, and
        every action, read and write the primary)."""
        rows = super().get_queryset(request)
        alias = getattr(request, "warlock_list_database", None)
        return rows.using(alias) if alias else rows


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)


def opened_or_why(read: Any) -> str:
    """A sealed column's value, opened (text as it is, anything else as JSON); why not, if
    it does not open."""
    try:
        value = read()
    except EncryptionError as error:
        return str(error)
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


class OwnedChatAdmin(ReadOnlyAdmin):
    """A chat a person owns (a conversation, a LangGraph thread): read-only, deleted whole
    with what hangs off it, its owner named (never an anonymous visitor's key: it was their
    Django session key, a credential)."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    @admin.display(description=_("owner"))
    def owner(self, obj: Any) -> str:
        if obj.user_id:
            return str(obj.user)
        return str(_("anonymous visitor")) if obj.anonymous_key else "—"
