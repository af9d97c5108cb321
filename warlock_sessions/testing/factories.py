"""factory-boy factories for the warlock_sessions models (needs ``factory-boy`` and Django)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from django.utils import timezone

from ..engine.session import encode_session
from ..models import (
    AgentState,
    AppliedInput,
    CacheEntry,
    CacheScope,
    Checkpoint,
    Conversation,
    ConversationMessage,
    GraphBlob,
    GraphCheckpoint,
    GraphThread,
    GraphWrite,
    MemoryItem,
    OutboundMessage,
    OwnerTally,
    Session,
    SessionEvent,
    SessionLockRow,
    SessionOwner,
    Snapshot,
    Wake,
    run_summary,
)
from .blobs import session_blob


class SessionFactory(factory.django.DjangoModelFactory):
    """A stored session row whose blob is a valid v4 session.

    Pass ``runs=[run_blob(...), ...]`` and ``data={...}`` (or a whole ``session=``) to choose
    what it holds; the derived columns follow the blob, as if a Store had saved it.
    """

    class Meta:
        model = Session
        exclude = ("runs", "data", "session")

    id = factory.Sequence(lambda n: f"session-{n}")
    version = 1
    agent = ""
    runs: list[Any] = []
    data: dict[str, Any] = {}
    session = factory.LazyAttribute(lambda o: session_blob(o.id, runs=o.runs, data=o.data))
    blob = factory.LazyAttribute(lambda o: encode_session(o.session, o.version))
    run_flows = factory.LazyAttribute(lambda o: run_summary(o.session)["run_flows"])
    run_statuses = factory.LazyAttribute(lambda o: run_summary(o.session)["run_statuses"])
    search_text = factory.LazyAttribute(lambda o: run_summary(o.session)["search_text"])
    handover = factory.LazyAttribute(lambda o: run_summary(o.session)["handover"])
    handover_since = factory.LazyAttribute(lambda o: run_summary(o.session)["handover_since"])
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


class OutboundMessageFactory(factory.django.DjangoModelFactory):
    """An outbox row of a session, due now and pending unless told otherwise."""

    class Meta:
        model = OutboundMessage

    session_id = factory.Sequence(lambda n: f"session-{n}")
    key = factory.Sequence(lambda n: f"message-{n}")
    kind = "ai"
    text = "Hello!"
    status = OutboundMessage.Status.PENDING
    deliver_after = factory.LazyFunction(timezone.now)


class WakeFactory(factory.django.DjangoModelFactory):
    """A wake of a session, due now and pending unless told otherwise."""

    class Meta:
        model = Wake

    session_id = factory.Sequence(lambda n: f"session-{n}")
    key = factory.Sequence(lambda n: f"silence:reminder:{n}")
    agent = ""
    status = Wake.Status.PENDING
    due_at = factory.LazyFunction(timezone.now)


class SessionEventFactory(factory.django.DjangoModelFactory):
    """An entry of a session's event log (``seq`` counts up per factory)."""

    class Meta:
        model = SessionEvent

    session_id = factory.Sequence(lambda n: f"session-{n}")
    seq = factory.Sequence(lambda n: n + 1)
    type = "turn"
    payload: dict[str, Any] = {}


class AppliedInputFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AppliedInput

    session_id = factory.Sequence(lambda n: f"session-{n}")
    input_key = factory.Sequence(lambda n: f"{n:064x}")


class SessionOwnerFactory(factory.django.DjangoModelFactory):
    """Who owns a session: an anonymous visitor by default (pass ``user=`` for a user)."""

    class Meta:
        model = SessionOwner

    session_id = factory.Sequence(lambda n: f"session-{n}")
    user = None
    anonymous_key = factory.Sequence(lambda n: f"visitor-{n}")


class OwnerTallyFactory(factory.django.DjangoModelFactory):
    """An owner's count of one kind of rows (``models.quotas``): made by the rows themselves;
    this is for a test of a counter on its own."""

    class Meta:
        model = OwnerTally

    key = factory.Sequence(lambda n: f"sessions:{n:064x}")
    count = 1


class SnapshotFactory(factory.django.DjangoModelFactory):
    """A run's snapshot row (``DjangoSnapshotStore``): a completed workflow by default."""

    class Meta:
        model = Snapshot

    key = factory.Sequence(lambda n: f"run-{n}")
    payload = factory.LazyAttribute(lambda o: {"runId": o.key, "status": "completed"})
    version = 1
    saved_at = factory.LazyFunction(timezone.now)


