"""``WarlockSaver``: a LangGraph ``BaseCheckpointSaver`` on the graph tables (``GraphThread``,
``GraphCheckpoint``, ``GraphBlob``, ``GraphWrite``); deleting, copying and pruning threads are
``upkeep``'s. A thread is one header row (owner, tenant, a version that grows with each
checkpoint) and its checkpoints; a channel's value is kept once per version, so a step costs
what it changed. Values go through the saver's ``serde`` (``JsonPlusSerializer`` unless
given), then are sealed with ``ENCRYPTION_KEYS`` (bound to their thread, namespace and
checkpoint); messages have their content redacted with ``REDACT``. Metadata stays in clear,
as ``list(filter=...)`` reads it in the database. Every method has its async twin."""

from __future__ import annotations

import builtins
import json
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, router, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from ... import tenancy
from ...encryption import graph_place, open_typed, seal_typed
from ...errors import InvalidInputError, OfAnotherTenantError, TenantUnresolvedError
from ...models import (
    MAX_GRAPH_NAME_LENGTH,
    GraphBlob,
    GraphCheckpoint,
    GraphThread,
    GraphWrite,
    tenant_of_parent,
)
from ...redaction import redact_value, redactor
from ...tenancy import EVERY_TENANT, tenant_scope
from ..names import checked_name as _name
from ..owners import owner_of
from . import postgres
from .upkeep import ThreadUpkeep

try:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_serializable_checkpoint_metadata,
        writes_sort_key,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "warlock_sessions.frameworks.langgraph needs LangGraph's checkpoint package: "
        "pip install 'warlock-sessions[langgraph]'"
    ) from error

#: Checkpoints read at a time by ``list``.
PAGE = 100
#: Threads whose scope a saver remembers at most (``_scope_of``): past that it forgets all.
REMEMBERED_THREADS = 10_000

# The saver's ``list`` method hides the builtin in its class's annotations.
Rows = list[GraphCheckpoint]
Tuples = list[CheckpointTuple]


def thread_of(config: RunnableConfig) -> tuple[str, str]:
    """The thread id and namespace a config names, checked as the tables keep them."""
    configurable = config.get("configurable") or {}
    if configurable.get("thread_id") is None:
        raise InvalidInputError("configurable.thread_id", "a checkpointer needs a thread id")
    return (
        _name(configurable["thread_id"], "configurable.thread_id"),
        _name(configurable.get("checkpoint_ns") or "", "configurable.checkpoint_ns", empty=True),
    )


def _address(thread_id: str, namespace: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": namespace,
            "checkpoint_id": checkpoint_id,
        }
    }


#: The roles of LangChain's message-likes: ``("user", "hi")``, ``{"role": "user", ...}``.
MESSAGE_ROLES = frozenset({"user", "human", "assistant", "ai", "system", "tool", "developer"})


def _redacted(value: Any) -> Any:
    """``value`` with its messages' content redacted (``REDACT``): LangChain's messages and
    the message-likes LangGraph takes for them (``("user", text)``, ``{"role": ..., "content":
    ...}``), at any depth; what people said, as the app redacts its own conversations' lines.
    Other state is the graph's own and kept as given."""
    if redactor() is None:
        return value
    if isinstance(value, BaseMessage):
        return value.model_copy(update={"content": redact_value(value.content)})
    if isinstance(value, tuple) and len(value) == 2 and value[0] in MESSAGE_ROLES:
        return (value[0], redact_value(value[1]))
    if isinstance(value, dict):
        if (value.get("role") in MESSAGE_ROLES or value.get("type") in MESSAGE_ROLES) and (
            "content" in value
        ):
            return {**value, "content": redact_value(value["content"])}
        return {key: _redacted(item) for key, item in value.items()}
    if type(value) in (list, tuple):  # a named tuple is the graph's own
        return type(value)(_redacted(item) for item in value)
    return value


