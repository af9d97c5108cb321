"""``WarlockStore``: LangGraph's long-term memory (a ``BaseStore``) as ``MemoryItem`` rows.

An item is a JSON value under a namespace and a key, owned (``owner``) and kept by tenant as
the app's conversations are; ``REDACT`` redacts its strings and ``ENCRYPTION_KEYS`` seals it.
With an ``IndexConfig`` its fields are embedded when it is put, by a LangChain embedder or one
of this app's (``OfflineEmbedder``, ``OpenAICompatibleEmbedder``), and a search ranks every
candidate exactly (cosine, the best of an item's fields), as the semantic cache does: no
approximate index to tune. With a ``TTLConfig`` items expire (``ttl`` minutes after their
last write, or read when reads refresh), are left out of reads with ``omit_expired``, and are
deleted by ``warlock_prune`` or ``sweep_ttl()``. Filters (``$eq``, ``$ne``, ``$gt``, ``$gte``,
``$lt``, ``$lte`` and nested values) are LangGraph's in-memory store's, applied in Python to
the namespace's items, as is a sealed value's only possible reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, router, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from ...cache.base import numpy, rank
from ...encryption import memory_place, open_json, seal_json
from ...models import MAX_GRAPH_NAME_LENGTH, MemoryItem
from ...providers.embedders import Embedder, unit
from ...redaction import redact_value
from ..owners import owner_of

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        ensure_embeddings,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "warlock_sessions.frameworks.langgraph needs LangGraph's checkpoint package: "
        "pip install 'warlock-sessions[langgraph]'"
    ) from error

#: Labels are joined with it: LangGraph refuses it inside a label.
SEPARATOR = "."
#: Texts to embed: (the item's namespace and key, the field path) for each text.
Texts = dict[str, list[tuple[tuple[str, ...], str]]]


def _joined(namespace: tuple[str, ...]) -> str:
    joined = SEPARATOR.join(namespace)
    if len(joined) > MemoryItem._meta.get_field("namespace").max_length:  # type: ignore[operator]
        raise InvalidNamespaceError(f"namespace {namespace!r} is too long to keep")
    return joined


class WarlockStore(BaseStore):
    """LangGraph's ``BaseStore`` on this app's tables (see the module doc).

    ``index``: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``), ``embed`` being
    a LangChain ``Embeddings``, a function of texts, or one of this app's embedders;
    ``ttl``: LangGraph's ``TTLConfig``; ``owner``: whose items it puts (a user, a request,
    or ``None``); ``using``: the database alias.
    """

    supports_ttl = True

    def __init__(
        self,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        owner: Any = None,
        using: str | None = None,
    ) -> None:
        self.index_config = index
        self.ttl_config = ttl
        self.owner = owner_of(owner) or {}
        self.using: str = using or router.db_for_write(MemoryItem) or "default"
        self.embedder: Embedder | None = None
        self.embeddings: Any = None
        self.embedder_name = ""
        if index:
            embed = index.get("embed")
            if isinstance(embed, Embedder):
                self.embedder, self.embedder_name = embed, embed.name
            else:
                self.embeddings = ensure_embeddings(embed)
                self.embedder_name = f"{type(embed).__name__}-{index.get('dims', 0)}"
            self.fields = [
                (path, tokenize_path(path) if path != "$" else path)
                for path in index.get("fields") or ["$"]
            ]

    # -- the batch: reads against the state before it, then its puts --------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        texts, queries = self._to_embed(ops)
        vectors = self._embedded(list(texts) + sorted(queries))
        return self._run(ops, texts, vectors)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        texts, queries = self._to_embed(ops)
        wanted = list(texts) + sorted(queries)
        if self.embeddings is not None and wanted:
            vectors = dict(zip(wanted, await self.embeddings.aembed_documents(wanted), strict=True))
            vectors = {text: unit(list(vector)) for text, vector in vectors.items()}
        else:
            vectors = await sync_to_async(self._embedded)(wanted)
        return await sync_to_async(self._run)(ops, texts, vectors)

    def _run(self, ops: list[Op], texts: Texts, vectors: dict[str, list[float]]) -> list[Result]:
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                query = vectors.get(op.query) if op.query else None
                results.append(self._search(op, query))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            elif isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"not an operation of LangGraph's stores: {type(op).__name__}")
        if puts:
            self._put(list(puts.values()), texts, vectors)
        return results

    # -- embedding -----------------------------------------------------------------------

    def _to_embed(self, ops: list[Op]) -> tuple[Texts, set[str]]:
        """The texts the batch's puts index (each with its item and field) and the queries
        its searches rank by."""
        texts: Texts = {}
        queries: set[str] = set()
        if not self.index_config:
            return texts, queries
        for op in ops:
            if isinstance(op, SearchOp) and op.query:
                queries.add(op.query)
            if not isinstance(op, PutOp) or op.value is None or op.index is False:
                continue
            fields = (
                self.fields
                if op.index is None
                else [(path, tokenize_path(path)) for path in op.index]
            )
            for path, tokens in fields:
                for text in get_text_at_path(op.value, tokens):
                    # Embedded as it is kept: redacted (REDACT), as the value is.
                    kept = redact_value(text)
                    texts.setdefault(kept, []).append(((*op.namespace, op.key), path))
        return texts, queries

    def _embedded(self, texts: list[str]) -> dict[str, list[float]]:
        if not texts:
            return {}
        if self.embedder is not None:
            return {text: unit(self.embedder.embed(text)) for text in texts}
        vectors = self.embeddings.embed_documents(texts)
        return {text: unit(list(vector)) for text, vector in zip(texts, vectors, strict=True)}

    # -- reading -------------------------------------------------------------------------

    def _rows(self) -> QuerySet[MemoryItem]:
        rows = MemoryItem.objects.using(self.using).all()
        if self.ttl_config and self.ttl_config.get("omit_expired"):
            rows = rows.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        return rows

    def _get(self, op: GetOp) -> Item | None:
        row = self._rows().filter(namespace=_joined(op.namespace), key=op.key).first()
        if row is None:
            return None
        if op.refresh_ttl:
            self._refresh([row])
        return _item(row)

    def _search(self, op: SearchOp, query: list[float] | None) -> list[SearchItem]:
        rows = self._rows()
        if op.namespace_prefix:
            prefix = _joined(op.namespace_prefix)
            rows = rows.filter(Q(namespace=prefix) | Q(namespace__startswith=prefix + SEPARATOR))
        rows = rows.order_by("-updated_at", "-pk")
        if not op.filter and query is None:
            found = list(rows[op.offset : op.offset + op.limit])
            scored: list[tuple[float | None, MemoryItem]] = [(None, row) for row in found]
        else:
            candidates = [row for row in rows if _matches(_value(row), op.filter)]
            scored = self._ranked(candidates, query)[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            self._refresh([row for _, row in scored])
        return [_item(row, score) for score, row in scored]

    def _ranked(
        self, rows: list[MemoryItem], query: list[float] | None
    ) -> list[tuple[float | None, MemoryItem]]:
        """``rows`` best first by their best field's cosine to ``query`` (those of another
        embedder, or none, after them, newest first); as they are without a query."""
        if query is None:
            return [(None, row) for row in rows]
        np = numpy()
        pairs = []
        for row in rows:
            if row.vectors and row.embedder == self.embedder_name:
                matrix = np.frombuffer(bytes(row.vectors), dtype=np.float32)
                if matrix.size % len(query):
                    continue  # vectors of another length: not comparable
                for vector in matrix.reshape(-1, len(query)):
                    pairs.append((vector, row))
        best: dict[int, tuple[float, MemoryItem]] = {}
        for score, row in rank(query, pairs, len(pairs)):
            best.setdefault(row.pk, (score, row))
        ranked: list[tuple[float | None, MemoryItem]] = list(best.values())
        return ranked + [(None, row) for row in rows if row.pk not in best]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        rows = self._rows()
        for condition in op.match_conditions or ():
            fixed = _fixed_prefix(condition)
            if fixed:
                rows = rows.filter(Q(namespace=fixed) | Q(namespace__startswith=fixed + SEPARATOR))
        found = {
            tuple(joined.split(SEPARATOR))
            for joined in rows.values_list("namespace", flat=True).distinct()
        }
        kept = [
            namespace
            for namespace in found
            if all(_matches_path(condition, namespace) for condition in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            kept = list({namespace[: op.max_depth] for namespace in kept})
        return sorted(kept)[op.offset : op.offset + op.limit]

    def _refresh(self, rows: Sequence[MemoryItem]) -> None:
        """Push on the expiry of the read items that have a time to live."""
        now = timezone.now()
        for row in rows:
            if row.ttl_minutes is not None:
                expires = now + timedelta(minutes=row.ttl_minutes)
                MemoryItem.objects.using(self.using).filter(pk=row.pk).update(expires_at=expires)

    # -- writing -------------------------------------------------------------------------

    def _put(self, ops: list[PutOp], texts: Texts, vectors: dict[str, list[float]]) -> None:
        fields: dict[tuple[str, ...], list[list[float]]] = {}
        for text, places in texts.items():
            for place, _ in places:
                fields.setdefault(place, []).append(vectors[text])
        now = timezone.now()
        with transaction.atomic(using=self.using):
            for op in ops:
                namespace = _joined(op.namespace)
                if len(op.key) > MAX_GRAPH_NAME_LENGTH or "\x00" in op.key:
                    raise InvalidNamespaceError(f"key {op.key!r} is too long or holds a NUL")
                # Writes reach an expired item not yet swept too: it is replaced, or deleted.
                rows = MemoryItem.objects.using(self.using).filter(namespace=namespace, key=op.key)
                if op.value is None:
                    rows.delete()
                    continue
                self._keep(op, rows, namespace, fields.get((*op.namespace, op.key)), now)

    def _keep(
        self,
        op: PutOp,
        rows: QuerySet[MemoryItem],
        namespace: str,
        vectors: list[list[float]] | None,
        now: datetime,
    ) -> None:
        ttl = op.ttl if op.ttl is not None else None
        written = {
            "value": seal_json(
                redact_value(dict(op.value or {})), *memory_place(namespace, op.key)
            ),
            "vectors": _matrix(vectors),
            "embedder": self.embedder_name if vectors else "",
            "updated_at": now,
            "ttl_minutes": ttl,
            "expires_at": None if ttl is None else now + timedelta(minutes=ttl),
        }
        if rows.update(**written):
            return
        try:
            with transaction.atomic(using=self.using):
                MemoryItem.objects.using(self.using).create(
                    namespace=namespace, key=op.key, created_at=now, **written, **self.owner
                )
        except IntegrityError:
            # Made at the same moment by another put of this tenant (the key is one per
            # tenant): this put, the later, replaces it.
            if not rows.update(**written):
                raise

    def sweep_ttl(self) -> int:
        """Delete the items whose time to live ran out (``warlock_prune`` does it too): how
        many went."""
        expired = MemoryItem.objects.using(self.using).filter(expires_at__lt=timezone.now())
        return int(expired.delete()[0])

    async def asweep_ttl(self) -> int:
        return await sync_to_async(self.sweep_ttl)()


def _value(row: MemoryItem) -> dict[str, Any]:
    value = open_json(row.value, *memory_place(row.namespace, row.key))
    return value if isinstance(value, dict) else {}


def _item(row: MemoryItem, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=tuple(row.namespace.split(SEPARATOR)),
        key=row.key,
        value=_value(row),
        created_at=row.created_at,
        updated_at=row.updated_at,
        score=score,
    )


def _matrix(vectors: list[list[float]] | None) -> bytes | None:
    if not vectors:
        return None
    return bytes(numpy().asarray(vectors, dtype=numpy().float32).tobytes())


def _fixed_prefix(condition: MatchCondition) -> str:
    """The labels a prefix condition fixes before its first wildcard, joined."""
    if condition.match_type != "prefix":
        return ""
    fixed = []
    for label in condition.path:
        if label == "*":
            break
        fixed.append(label)
    return SEPARATOR.join(fixed)


def _matches_path(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    compared = (
        namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    )
    return all(wanted in ("*", label) for wanted, label in zip(path, compared, strict=True))


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    return all(_compared(value.get(key), wanted) for key, wanted in (filter or {}).items())


def _compared(value: Any, wanted: Any) -> bool:
    """LangGraph's in-memory store's comparison: operators, nested objects, lists."""
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(
            _compared(value.get(key), inner) for key, inner in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_compared(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    comparisons = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    if operator not in comparisons:
        raise ValueError(f"unsupported filter operator: {operator}")
    try:
        return bool(comparisons[operator](float(value), float(operand)))
    except (TypeError, ValueError):
        return False
