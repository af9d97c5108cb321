"""The app's tables. Here: the stored session row (the v4 blob, its version, and the columns the
admin and API filter on), its log, outbox, wakes, applied inputs and owner, snapshots,
checkpoints, locks, and the tenant and owner columns every table shares. Conversations and
the semantic cache's entries are in ``models.conversations``, other frameworks' state in
``models.frameworks``; every model is importable from here."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, models, router, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..encryption import (
    event_place,
    open_json,
    open_text,
    outbox_place,
    sealing,
    session_place,
)
from ..engine.handover import handover_of
from ..engine.isotime import datetime_from_iso
from ..engine.session import MAX_SESSION_ID_LENGTH, decode_session
from ..engine.session import Session as SessionBlob
from ..engine.text import fold
from ..errors import TenantUnresolvedError
from ..tenancy import MAX_TENANT_LENGTH, current_scope, scoped_rows, tenant_of_new_row, tenant_scope
from ..tenancy import current as current_tenant
from ..tenancy import enabled as tenants_enabled
from .quotas import (
    OWNER_CHANGES,
    OwnerTally,
    count_more,
    delete_counted,
    key_of,
    refuse_uncounted_conflicts,
    save_counted,
    update_counted,
    written_on,
)


def token_list(values: Iterable[str]) -> str:
    """Distinct values as one space-delimited text, padded so ``contains(" x ")`` matches whole
    tokens only (portable across SQLite and PostgreSQL, unlike JSON containment lookups)."""
    distinct = sorted(set(values))
    return f" {' '.join(distinct)} " if distinct else ""


#: How much of a session's data its search column keeps.
MAX_SEARCH_TEXT = 1000


def run_summary(blob: SessionBlob) -> dict[str, Any]:
    """The filterable columns derived from a blob; the store writes them with every save."""
    runs = blob["runs"]
    handover = handover_of(blob) or {}
    return {
        "run_flows": token_list(run["flowId"] for run in runs),
        "run_statuses": token_list(run["status"] for run in runs),
        # Sealed sessions keep no plain copy of their data to search by.
        "search_text": "" if sealing() else search_text(blob["data"]),
        "handover": handover.get("status", ""),
        "handover_since": _moment(handover.get("since")),
    }


def _moment(iso: Any) -> datetime | None:
    """A blob's ISO text as a datetime; ``None`` for anything else (a blob written by hand)."""
    try:
        return datetime_from_iso(iso) if isinstance(iso, str) else None
    except ValueError:
        return None


def search_text(data: Any) -> str:
    """What a person may look a session up by: the text and numbers in its data (a name, an
    e-mail), folded (``fold``), at most ``MAX_SEARCH_TEXT`` characters."""
    found: list[str] = []
    length = 0
    pending = [data]
    while pending and length < MAX_SEARCH_TEXT:
        value = pending.pop()
        if isinstance(value, str):
            if value:
                found.append(fold(value))
                length += len(value) + 1
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int | float):
            found.append(str(value))
            length += len(found[-1]) + 1
        elif isinstance(value, dict):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            pending.extend(reversed(value))
    return " ".join(found)[:MAX_SEARCH_TEXT]


_Row = TypeVar("_Row", bound=models.Model)


class TenantQuerySet(models.QuerySet[_Row]):
    """Rows of a table that carries their tenant (``tenancy``): those it makes in bulk are
    the current scope's tenant's."""

    def bulk_create(self, objs: Iterable[_Row], *args: Any, **kwargs: Any) -> list[_Row]:
        rows = list(objs)
        for row in rows:
            if row._state.adding and not getattr(row, "tenant", ""):
                row.tenant = tenant_of_new_row()  # type: ignore[attr-defined]
        return super().bulk_create(rows, *args, **kwargs)


class TenantManager(models.Manager[_Row]):
    """The manager of a table whose rows carry their tenant: it reads only the current
    scope's rows."""

    def get_queryset(self) -> models.QuerySet[_Row]:
        return scoped_rows(super().get_queryset())  # type: ignore[no-any-return]