class CheckpointFactory(factory.django.DjangoModelFactory):
    """One turn's checkpoint of an orchestrator's session (``DjangoCheckpointStore``)."""

    class Meta:
        model = Checkpoint

    orchestrator_name = "orchestrator"
    session_id = factory.Sequence(lambda n: f"session-{n}")
    turn_index = 0
    state: dict[str, Any] = {}
    signature = "0" * 8
    saved_at = factory.LazyFunction(timezone.now)


class ConversationFactory(factory.django.DjangoModelFactory):
    """A conversation's header (``DjangoConversationStore``), an anonymous visitor's."""

    class Meta:
        model = Conversation

    id = factory.Sequence(lambda n: f"talk-{n}")
    anonymous_key = factory.Sequence(lambda n: f"visitor-{n}")
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


class ConversationMessageFactory(factory.django.DjangoModelFactory):
    """A message of a conversation, at the next position."""

    class Meta:
        model = ConversationMessage

    conversation = factory.SubFactory(ConversationFactory)
    position = factory.Sequence(lambda n: n)
    message = factory.LazyAttribute(lambda o: {"role": "user", "content": "hello"})


class SessionLockRowFactory(factory.django.DjangoModelFactory):
    """A held ``DatabaseLock``, for a minute."""

    class Meta:
        model = SessionLockRow

    key = factory.Sequence(lambda n: f"lock-{n}")
    token = factory.Sequence(lambda n: f"{n:032x}")
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=1))


class CacheEntryFactory(factory.django.DjangoModelFactory):
    """A cached answer of a conversation, for an hour, with no vector (exact repeats)."""

    class Meta:
        model = CacheEntry

    namespace = "default:v1:exact"
    scope = factory.Sequence(lambda n: f"conversation:talk-{n}")
    key = factory.Sequence(lambda n: f"{n:064x}")
    question = "What are your opening hours?"
    reply = factory.LazyAttribute(lambda o: {"text": "From nine to five."})
    vector = None
    stored_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))


class CacheScopeFactory(factory.django.DjangoModelFactory):
    """How often answers were removed from a scope."""

    class Meta:
        model = CacheScope

    namespace = "default:v1:exact"
    scope = factory.Sequence(lambda n: f"conversation:talk-{n}")
    removals = 0


class GraphThreadFactory(factory.django.DjangoModelFactory):
    """A LangGraph thread's header (``frameworks.langgraph.WarlockSaver``), nobody's."""

    class Meta:
        model = GraphThread

    id = factory.Sequence(lambda n: f"thread-{n}")
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


class GraphCheckpointFactory(factory.django.DjangoModelFactory):
    """A checkpoint of a thread's root namespace (its body as LangGraph's serde writes
    an empty one)."""

    class Meta:
        model = GraphCheckpoint

    thread = factory.SubFactory(GraphThreadFactory)
    namespace = ""
    checkpoint_id = factory.Sequence(lambda n: f"1f1f0000-0000-6000-8000-{n:012d}")
    kind = "msgpack"
    checkpoint = b"\x80"
    channel_versions = factory.LazyAttribute(lambda o: {"messages": "1"})
    metadata = factory.LazyAttribute(lambda o: {"source": "loop", "step": 0})


class GraphBlobFactory(factory.django.DjangoModelFactory):
    """A channel's value at one version."""

    class Meta:
        model = GraphBlob

    thread = factory.SubFactory(GraphThreadFactory)
    namespace = ""
    channel = "messages"
    version = factory.Sequence(lambda n: f"{n:032}.0")
    kind = "msgpack"
    value = b"\x90"


class GraphWriteFactory(factory.django.DjangoModelFactory):
    """A task's pending write on a checkpoint."""

    class Meta:
        model = GraphWrite

    thread = factory.SubFactory(GraphThreadFactory)
    namespace = ""
    checkpoint_id = "1f1f0000-0000-6000-8000-000000000000"
    task_id = factory.Sequence(lambda n: f"task-{n}")
    idx = 0
    channel = "messages"
    kind = "msgpack"
    value = b"\x90"


class MemoryItemFactory(factory.django.DjangoModelFactory):
    """An item of LangGraph's long-term memory (``WarlockStore``), with no vectors."""

    class Meta:
        model = MemoryItem

    namespace = "users.ana.memories"
    key = factory.Sequence(lambda n: f"memory-{n}")
    value = factory.LazyAttribute(lambda o: {"text": "likes olives"})
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


class AgentStateFactory(factory.django.DjangoModelFactory):
    """An ADK session's own state (``frameworks.adk.WarlockSessionService``)."""

    class Meta:
        model = AgentState

    scope = AgentState.Scope.SESSION
    app_name = "shop"
    user_id = "ana"
    session_id = factory.Sequence(lambda n: f"adk-{n}")
    state = factory.LazyAttribute(lambda o: {"step": 1})
    updated_at = factory.LazyFunction(timezone.now)
