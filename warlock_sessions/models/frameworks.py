"""Other frameworks' state kept here: LangGraph's threads, checkpoints, channel values,
pending writes and long-term memory, and the Google ADK's app and user state."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from ..encryption import graph_place
from ..engine.session import MAX_SESSION_ID_LENGTH
from . import Owned, Tenanted, visitor_index
from .conversations import JSONTextField

#: The longest namespace, channel, task id and key LangGraph may give the graph tables.
MAX_GRAPH_NAME_LENGTH = 255


class GraphThread(Owned):
    """The header of a LangGraph thread (``frameworks.langgraph.WarlockSaver``): who owns it
    (as ``Conversation``), its tenant, and a version that grows with every checkpoint. Its
    checkpoints, channel values and pending writes are rows of their own."""

    id = models.CharField(_("thread id"), max_length=MAX_SESSION_ID_LENGTH, primary_key=True)
    version = models.PositiveIntegerField(_("version"), default=1)
    created_at = models.DateTimeField(_("created"))
    # Not indexed: every checkpoint moves it, and an update that touches no index is the
    # cheapest PostgreSQL has (HOT); only warlock_prune reads it, a scan a night.
    updated_at = models.DateTimeField(_("updated"))

    class Meta:
        db_table = "warlock_graph_threads"
        verbose_name = _("graph thread")
        verbose_name_plural = _("graph threads")
        indexes = [visitor_index("warlock_graph_visitor")]

    def __str__(self) -> str:
        return self.id


class GraphCheckpoint(Tenanted):
    """One checkpoint of a thread in one namespace: the checkpoint without its channel values
    (``GraphBlob`` keeps each value once per version), serialised by the saver's serde."""

    # Its key leads with the thread: no index of its own.
    pk = models.CompositePrimaryKey("thread", "namespace", "checkpoint_id")
    thread = models.ForeignKey(
        GraphThread, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    namespace = models.CharField(_("namespace"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    checkpoint_id = models.CharField(_("checkpoint id"), max_length=MAX_GRAPH_NAME_LENGTH)
    parent_id = models.CharField(_("parent"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    run_id = models.CharField(_("run id"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    kind = models.CharField(_("serialised as"), max_length=64)
    checkpoint = models.BinaryField(_("checkpoint"))
    #: Its channels' versions, in clear as the checkpoint holds them: which ``GraphBlob``
    #: rows it reads (a prune keeps those, deletes the others).
    channel_versions = models.JSONField(_("channel versions"), default=dict)
    metadata = models.JSONField(_("metadata"), default=dict)

    class Meta:
        db_table = "warlock_graph_checkpoints"
        verbose_name = _("graph checkpoint")
        verbose_name_plural = _("graph checkpoints")
        indexes = [
            models.Index(
                fields=["run_id"], name="warlock_graph_run", condition=~models.Q(run_id="")
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.namespace}#{self.checkpoint_id}"

    @property
    def value_place(self) -> tuple[str, ...]:
        """Where its sealed checkpoint is bound to."""
        return graph_place("checkpoint", self.thread_id, self.namespace, self.checkpoint_id)


class GraphBlob(Tenanted):
    """A channel's value at one version, in one thread's namespace: written once, read by
    every checkpoint that holds that version."""

    pk = models.CompositePrimaryKey("thread", "namespace", "channel", "version")
    thread = models.ForeignKey(
        GraphThread, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    namespace = models.CharField(_("namespace"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    channel = models.CharField(_("channel"), max_length=MAX_GRAPH_NAME_LENGTH)
    version = models.CharField(_("version"), max_length=MAX_GRAPH_NAME_LENGTH)
    kind = models.CharField(_("serialised as"), max_length=64)
    value = models.BinaryField(_("value"))

    class Meta:
        db_table = "warlock_graph_blobs"
        verbose_name = _("graph channel value")
        verbose_name_plural = _("graph channel values")

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.namespace} {self.channel}@{self.version}"

    @property
    def value_place(self) -> tuple[str, ...]:
        """Where its sealed value is bound to."""
        return graph_place("blob", self.thread_id, self.namespace, self.channel, self.version)


class GraphWrite(Tenanted):
    """A pending write of a task on a checkpoint: what a node wrote before the next
    checkpoint (kept so a crash between steps resumes without running the node again)."""

    pk = models.CompositePrimaryKey("thread", "namespace", "checkpoint_id", "task_id", "idx")
    # Without a constraint: a task's writes may come before its thread's first checkpoint.
    thread = models.ForeignKey(
        GraphThread, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    namespace = models.CharField(_("namespace"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    checkpoint_id = models.CharField(_("checkpoint id"), max_length=MAX_GRAPH_NAME_LENGTH)
    task_id = models.CharField(_("task id"), max_length=MAX_GRAPH_NAME_LENGTH)
    task_path = models.TextField(_("task path"), blank=True)
    idx = models.IntegerField(_("index"))
    channel = models.CharField(_("channel"), max_length=MAX_GRAPH_NAME_LENGTH)
    kind = models.CharField(_("serialised as"), max_length=64)
    value = models.BinaryField(_("value"))

    class Meta:
        db_table = "warlock_graph_writes"
        verbose_name = _("graph pending write")
        verbose_name_plural = _("graph pending writes")

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.namespace}#{self.checkpoint_id} {self.channel}"

    @property
    def value_place(self) -> tuple[str, ...]:
        """Where its sealed value is bound to."""
        return graph_place(
            "write",
            self.thread_id,
            self.namespace,
            self.checkpoint_id,
            self.task_id,
            str(self.idx),
        )


class MemoryItem(Owned):
    """One item of LangGraph's long-term memory (``frameworks.langgraph.WarlockStore``): a
    JSON value under a namespace (its labels joined by dots, which labels cannot hold) and a
    key; ``vectors``: its indexed fields' embeddings (``IndexConfig``), unit length, as one
    float32 matrix; ``expires_at`` from its ``ttl`` (minutes), pushed on by reads when the
    store refreshes on read."""

    namespace = models.CharField(_("namespace"), max_length=MAX_GRAPH_NAME_LENGTH * 4)
    key = models.CharField(_("key"), max_length=MAX_GRAPH_NAME_LENGTH)
    value = JSONTextField(_("value"))
    vectors = models.BinaryField(_("vectors"), null=True, blank=True)
    embedder = models.CharField(_("embedder"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("created"))
    updated_at = models.DateTimeField(_("updated"))
    ttl_minutes = models.FloatField(_("time to live (minutes)"), null=True, blank=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True, db_index=True)

    class Meta:
        db_table = "warlock_memory_items"
        verbose_name = _("memory item")
        verbose_name_plural = _("memory items")
        constraints = [
            # Per tenant: one tenant's keys neither block nor reveal another's.
            models.UniqueConstraint(
                fields=["tenant", "namespace", "key"], name="warlock_memory_item"
            )
        ]
        indexes = [visitor_index("warlock_memory_visitor")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.key}"


class AgentState(Tenanted):
    """Google ADK's state kept beside a session's events (``frameworks.adk``): an app's
    (``app:`` keys), a user's in an app (``user:`` keys), or a session's own, whose
    conversation (``Conversation``, the same id) holds its events. ``updated_at``: a
    session's last event."""

    class Scope(models.TextChoices):
        APP = "app", _("app")
        USER = "user", _("user")
        SESSION = "session", _("session")

    scope = models.CharField(_("scope"), max_length=8, choices=Scope.choices)
    app_name = models.CharField(_("app"), max_length=MAX_GRAPH_NAME_LENGTH)
    user_id = models.CharField(_("user id"), max_length=MAX_GRAPH_NAME_LENGTH, blank=True)
    session_id = models.CharField(_("session id"), max_length=MAX_SESSION_ID_LENGTH, blank=True)
    state = models.JSONField(_("state"), default=dict)
    updated_at = models.DateTimeField(_("updated"))

    class Meta:
        db_table = "warlock_agent_state"
        verbose_name = _("agent state")
        verbose_name_plural = _("agent states")
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "scope", "app_name", "user_id", "session_id"],
                name="warlock_agent_state_unique",
            )
        ]

    def __str__(self) -> str:
        return "/".join(part for part in (self.app_name, self.user_id, self.session_id) if part)