class Tenanted(models.Model):
    """A row of a tenant (``TENANT_RESOLVER``): made with the current scope's tenant, read
    only in its scope (or outside every scope). ``""``: made while tenants were off, or
    outside every scope."""

    tenant = models.CharField(
        _("tenant"),
        max_length=MAX_TENANT_LENGTH,
        blank=True,
        default="",
        db_default="",
        editable=False,
    )

    objects = TenantManager.from_queryset(TenantQuerySet)()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._state.adding and not self.tenant:
            self.tenant = tenant_of_new_row()
        super().save(*args, **kwargs)

    def _do_update(self, base_qs: Any, *args: Any, **kwargs: Any) -> Any:
        # Saving an instance whose key another tenant's row has: that row is not this
        # scope's to overwrite (the insert that follows then fails on the key). With no
        # tenant at all, nothing is saved: said as such, not as the insert's failure.
        current_tenant()
        return super()._do_update(scoped_rows(base_qs), *args, **kwargs)


def tenant_of_parent(model: type[models.Model], using: str, **parent: Any) -> str:
    """The tenant of rows added under the ``model`` rows ``parent`` finds (a session's
    records, a conversation's messages, an orchestrator session's earlier turns): theirs,
    whoever's scope adds them (an operator's turn on a tenant's session keeps it that
    tenant's). Inside a tenant's scope that is the scope's (only its rows are read there);
    otherwise the parent says, or, with none (a new one, a store outside the database), the
    scope."""
    scope = current_scope()
    if isinstance(scope, str):
        return scope
    if scope is None and not tenants_enabled():
        return ""
    if scope is not None:  # a request with no tenant adds nothing under anyone's rows
        raise TenantUnresolvedError()
    found = model._base_manager.using(using).filter(**parent).values_list("tenant", flat=True)
    return found.first() or tenant_of_new_row()


class SessionQuerySet(TenantQuerySet["Session"]):
    def with_flow(self, flow_id: str) -> SessionQuerySet:
        """Sessions with a live run of ``flow_id``."""
        return self.filter(run_flows__contains=f" {flow_id} ")

    def with_run_status(self, status: str) -> SessionQuerySet:
        """Sessions with at least one live run in ``status`` (running/asking/waiting/suspended)."""
        return self.filter(run_statuses__contains=f" {status} ")

    def saying(self, text: str) -> SessionQuerySet:
        """Sessions whose data holds the words of ``text``, in any case: a name, an e-mail.
        On PostgreSQL a full-text match on the search column's GIN index (whole words: at a
        million sessions a substring's trigrams are shared by too many rows); elsewhere a
        substring match."""
        if connections[self.db].vendor != "postgresql":
            return self.filter(search_text__contains=fold(text))
        # Imported here: django.contrib.postgres needs psycopg, which the core may lack.
        from django.contrib.postgres.search import SearchQuery, SearchVector

        words = SearchVector("search_text", config="simple")  # the index of migration 0012
        query = SearchQuery(fold(text), config="simple")
        return self.alias(search_words=words).filter(search_words=query)