class WarlockSaver(ThreadUpkeep, BaseCheckpointSaver[str]):
    """LangGraph's checkpointer on this app's tables (see the module doc).

    ``owner``: whose threads it makes, as ``WarlockSession``'s (a user, a request, or
    ``None``); ``using``: the database alias; ``serde``: LangGraph's serializer protocol.
    """

    def __init__(
        self,
        *,
        owner: Any = None,
        using: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.owner = owner_of(owner) or {}
        self.using: str = using or router.db_for_write(GraphCheckpoint) or "default"
        #: The scope each thread was last read or written in by this saver (``_scope_of``).
        self._scopes: dict[str, str | None] = {}

    # -- reading -------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, namespace = thread_of(config)
        self._remember(thread_id, tenancy.current())
        if postgres.on_postgresql(self.using):
            return self._get_tuple_in_one(config, thread_id, namespace)
        rows = self._rows(GraphCheckpoint).filter(thread_id=thread_id, namespace=namespace)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            rows = rows.filter(checkpoint_id=checkpoint_id)
        row = rows.order_by("-checkpoint_id").first()
        if row is None:
            return None
        found = self._tuples([row])[0]
        return found._replace(config=config) if checkpoint_id else found

    def _get_tuple_in_one(
        self, config: RunnableConfig, thread_id: str, namespace: str
    ) -> CheckpointTuple | None:
        checkpoint_id = get_checkpoint_id(config)
        found = self._read_in_one(thread_id, namespace, checkpoint_id=checkpoint_id, limit=1)
        if not found:
            return None
        return found[0]._replace(config=config) if checkpoint_id else found[0]

    def _read_in_one(
        self,
        thread_id: str,
        namespace: str,
        *,
        limit: int,
        checkpoint_id: str | None = None,
        before: str | None = None,
        filter: dict[str, Any] | None = None,
    ) -> Tuples:
        """Checkpoints of one thread's namespace, newest first, whole, in one statement."""
        scope = tenancy.current()
        filters = list((filter or {}).items())
        statement = postgres.checkpoints_statement(
            bool(checkpoint_id), scope is not None, before is not None, len(filters)
        )
        rows = postgres.run_all(
            self.using,
            statement,
            {
                "thread": thread_id,
                "namespace": namespace,
                "checkpoint_id": checkpoint_id,
                "scope": scope,
                "before": before,
                "limit": limit,
                **postgres.numbered(
                    [(str(key), json.dumps(value)) for key, value in filters], "key", "value"
                ),
            },
        )
        return [self._tuple_of(thread_id, namespace, row) for row in rows]

    def _tuple_of(self, thread_id: str, namespace: str, row: tuple[Any, ...]) -> CheckpointTuple:
        checkpoint_id, parent_id, kind, body, metadata, values, writes = row
        where = (thread_id, namespace)
        checkpoint = self._opened(kind, body, "checkpoint", *where, checkpoint_id)
        checkpoint["channel_values"] = {
            channel.decode(): self._opened(
                kept.decode(), value, "blob", *where, channel.decode(), version.decode()
            )
            for channel, version, kept, value in values or []
        }
        pending = sorted(
            (
                (path.decode(), task.decode(), int(idx), channel.decode(), kept.decode(), value)
                for task, channel, kept, value, path, idx in writes or []
            ),
            key=lambda write: writes_sort_key(*write[:3]),
        )
        return CheckpointTuple(
            config=_address(*where, checkpoint_id),
            checkpoint=checkpoint,
            metadata=json.loads(metadata) if isinstance(metadata, str) else metadata,
            parent_config=_address(*where, parent_id) if parent_id else None,
            pending_writes=[
                (
                    task,
                    channel,
                    self._opened(kept, value, "write", *where, checkpoint_id, task, str(idx)),
                )
                for _, task, idx, channel, kept, value in pending
            ],
        )

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for page in self._pages(config, filter, before, limit):
            yield from page

    def _pages(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[Tuples]:
        """The checkpoints listed, newest first, a page at a time: a page goes on from where
        the last ended (a keyset), so reading far into a long thread costs what reading its
        start does."""
        if (
            config is not None
            and config["configurable"].get("checkpoint_ns") is not None
            and postgres.on_postgresql(self.using)
        ):
            yield from self._pages_in_one(config, filter, before, limit)
            return
        rows = self._listed(config, filter, before)
        # In one thread's namespace a checkpoint id is unique: the key's index orders it.
        one_namespace = (
            config is not None and config["configurable"].get("checkpoint_ns") is not None
        )
        rows = (
            rows.order_by("-checkpoint_id")
            if one_namespace
            else rows.order_by("-checkpoint_id", "-thread_id", "-namespace")
        )
        left = limit
        while left is None or left > 0:
            page = list(rows[: PAGE if left is None else min(PAGE, left)])
            if not page:
                return
            yield self._tuples(page)
            if left is not None:
                left -= len(page)
            last = page[-1]
            after = Q(checkpoint_id__lt=last.checkpoint_id)
            if not one_namespace:
                same = Q(checkpoint_id=last.checkpoint_id)
                after |= same & Q(thread_id__lt=last.thread_id)
                after |= same & Q(thread_id=last.thread_id, namespace__lt=last.namespace)
            rows = rows.filter(after)

    def _pages_in_one(
        self,
        config: RunnableConfig,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[Tuples]:
        thread_id, namespace = thread_of(config)
        named = get_checkpoint_id(config)
        after = get_checkpoint_id(before) if before is not None else None
        left = limit
        while left is None or left > 0:
            page = self._read_in_one(
                thread_id,
                namespace,
                limit=PAGE if left is None else min(PAGE, left),
                checkpoint_id=named,
                before=after,
                filter=filter,
            )
            if not page:
                return
            yield page
            if left is not None:
                left -= len(page)
            after = page[-1].config["configurable"]["checkpoint_id"]

    def _listed(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> QuerySet[GraphCheckpoint]:
        rows = self._rows(GraphCheckpoint)
        if config is not None:
            thread_id, namespace = thread_of(config)
            rows = rows.filter(thread_id=thread_id)
            if config["configurable"].get("checkpoint_ns") is not None:
                rows = rows.filter(namespace=namespace)
            if checkpoint_id := get_checkpoint_id(config):
                rows = rows.filter(checkpoint_id=checkpoint_id)
        for index, (key, value) in enumerate((filter or {}).items()):
            field = f"metadata_{index}"
            rows = rows.alias(**{field: KeyTransform(str(key), "metadata")})
            rows = rows.filter(**{field: value})
        if before is not None and (before_id := get_checkpoint_id(before)):
            rows = rows.filter(checkpoint_id__lt=before_id)
        return rows

    def _tuples(self, rows: Rows) -> Tuples:
        """The checkpoints of ``rows`` whole: their channels' values and pending writes, read
        in one statement each."""
        values = self._values(rows)
        writes = self._writes(rows)
        found = []
        for row in rows:
            where = (row.thread_id, row.namespace)
            checkpoint = self._opened(
                row.kind, row.checkpoint, "checkpoint", *where, row.checkpoint_id
            )
            checkpoint["channel_values"] = {
                channel: values[(*where, channel, str(version))]
                for channel, version in checkpoint["channel_versions"].items()
                if (*where, channel, str(version)) in values
            }
            found.append(
                CheckpointTuple(
                    config=_address(*where, row.checkpoint_id),
                    checkpoint=checkpoint,
                    metadata=row.metadata,
                    parent_config=_address(*where, row.parent_id) if row.parent_id else None,
                    pending_writes=writes.get((*where, row.checkpoint_id), []),
                )
            )
        return found

    def _values(self, rows: Rows) -> dict[tuple[str, ...], Any]:
        wanted = {
            (row.thread_id, row.namespace, channel, str(version))
            for row in rows
            for channel, version in row.channel_versions.items()
        }
        if not wanted:
            return {}
        blobs = self._rows(GraphBlob).filter(
            thread_id__in={key[0] for key in wanted},
            namespace__in={key[1] for key in wanted},
            channel__in={key[2] for key in wanted},
            version__in={key[3] for key in wanted},
        )
        values: dict[tuple[str, ...], Any] = {}
        for blob in blobs.exclude(kind="empty"):
            key = (blob.thread_id, blob.namespace, blob.channel, blob.version)
            if key in wanted:
                values[key] = self._opened(blob.kind, blob.value, "blob", *key)
        return values

    def _writes(self, rows: Rows) -> dict[tuple[str, ...], builtins.list[Any]]:
        found = self._rows(GraphWrite).filter(
            thread_id__in={row.thread_id for row in rows},
            namespace__in={row.namespace for row in rows},
            checkpoint_id__in={row.checkpoint_id for row in rows},
        )
        kept = {(row.thread_id, row.namespace, row.checkpoint_id) for row in rows}
        grouped: dict[tuple[str, ...], builtins.list[GraphWrite]] = defaultdict(list)
        for write in found:
            key = (write.thread_id, write.namespace, write.checkpoint_id)
            if key in kept:
                grouped[key].append(write)
        return {
            key: [
                (
                    write.task_id,
                    write.channel,
                    self._opened(
                        write.kind, write.value, "write", *key, write.task_id, str(write.idx)
                    ),
                )
                for write in sorted(
                    writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx)
                )
            ]
            for key, writes in grouped.items()
        }

    # -- writing -------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, namespace = thread_of(config)
        checkpoint_id = _name(checkpoint["id"], "checkpoint.id")
        body: dict[str, Any] = {**checkpoint}
        values = body.pop("channel_values")
        where = (thread_id, namespace)
        blobs = []
        for channel, version in new_versions.items():
            place = (*where, _name(channel, "channel"), _name(version, "version"))
            kind, value = (
                self._sealed(_redacted(values[channel]), "blob", *place)
                if channel in values
                else ("empty", b"")
            )
            blobs.append((place, kind, value))
        kind, value = self._sealed(body, "checkpoint", *where, checkpoint_id)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        row = {
            "checkpoint_id": checkpoint_id,
            "parent_id": get_checkpoint_id(config) or "",
            "run_id": str(meta.get("run_id") or "")[:MAX_GRAPH_NAME_LENGTH],
            "kind": kind,
            "checkpoint": value,
            "channel_versions": {k: str(v) for k, v in body["channel_versions"].items()},
            "metadata": meta,
        }
        if postgres.on_postgresql(self.using):
            self._put_in_one(thread_id, namespace, blobs, row)
        else:
            self._put_rows(thread_id, namespace, blobs, row)
        self._remember(thread_id, tenancy.current())
        return _address(thread_id, namespace, checkpoint_id)

    def _put_in_one(
        self, thread_id: str, namespace: str, blobs: builtins.list[Any], row: dict[str, Any]
    ) -> None:
        written = postgres.run(
            self.using,
            postgres.put_statement(len(blobs)),
            {
                "thread": thread_id,
                "namespace": namespace,
                "scope": tenancy.current(),
                "new_tenant": tenancy.tenant_of_new_row(),
                **self._owner_parameters(),
                **postgres.numbered(
                    [(place[2], place[3], kind, value) for place, kind, value in blobs],
                    "channel",
                    "version",
                    "kind",
                    "value",
                ),
                **row,
                "channel_versions": json.dumps(row["channel_versions"]),
                "metadata": json.dumps(row["metadata"]),
            },
        )
        if written is None:
            raise OfAnotherTenantError("graph thread", thread_id)

    def _owner_parameters(self) -> dict[str, Any]:
        """The owner columns of a header a raw statement makes."""
        user = self.owner.get("user")
        return {
            "user": None if user is None else user.pk,
            "visitor": self.owner.get("anonymous_key") or "",
        }

    def _put_rows(
        self, thread_id: str, namespace: str, blobs: builtins.list[Any], row: dict[str, Any]
    ) -> None:
        with transaction.atomic(using=self.using):
            tenant = self._touch(thread_id)
            GraphBlob._base_manager.using(self.using).bulk_create(
                [
                    GraphBlob(tenant=tenant, **_blob_key(place), kind=kind, value=value)
                    for place, kind, value in blobs
                ],
                ignore_conflicts=True,
            )
            GraphCheckpoint._base_manager.using(self.using).bulk_create(
                [GraphCheckpoint(tenant=tenant, thread_id=thread_id, namespace=namespace, **row)],
                update_conflicts=True,
                unique_fields=["thread", "namespace", "checkpoint_id"],
                update_fields=[field for field in row if field != "checkpoint_id"],
            )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id, namespace = thread_of(config)
        checkpoint_id = _name(config["configurable"]["checkpoint_id"], "checkpoint_id")
        task_id = _name(task_id, "task_id")
        scope = self._scope_of(thread_id)
        with tenant_scope(EVERY_TENANT if scope is None else scope):
            kept = []
            for index, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, index)
                place = (thread_id, namespace, checkpoint_id, task_id, str(idx))
                kind, data = self._sealed(_redacted(value), "write", *place)
                kept.append((idx, _name(channel, "channel"), kind, data))
            if not kept:
                return
            if postgres.on_postgresql(self.using):
                parameters = {
                    "scope": scope,
                    "new_tenant": tenancy.tenant_of_new_row(),
                    **self._owner_parameters(),
                    "thread": thread_id,
                    "namespace": namespace,
                    "checkpoint_id": checkpoint_id,
                    "task_id": task_id,
                    "task_path": task_path,
                    **postgres.numbered(kept, "idx", "channel", "kind", "value"),
                }
                statement = postgres.put_writes_statement(len(kept))
                allowed = postgres.run(self.using, statement, parameters)
                if allowed is None:  # its header made by another at the same moment: seen now
                    allowed = postgres.run(self.using, statement, parameters)
            else:
                allowed = self._put_write_rows(
                    thread_id, namespace, checkpoint_id, task_id, task_path, kept
                )
        if allowed is None:  # no thread of that id this scope may write
            raise OfAnotherTenantError("graph thread", thread_id)

    def _scope_of(self, thread_id: str) -> str | None:
        """The scope a thread's writes are made in: the caller's; or, where the caller's
        scope is lost (LangGraph writes a parallel task's writes from its executor's
        completion callback, in a context of its own), the one this saver last read or
        wrote the thread in. Code that entered no scope, for a thread this saver has not met
        in one, writes nothing (tenants fail closed)."""
        if tenancy.entered() or not tenancy.enabled():
            scope = tenancy.current()
            self._remember(thread_id, scope)
            return scope
        if thread_id in self._scopes:
            return self._scopes[thread_id]
        raise TenantUnresolvedError()

    def _remember(self, thread_id: str, scope: str | None) -> None:
        if len(self._scopes) >= REMEMBERED_THREADS:
            self._scopes.clear()
        self._scopes[thread_id] = scope

    def _put_write_rows(
        self,
        thread_id: str,
        namespace: str,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        kept: builtins.list[tuple[int, str, str, bytes]],
    ) -> str | None:
        """The writes under the thread's header, as :data:`postgres.PUT_WRITES` makes them:
        the header's tenant, or ``None`` (nothing written) when this scope may not write it."""
        tenant = self._rows(GraphThread).filter(pk=thread_id).values_list("tenant", flat=True)
        if tenant.first() is None:  # LangGraph's background put has not made it yet
            try:
                self._touch(thread_id, moved=False)
            except OfAnotherTenantError:
                return None
        found = tenant.first()
        if found is None:
            return None
        header = str(found)
        key = {"thread_id": thread_id, "namespace": namespace, "checkpoint_id": checkpoint_id}
        rows = GraphWrite._base_manager.using(self.using)
        with transaction.atomic(using=self.using):
            # A task's writes once written stay (a retried task writes them again); the
            # special ones (error, interrupt, resume) are replaced by the latest.
            for idx, channel, kind, data in kept:
                fields = {"channel": channel, "kind": kind, "value": data, "task_path": task_path}
                mine = rows.filter(**key, task_id=task_id, idx=idx, tenant=header)
                if idx < 0 and mine.update(**fields):
                    continue
                rows.bulk_create(
                    [GraphWrite(tenant=header, **key, task_id=task_id, idx=idx, **fields)],
                    ignore_conflicts=True,
                )
        return header

    def _touch(self, thread_id: str, *, moved: bool = True) -> str:
        """The thread's header moved on a version (``moved``; else only made if missing),
        made with this saver's owner if it is new: its tenant, which its rows take."""
        headers = self._rows(GraphThread).filter(pk=thread_id)
        now = timezone.now()
        if not (moved and headers.update(version=F("version") + 1, updated_at=now)):
            if not moved and headers.exists():
                return tenant_of_parent(GraphThread, self.using, pk=thread_id)
            try:
                with transaction.atomic(using=self.using):
                    GraphThread.objects.using(self.using).create(
                        id=thread_id, created_at=now, updated_at=now, **self.owner
                    )
            except IntegrityError:
                moved_now = headers.update(version=F("version") + 1, updated_at=now)
                if not (moved_now if moved else headers.exists()):
                    raise OfAnotherTenantError("graph thread", thread_id) from None
        return tenant_of_parent(GraphThread, self.using, pk=thread_id)

    # -- values --------------------------------------------------------------------------

    def _sealed(self, value: Any, what: str, *place: str) -> tuple[str, bytes]:
        return seal_typed(*self.serde.dumps_typed(value), *graph_place(what, *place))

    def _opened(self, kind: str, data: Any, what: str, *place: str) -> Any:
        return self.serde.loads_typed(open_typed(kind, data, *graph_place(what, *place)))

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """A version that sorts after ``current``, with a random tail: two branches forked
        from one checkpoint never give one channel the same version for different values."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- async twins ---------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await sync_to_async(self.get_tuple)(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        pages = self._pages(config, filter, before, limit)
        while (page := await sync_to_async(_next_page)(pages)) is not None:
            for found in page:
                yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await sync_to_async(self.put)(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await sync_to_async(self.put_writes)(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await sync_to_async(self.delete_thread)(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await sync_to_async(self.delete_for_runs)(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await sync_to_async(self.copy_thread)(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await sync_to_async(self.prune)(thread_ids, strategy=strategy)


#: LangGraph's savers come as a sync class and an async one; this one is both, and is here
#: under the async name too for code that looks for it.
AsyncWarlockSaver = WarlockSaver


def _blob_key(place: tuple[str, ...]) -> dict[str, str]:
    thread_id, namespace, channel, version = place
    return {"thread_id": thread_id, "namespace": namespace, "channel": channel, "version": version}


def _next_page(pages: Iterator[Tuples]) -> Tuples | None:
    return next(pages, None)
