"""What the persistence design keeps besides sessions: workflow, supervisor and agent runs'
snapshots, orchestrators' checkpoints, and the locks table."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from . import Tenanted


class Snapshot(Tenanted):
    """One live snapshot of a workflow, supervisor or agent run, keyed by its ``runId``
    (``snapshots.DjangoSnapshotStore``). ``version`` grows with every save, so a resumed run
    can save conditionally and two processes resuming one run cannot both write."""

    key = models.CharField(_("key"), max_length=255, primary_key=True)
    payload = models.JSONField(_("snapshot"))
    version = models.PositiveIntegerField(_("version"), default=1)
    saved_at = models.DateTimeField(_("saved"), db_index=True)
    #: A resume asked for in the admin, which a worker does (``workflows.resumes``):
    #: ``{"status": "queued" | "resuming" | "failed", "by", "force", "askedAt", …}``; null
    #: when none is asked. The store's saves leave it alone.
    resume = models.JSONField(_("resume"), null=True, blank=True)

    class Meta:
        db_table = "warlock_snapshots"
        verbose_name = _("snapshot")
        verbose_name_plural = _("snapshots")
        ordering = ["-saved_at"]
        indexes = [
            models.Index(
                fields=["saved_at"],
                name="warlock_snapshot_resume",
                condition=models.Q(resume__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return self.key


class Checkpoint(Tenanted):
    """One turn of an orchestrator's session (``checkpoints.DjangoCheckpointStore``): rows are
    appended, never updated; the latest turn is the session's state."""

    orchestrator_name = models.CharField(_("orchestrator"), max_length=255)
    session_id = models.CharField(_("session id"), max_length=255)
    turn_index = models.PositiveIntegerField(_("turn"))
    state = models.JSONField(_("state"))
    last_route = models.JSONField(_("last route"), null=True, blank=True)  # text or a list
    signature = models.CharField(_("signature"), max_length=64)
    # None is "unversioned", which the empty string is not.
    version = models.CharField(_("version"), max_length=100, null=True, blank=True)  # noqa: DJ001
    summarized_through = models.IntegerField(_("summarized through"), null=True, blank=True)
    lock_acquired_at = models.DateTimeField(_("lock acquired"), null=True, blank=True)
    lock_expires_at = models.DateTimeField(_("lock expires"), null=True, blank=True)
    saved_at = models.DateTimeField(_("saved"), db_index=True)

    class Meta:
        db_table = "warlock_checkpoints"
        verbose_name = _("checkpoint")
        verbose_name_plural = _("checkpoints")
        constraints = [
            models.UniqueConstraint(
                fields=["orchestrator_name", "session_id", "turn_index"],
                name="warlock_checkpoint_turn_unique",
            )
        ]
        indexes = [
            models.Index(
                fields=["orchestrator_name", "session_id", "-turn_index"],
                name="warlock_checkpoint_latest",
            )
        ]

    def __str__(self) -> str:
        return f"{self.orchestrator_name}/{self.session_id}#{self.turn_index}"


class SessionLockRow(models.Model):
    """A held lock of ``locks.DatabaseLock``: its key, the holder's token and when the lease
    runs out (a holder that died is taken over after that)."""

    key = models.CharField(_("key"), max_length=255, primary_key=True)
    token = models.CharField(_("token"), max_length=64)
    expires_at = models.DateTimeField(_("expires"))

    class Meta:
        db_table = "warlock_session_locks"
        verbose_name = _("session lock")
        verbose_name_plural = _("session locks")

    def __str__(self) -> str:
        return self.key