class Session(Tenanted):
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
    search_text = models.TextField(_("searchable data"), blank=True, default="", db_default="")
    #: ``waiting`` or ``taken`` while people have the session (``engine.handover``), since
    #: when: the admin's inbox of sessions waiting for a person.
    handover = models.CharField(
        _("with people"),
        max_length=16,
        blank=True,
        default="",
        db_default="",
        choices=[("waiting", _("waiting for a person")), ("taken", _("taken by a person"))],
    )
    handover_since = models.DateTimeField(_("with people since"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"))
    # Indexed (with id, the list's order): at a million sessions the list, its "updated
    # after" filter and the admin would otherwise sort the whole table. It costs the saves
    # their in-place (HOT) updates; bench/store.py shows no difference it can measure
    # (docs/benchmarks.md, "bench/scale.py").
    updated_at = models.DateTimeField(_("updated"))

    objects = TenantManager.from_queryset(SessionQuerySet)()  # type: ignore[misc,assignment]

    class Meta:
        verbose_name = _("session")
        verbose_name_plural = _("sessions")
        ordering = ["-updated_at"]
        # Taking, answering and handing back chats handed to people (docs/handover.md): a
        # permission of its own, apart from writing raw blobs (change_session).
        permissions = [("handle_chats", _("Can take, answer and hand back chats"))]
        # Meta.indexes rather than db_index: no extra varchar_pattern_ops index on PostgreSQL.
        indexes = [
            models.Index(fields=["agent"], name="warlock_session_agent"),
            models.Index(fields=["-updated_at", "id"], name="warlock_session_recent"),
            # A tenant's list, in its order; only rows of tenants (none while they are off).
            models.Index(
                fields=["tenant", "-updated_at", "id"],
                name="warlock_session_tenant",
                condition=~models.Q(tenant=""),
            ),
            # Only the few sessions with people: the inbox reads them oldest first.
            models.Index(
                fields=["handover_since"],
                name="warlock_session_handover",
                condition=~models.Q(handover=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} v{self.version}"

    @property
    def session(self) -> SessionBlob:
        """The checked v4 blob (raises ``InvalidSessionError`` when the row is unreadable)."""
        return decode_session(
            open_text(self.blob, *session_place(self.id, self.version)), self.id, self.version
        )


class WaitingSessionManager(TenantManager.from_queryset(TenantQuerySet)):  # type: ignore[misc]
    def get_queryset(self) -> models.QuerySet[WaitingSession]:
        rows: models.QuerySet[WaitingSession] = super().get_queryset()
        return rows.exclude(handover="")


class WaitingSession(Session):
    """A session people have (``engine.handover``): the admin's inbox, oldest first."""

    objects = WaitingSessionManager()  # type: ignore[misc]

    class Meta:
        proxy = True
        verbose_name = _("chat with people")
        verbose_name_plural = _("chats with people")
        ordering = ["handover_since", "id"]


#: How many buckets the worker's due work (wakes, the outbox) is spread over: the column a
#: distributed database spreads those rows by, so that a claim of one bucket's due rows reads
#: one shard (docs/scaling.md). Fixed: a row's bucket is stored with it.
WORK_BUCKETS = 32


def bucket_of(session_id: str) -> int:
    """The bucket of a session's due work: the first byte of its id's MD5, modulo
    ``WORK_BUCKETS`` (uniform, whatever the ids look like)."""
    return hashlib.md5(session_id.encode(), usedforsecurity=False).digest()[0] % WORK_BUCKETS


def bucket_sql(session_id: str) -> str:
    """:func:`bucket_of` in PostgreSQL, of the SQL expression ``session_id``: for rows written
    by SQL (a seed, a backfill). Held to the same answers (tests/test_distribution_keys.py)."""
    return f"mod(get_byte(decode(md5({session_id}), 'hex'), 0), {WORK_BUCKETS})"


def work_of(session_id: str) -> dict[str, Any]:
    """The filter of one session's wakes or outbox rows, with their bucket: read on its shard."""
    return {"bucket": bucket_of(session_id), "session_id": session_id}


def work_of_sessions(session_ids: Iterable[str]) -> dict[str, Any]:
    """:func:`work_of` for several sessions."""
    ids = list(session_ids)
    return {"bucket__in": sorted({bucket_of(id) for id in ids}), "session_id__in": ids}


class LeasedWorkQuerySet(TenantQuerySet[_Row]):
    """Due work: rows made in bulk get their session's bucket."""

    def bulk_create(self, objs: Iterable[_Row], *args: Any, **kwargs: Any) -> list[_Row]:
        rows = list(objs)
        for row in rows:
            if getattr(row, "bucket", None) is None:
                row.bucket = bucket_of(row.session_id)  # type: ignore[attr-defined]
        return super().bulk_create(rows, *args, **kwargs)


class LeasedWork(Tenanted):
    """A row a worker claims: keyed within its session, leased while worked on, and retried
    with a count of attempts and the last error. Spread by its session's bucket."""

    key = models.CharField(_("key"), max_length=512)
    session_id = models.CharField(_("session id"), max_length=MAX_SESSION_ID_LENGTH)
    bucket = models.PositiveSmallIntegerField(_("bucket"), editable=False)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    last_error = models.TextField(_("last error"), blank=True, default="")
    lease_until = models.DateTimeField(_("leased until"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    objects = TenantManager.from_queryset(LeasedWorkQuerySet)()  # type: ignore[misc,assignment]

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.key

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.bucket is None:
            self.bucket = bucket_of(self.session_id)
        super().save(*args, **kwargs)


class OutboundMessage(LeasedWork):
    """A message a committed turn produced: the transactional outbox.

    Written in the same transaction as the session save (with a database store), unique on the
    session and the engine's message key (keys are unique within a session), so a replayed turn
    can never queue a message twice. ``deliver_after`` honours the message's ``afterMs``.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        DELIVERED = "delivered", _("delivered")
        FAILED = "failed", _("failed")

    kind = models.CharField(_("kind"), max_length=16)
    text = models.TextField(_("text"))
    after_ms = models.PositiveIntegerField(_("delay (ms)"), default=0)
    payload = models.JSONField(_("message"), default=dict)
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.PENDING
    )
    deliver_after = models.DateTimeField(_("deliver after"))
    delivered_at = models.DateTimeField(_("delivered"), null=True, blank=True)

    class Meta:
        verbose_name = _("outbound message")
        verbose_name_plural = _("outbound messages")
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["status", "deliver_after"], name="warlock_outbox_due")]
        constraints = [
            # With the bucket, the column the rows are spread by (docs/scaling.md).
            models.UniqueConstraint(
                fields=["session_id", "key", "bucket"], name="warlock_outbox_key_unique"
            )
        ]

    @property
    def opened_text(self) -> str:
        """The text as queued, opened if it was sealed (``ENCRYPTION_KEYS``)."""
        return open_text(self.text, *outbox_place(self.session_id, self.key))

    @property
    def opened_payload(self) -> Any:
        """The message as queued, opened if it was sealed."""
        return open_json(self.payload, *outbox_place(self.session_id, self.key, "payload"))


class SessionEvent(Tenanted):
    """The persisted event log of a session, in ``seq`` order: what a chat UI replays after a
    dropped socket (the channel layer is lossy; this log is the source of truth)."""

    session_id = models.CharField(_("session id"), max_length=MAX_SESSION_ID_LENGTH)
    seq = models.PositiveBigIntegerField(_("sequence"))
    type = models.CharField(_("type"), max_length=32)
    payload = models.JSONField(_("payload"), default=dict)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        verbose_name = _("session event")
        verbose_name_plural = _("session events")
        ordering = ["session_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session_id", "seq"], name="warlock_event_seq_unique")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.type}"

    @property
    def opened_payload(self) -> Any:
        """The payload as logged, opened if it was sealed (``ENCRYPTION_KEYS``)."""
        return open_json(self.payload, *event_place(self.session_id, self.seq))


class Wake(LeasedWork):
    """A scheduled wake: at ``due_at`` the worker fires ``turn(wake=key)`` on the session.

    Unique on the session and the engine's wake key, so rescheduling the same key moves it
    rather than adding a second one. Workers claim due wakes with ``SELECT … FOR UPDATE SKIP
    LOCKED`` where the database has it, else by compare-and-set on ``lease_until``.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        FIRED = "fired", _("fired")
        FAILED = "failed", _("failed")

    agent = models.CharField(_("agent"), max_length=100, blank=True, default="")
    due_at = models.DateTimeField(_("due"))
    status = models.CharField(
        _("status"), max_length=16, choices=Status.choices, default=Status.PENDING
    )
    fired_at = models.DateTimeField(_("fired"), null=True, blank=True)

    class Meta:
        verbose_name = _("wake")
        verbose_name_plural = _("wakes")
        ordering = ["due_at", "id"]
        indexes = [models.Index(fields=["status", "due_at"], name="warlock_wake_due")]
        constraints = [
            models.UniqueConstraint(
                fields=["session_id", "key", "bucket"], name="warlock_wake_key_unique"
            )
        ]


class AppliedInput(Tenanted):
    """An input a committed turn applied, by a digest of its kind and id (a message's ``id``, an
    event's or a start's ``key``): written with the turn's save, unique per session, so the
    same input sent again is refused however late it comes (the blob remembers only the latest
    few ids)."""

    session_id = models.CharField(_("session id"), max_length=MAX_SESSION_ID_LENGTH)
    input_key = models.CharField(_("input digest"), max_length=64)
    created_at = models.DateTimeField(_("applied"), default=timezone.now)

    class Meta:
        verbose_name = _("applied input")
        verbose_name_plural = _("applied inputs")
        constraints = [
            models.UniqueConstraint(
                fields=["session_id", "input_key"], name="warlock_applied_input_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.input_key}"


def visitor_index(name: str) -> models.Index:
    """An owned table's index of its anonymous visitors' rows, counted against their quota
    and found by an erase (users have their foreign key's index)."""
    return models.Index(fields=["anonymous_key"], condition=~models.Q(anonymous_key=""), name=name)


class OwnedQuerySet(TenantQuerySet[_Row]):
    """Rows that belong to someone: those an owner's quota counts are counted on their
    owner's tally as they are made, given to another owner and deleted (``models.quotas``),
    in the same transaction."""

    def bulk_create(self, objs: Iterable[_Row], *args: Any, **kwargs: Any) -> list[_Row]:
        if getattr(self.model, "counted_as", None) is None:
            return super().bulk_create(objs, *args, **kwargs)
        refuse_uncounted_conflicts(self.model, kwargs)
        using = written_on(self)
        with transaction.atomic(using=using):
            rows = super().bulk_create(objs, *args, **kwargs)
            keys = Counter(key_of(row) for row in rows)  # type: ignore[arg-type]
            for key in sorted(key for key in keys if key):  # one order: no deadlock
                count_more(key, using, keys[key])
            return rows

    def bulk_update(self, objs: Iterable[_Row], fields: Any, *args: Any, **kwargs: Any) -> int:
        if getattr(self.model, "counted_as", None) is not None and OWNER_CHANGES & set(fields):
            raise TypeError(
                f"{self.model.__name__} rows are counted against their owner's quota: give "
                "them another owner with update() or save(), which move their counts"
            )
        return super().bulk_update(objs, fields, *args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        if getattr(self.model, "counted_as", None) is None or not OWNER_CHANGES & set(kwargs):
            return super().update(**kwargs)
        return update_counted(self, kwargs, models.QuerySet.update)

    def delete(self) -> tuple[int, dict[str, int]]:
        if getattr(self.model, "counted_as", None) is None:
            return super().delete()
        return delete_counted(self, models.QuerySet.delete)  # type: ignore[no-any-return]


class Owned(Tenanted):
    """Who something belongs to, for the access policy (``permissions.is_owner``): a user, or
    an anonymous visitor by the key their Django session keeps."""

    #: What an owner's quota counts this model's rows as (``models.quotas``); ``None``: no
    #: quota counts them.
    counted_as: str | None = None

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("user"),
    )
    anonymous_key = models.CharField(_("anonymous visitor"), max_length=64, blank=True, default="")

    objects = TenantManager.from_queryset(OwnedQuerySet)()  # type: ignore[misc,assignment]

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.counted_as is None:
            return super().save(*args, **kwargs)
        save_counted(self, lambda: super(Owned, self).save(*args, **kwargs), kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self.counted_as is None:
            return super().delete(*args, **kwargs)
        if self.pk is None:
            return super().delete(*args, **kwargs)  # Django says why it cannot
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        rows: OwnedQuerySet[Any] = OwnedQuerySet(type(self), using=using).filter(pk=self.pk)
        if isinstance(self, SessionOwner):  # read on the session's shard alone
            rows = rows.filter(session_id=self.session_id)
        deleted = delete_counted(rows, models.QuerySet.delete)
        self.pk = None
        return deleted  # type: ignore[no-any-return]


class SessionOwner(Owned):
    """Who a session belongs to, for the API's access policy: the user who started it, or for an
    anonymous visitor their Django session. Kept apart from the store, so any store has owners."""

    counted_as = "sessions"

    session_id = models.CharField(_("session id"), max_length=MAX_SESSION_ID_LENGTH, unique=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        verbose_name = _("session owner")
        verbose_name_plural = _("session owners")
        indexes = [
            # A visitor's sessions, counted against their quota (users have their FK's index).
            visitor_index("warlock_owner_visitor")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} ({self.user_id or 'anonymous'})"

    @classmethod
    def of(cls, session_id: str) -> SessionOwner | None:
        """The owner row of ``session_id`` in the current scope (``None``: nobody owns it)."""
        return cls.objects.filter(session_id=session_id).first()


def forget_records(session_id: str, using: str | None = None) -> None:
    """Delete what is kept about a session besides its blob: event log, outbox, wakes, applied
    inputs and owner (``host.notify.forget_session`` also closes its sockets)."""
    forget_records_of([session_id], using)


def forget_records_of(session_ids: list[str], using: str | None = None) -> None:
    """``forget_records`` for many sessions at once."""
    for model in SESSION_RECORDS:
        manager = model._default_manager if using is None else model._default_manager.using(using)
        rows = {"session_id__in": session_ids}
        if issubclass(model, LeasedWork):
            rows = work_of_sessions(session_ids)
        manager.filter(**rows).delete()


#: What is kept about a session besides its row, keyed by ``session_id``.
SESSION_RECORDS: tuple[type[models.Model], ...] = (
    SessionEvent,
    OutboundMessage,
    Wake,
    AppliedInput,
    SessionOwner,
)


def tenant_kept_for(session_id: str, using: str | None = None) -> str:
    """The tenant of whatever ``session_id`` names (a conversation, a session, an
    orchestrator's session), for what an operator adds about it outside every scope (a run's
    snapshot, a cached answer): ``""`` when none of them is a tenant's."""
    for model, field in ((Conversation, "pk"), (Session, "pk"), (Checkpoint, "session_id")):
        rows = model._base_manager.db_manager(using).filter(**{field: session_id})
        found = rows.exclude(tenant="").values_list("tenant", flat=True).first()
        if found:
            return str(found)
    return ""


@contextmanager
def in_the_tenant_of(session_id: Any, using: str | None = None) -> Iterator[None]:
    """The operator's block (outside every tenant's scope, tenants on) run in the tenant of
    whatever ``session_id`` names (``tenant_kept_for``): what it keeps about a tenant's chat
    (a run's snapshot, a cached answer) is that tenant's. Any other block runs as it is."""
    tenant = ""
    if current_scope() is None and tenants_enabled() and isinstance(session_id, str):
        tenant = tenant_kept_for(session_id, using)
    with tenant_scope(tenant) if tenant else nullcontext():
        yield


# Defined on the bases above: imported last, so that every model is one of this module's.
from .conversations import (  # noqa: E402
    MAX_CACHE_NAMESPACE_LENGTH,
    MAX_CACHE_SCOPE_LENGTH,
    CacheEntry,
    CacheScope,
    Conversation,
    ConversationMessage,
    JSONTextField,
)
from .frameworks import (  # noqa: E402
    MAX_GRAPH_NAME_LENGTH,
    AgentState,
    GraphBlob,
    GraphCheckpoint,
    GraphThread,
    GraphWrite,
    MemoryItem,
)
from .runs import Checkpoint, SessionLockRow, Snapshot  # noqa: E402

__all__ = [
    "MAX_CACHE_NAMESPACE_LENGTH",
    "MAX_CACHE_SCOPE_LENGTH",
    "MAX_GRAPH_NAME_LENGTH",
    "AgentState",
    "CacheEntry",
    "CacheScope",
    "Checkpoint",
    "Conversation",
    "ConversationMessage",
    "GraphBlob",
    "GraphCheckpoint",
    "GraphThread",
    "GraphWrite",
    "JSONTextField",
    "MemoryItem",
    "OwnerTally",
    "SessionLockRow",
    "Snapshot",
]
