"""The stored session row: the v4 blob, its version, and columns the admin and API filter on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from .engine.session import Session as SessionBlob
from .engine.session import decode_session
from .stores.base import MAX_SESSION_ID_LENGTH


def token_list(values: Iterable[str]) -> str:
    """Distinct values as one space-delimited text, padded so ``contains(" x ")`` matches whole
    tokens only (portable across SQLite and PostgreSQL, unlike JSON containment lookups)."""
    distinct = sorted(set(values))
    return f" {' '.join(distinct)} " if distinct else ""


def run_summary(blob: SessionBlob) -> dict[str, Any]:
    """The filterable columns derived from a blob; the store writes them with every save."""
    runs = blob["runs"]
    return {
        "run_flows": token_list(run["flowId"] for run in runs),
        "run_statuses": token_list(run["status"] for run in runs),
    }


class SessionQuerySet(models.QuerySet["Session"]):
    def with_flow(self, flow_id: str) -> SessionQuerySet:
        """Sessions with a live run of ``flow_id``."""
        return self.filter(run_flows__contains=f" {flow_id} ")

    def with_run_status(self, status: str) -> SessionQuerySet:
        """Sessions with at least one live run in ``status`` (running/asking/waiting/suspended)."""
        return self.filter(run_statuses__contains=f" {status} ")


class Session(models.Model):
    """One conversation's state. Written only through a Store, which checks ``version``.

    ``blob`` is the session as JSON *text*, not a JSON column: PostgreSQL would parse it into
    ``jsonb`` on every write and render it back on every read, and the store never queries
    inside it (``bench/store.py`` measures the difference). ``run_flows`` and
    ``run_statuses`` repeat what the blob's runs say, for filtering.
    """

    id = models.CharField(_("id"), max_length=MAX_SESSION_ID_LENGTH, primary_key=True)
    version = models.PositiveIntegerField(_("version"))
    agent = models.CharField(_("agent"), max_length=100, blank=True, default="")
    blob = models.TextField(_("session blob"))
    run_flows = models.TextField(_("flows of live runs"), blank=True, default="")
    run_statuses = models.CharField(
        _("statuses of live runs"), max_length=64, blank=True, default=""
    )
    created_at = models.DateTimeField(_("created"))
    # Deliberately not indexed: a save then changes no indexed column, so PostgreSQL can
    # update the row in place (a HOT update) instead of writing to every index each turn.
    updated_at = models.DateTimeField(_("updated"))

    objects = SessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        ordering = ["-updated_at"]
        # Meta.indexes rather than db_index: no extra varchar_pattern_ops index on PostgreSQL.
        indexes = [models.Index(fields=["agent"], name="warlock_session_agent")]

    def __str__(self) -> str:
        return f"{self.id} v{self.version}"

    @property
    def session(self) -> SessionBlob:
        """The checked v4 blob (raises ``InvalidSessionError`` when the row is unreadable)."""
        return decode_session(self.blob, self.id, self.version)
