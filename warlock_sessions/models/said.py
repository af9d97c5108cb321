"""The columns that hold what people said, each named once: whether it is sealed
(``ENCRYPTION_KEYS``, bound to its place: ``encryption``'s ``*_place``), redacted before it is
stored (``REDACTION``), and searched by the admin. Every model here is removed by
``warlock_erase`` for the person it is about, and rotation (``warlock_rotate_keys``) seals
again exactly the sealed columns here. Every other text, JSON or binary column of the app's
models is named in :data:`EXEMPT` with why it holds nothing a person said; a test holds the
models to that, so a new column is added here, or there, on purpose.

django-q2's ``SignedPackage`` wraps every task before it meets the broker; this is the same
idea for the columns: one list every writer's seal, rotation and erasure are checked against."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models

from . import Checkpoint, OutboundMessage, Session, SessionEvent, Snapshot
from .conversations import CacheEntry, Conversation, ConversationMessage
from .frameworks import AgentState, GraphBlob, GraphCheckpoint, GraphWrite, MemoryItem


@dataclass(frozen=True)
class Said:
    """A column holding what people said. ``place``: the first part of what a sealed value
    of it is bound to (``encryption``'s ``*_place``; no two tables share one, so a value
    copied into another table does not open there). ``kept``: the key of a JSON value that
    redaction leaves as it is, on purpose (docs/privacy.md)."""

    model: type[models.Model]
    column: str
    sealed: bool
    redacted: bool
    place: str = ""
    searched: bool = False
    kept: str = ""

    @property
    def label(self) -> str:
        return f"{self.model.__name__}.{self.column}"


SAID: tuple[Said, ...] = (
    # What a flow collected (``data``) is kept: the flows need it on later turns.
    Said(Session, "blob", sealed=True, redacted=True, place="session", kept="data"),
    # What a flow collected, for the admin's search; kept empty while ENCRYPTION_KEYS is set.
    Said(Session, "search_text", sealed=False, redacted=False, searched=True),
    Said(SessionEvent, "payload", sealed=True, redacted=True, place="event"),
    Said(OutboundMessage, "text", sealed=True, redacted=True, place="outbox.text"),
    Said(OutboundMessage, "payload", sealed=True, redacted=True, place="outbox.payload"),
    Said(Conversation, "pending", sealed=True, redacted=True, place="conversation.pending"),
    Said(ConversationMessage, "message", sealed=True, redacted=True, place="conversation.message"),
    Said(Snapshot, "payload", sealed=True, redacted=True, place="snapshot"),
    Said(Checkpoint, "state", sealed=True, redacted=True, place="checkpoint"),
    Said(CacheEntry, "question", sealed=True, redacted=True, place="cache"),
    Said(CacheEntry, "reply", sealed=True, redacted=True, place="cache"),
    # Similarity is searched over it, so it cannot be sealed: erased with its answer.
    Said(CacheEntry, "vector", sealed=False, redacted=True),
    Said(GraphCheckpoint, "checkpoint", sealed=True, redacted=True, place="graph.checkpoint"),
    Said(GraphBlob, "value", sealed=True, redacted=True, place="graph.blob"),
    Said(GraphWrite, "value", sealed=True, redacted=True, place="graph.write"),
    Said(MemoryItem, "value", sealed=True, redacted=True, place="memory"),
    Said(MemoryItem, "vectors", sealed=False, redacted=True),
    Said(AgentState, "state", sealed=True, redacted=True, place="agent.state"),
)

#: Every other text, JSON or binary column, as ``Model.column``: why it holds nothing a person
#: said. Ids and keys are chosen by code or clients, and matched by erasure.
EXEMPT: dict[str, str] = {}


def _exempt(why: str, columns: str) -> None:
    EXEMPT.update(dict.fromkeys(columns.split(), why))


_exempt(
    "the tenant's name (TENANT_RESOLVER)",
    """Session.tenant OutboundMessage.tenant SessionEvent.tenant Wake.tenant AppliedInput.tenant
    SessionOwner.tenant Snapshot.tenant Checkpoint.tenant Conversation.tenant
    ConversationMessage.tenant CacheEntry.tenant GraphThread.tenant GraphCheckpoint.tenant
    GraphBlob.tenant GraphWrite.tenant MemoryItem.tenant AgentState.tenant""",
)
_exempt(
    "an id or key",
    """Session.id OutboundMessage.key OutboundMessage.session_id SessionEvent.session_id
    Wake.key Wake.session_id AppliedInput.session_id AppliedInput.input_key
    SessionOwner.session_id Snapshot.key Checkpoint.session_id SessionLockRow.key
    SessionLockRow.token Conversation.id CacheEntry.key GraphThread.id
    GraphCheckpoint.checkpoint_id GraphCheckpoint.parent_id GraphCheckpoint.run_id
    GraphWrite.checkpoint_id GraphWrite.task_id GraphWrite.task_path MemoryItem.key
    AgentState.user_id AgentState.session_id AgentState.app_name""",
)
_exempt(
    "a digest of an owner's id or visitor key and a tenant: names nobody",
    "OwnerTally.key",
)
_exempt(
    "a visitor's key: matched by erasure, never shown (the admin shows its fingerprint)",
    "SessionOwner.anonymous_key Conversation.anonymous_key GraphThread.anonymous_key "
    "MemoryItem.anonymous_key",
)
_exempt(
    "a name the code gave (an agent, a flow, a kind, a status, a route)",
    """Session.agent Session.run_flows Session.run_statuses Session.handover
    OutboundMessage.kind OutboundMessage.status SessionEvent.type Wake.agent Wake.status
    Checkpoint.orchestrator_name Checkpoint.signature Checkpoint.version Checkpoint.last_route
    GraphCheckpoint.kind GraphBlob.kind GraphWrite.kind GraphBlob.channel GraphWrite.channel
    GraphBlob.version GraphCheckpoint.channel_versions MemoryItem.embedder AgentState.scope""",
)
_exempt(
    "where a value may be read: a namespace or scope the code names",
    """CacheEntry.namespace CacheEntry.scope CacheScope.namespace CacheScope.scope
    GraphCheckpoint.namespace GraphBlob.namespace GraphWrite.namespace MemoryItem.namespace""",
)
EXEMPT.update(
    {
        "OutboundMessage.last_error": "the deliverer's own error, for the operators",
        "Wake.last_error": "the worker's own error, for the operators",
        "Snapshot.resume": "a resume asked for in the admin: a step's name and who asked",
        "Conversation.forked_from": "the conversation and message count a fork was made from",
        "GraphCheckpoint.metadata": "LangGraph's step, source and parents, and the run's "
        "configurable keys: list(filter=...) selects by them, so they stay plain (a graph's "
        "state is in its checkpoint and channel values)",
    }
)


def said_models() -> list[type[models.Model]]:
    """The models with a column of what people said, each once, in the order above."""
    return list(dict.fromkeys(entry.model for entry in SAID))


def sealed_columns(model: type[models.Model]) -> list[Said]:
    return [entry for entry in SAID if entry.model is model and entry.sealed]
