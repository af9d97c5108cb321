"""Shapes for the OpenAPI document (drf-spectacular): what each endpoint takes and returns,
errors included. Documentation only; the views validate bodies themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import serializers

if TYPE_CHECKING:  # the stubs make Serializer generic; DRF's class is not subscriptable
    Shape = serializers.Serializer[Any]
else:
    Shape = serializers.Serializer

try:
    from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

    OPENAPI = True
except ImportError:  # the openapi extra is not installed: the decorators do nothing
    OPENAPI = False

    def extend_schema(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
        return lambda view: view


class ErrorSerializer(Shape):
    code = serializers.CharField(help_text="stable, kebab-case: switch on it")
    detail = serializers.CharField(help_text="one English sentence")
    field = serializers.CharField(required=False, help_text="the input at fault (invalid-input)")
    expected_version = serializers.IntegerField(required=False)
    actual_version = serializers.IntegerField(required=False, allow_null=True)


class SessionEnvelopeSerializer(Shape):
    id = serializers.CharField()
    version = serializers.IntegerField()
    session = serializers.JSONField(help_text="the v4 session blob")


class SessionSummarySerializer(Shape):
    id = serializers.CharField()
    version = serializers.IntegerField()
    agent = serializers.CharField()
    run_flows = serializers.ListField(child=serializers.CharField())
    run_statuses = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField()


class MessageInputSerializer(Shape):
    text = serializers.CharField(allow_blank=True)
    id = serializers.CharField(required=False, help_text="the client's id: a resend is ignored")
    at = serializers.DateTimeField(required=False, help_text="staff and server code only")


class EventInputSerializer(Shape):
    name = serializers.CharField(help_text="end users: only the agent's public events")
    key = serializers.CharField(help_text="the event's id: a resend is ignored")
    payload = serializers.JSONField(required=False)


class StartInputSerializer(Shape):
    flow = serializers.CharField(help_text="end users: only the agent's public starts")
    key = serializers.CharField(help_text="the start's id: a resend is ignored")
    input = serializers.JSONField(required=False, help_text="staff and server code only")


class HandoverInputSerializer(Shape):
    action = serializers.ChoiceField(
        choices=["request", "take", "reply", "release"], help_text="docs/handover.md"
    )
    key = serializers.CharField(help_text="the action's id: a resend is answered, not repeated")
    by = serializers.CharField(
        required=False, help_text="the name the customer sees (default: the account's)"
    )
    text = serializers.CharField(required=False, help_text="a reply's message")
    reason = serializers.CharField(required=False, help_text="why, for the inbox (request)")


class TurnRequestSerializer(Shape):
    """Exactly one of ``message``, ``event``, ``start``, ``wake``, ``handover``. What an end
    user may send is limited by the trust model (docs/api.md): ``context``, ``agent``, ``wake``,
    ``handover`` and ``message.at`` are for staff and server code."""

    message = MessageInputSerializer(required=False)
    event = EventInputSerializer(required=False)
    start = StartInputSerializer(required=False)
    wake = serializers.CharField(required=False, help_text="a wake key (staff only)")
    handover = HandoverInputSerializer(required=False, help_text="staff only")
    # A body field named like Serializer.context, which only this documentation shape has.
    context = serializers.JSONField(required=False, help_text="staff only")  # type: ignore[assignment]
    agent = serializers.CharField(
        required=False, help_text="a name in WARLOCK_SESSIONS['AGENTS'] (staff only)"
    )


class TurnResultSerializer(Shape):
    version = serializers.IntegerField()
    changed = serializers.BooleanField()
    messages = serializers.ListField(
        child=serializers.JSONField(),
        help_text="each {text, kind, key, after_ms, media?, by?} (afterMs, the engine's "
        "spelling, until 0.4)",
    )
    events = serializers.ListField(
        child=serializers.JSONField(),
        help_text="the events the turn logged, as the events endpoint and the socket send them "
        "(payload, the raw entry, until 0.4)",
    )
    schedule = serializers.ListField(child=serializers.JSONField())
    outcomes = serializers.ListField(child=serializers.JSONField())
    started = serializers.ListField(child=serializers.JSONField())
    ended = serializers.ListField(child=serializers.JSONField())
    skipped = serializers.ListField(child=serializers.JSONField())
    llm_calls = serializers.IntegerField()
    code = serializers.CharField(allow_null=True)
    session = serializers.JSONField()


class EventsSerializer(Shape):
    events = serializers.ListField(child=serializers.JSONField())
    last_seq = serializers.IntegerField()


def _error_responses(described: dict[int, str], statuses: tuple[int, ...]) -> dict[int, Any]:
    if not OPENAPI:
        return {}
    return {
        status: OpenApiResponse(ErrorSerializer, description=described[status])
        for status in statuses
    }


def errors(*statuses: int) -> dict[int, Any]:
    return _error_responses(SESSION_ERRORS, statuses)


SESSION_ERRORS = {
    400: "invalid input, JSON or session",
    403: "not allowed",
    404: "no such session",
    409: "the turn lost the version race after the retries",
    412: "If-Match/If-None-Match did not hold",
    413: "the body is too large",
    429: "throttled",
    503: "the model provider failed",
}


LIST = extend_schema(
    summary="List sessions",
    description=(
        "The sessions the requester may see, newest first, filtered by flow, run status, "
        "agent, or text in their data (`q`). Paginated; `count` stops counting at a cap."
    ),
    responses={200: SessionSummarySerializer(many=True), **errors(400, 403, 429)},
    parameters=[
        OpenApiParameter(name, str, description=text)
        for name, text in (
            ("agent", "agent name"),
            ("run_status", "a live run's status"),
            ("flow", "a live run's flow"),
            ("updated_after", "ISO-8601"),
            ("updated_before", "ISO-8601"),
        )
    ]
    if OPENAPI
    else None,
)
RETRIEVE = extend_schema(
    summary="Read a session",
    description=(
        "The session's blob with its version, and an `ETag`; `If-None-Match` answers 304 when"
        " it has not changed."
    ),
    responses={200: SessionEnvelopeSerializer, 304: None, **errors(403, 404, 429)},
    parameters=[
        OpenApiParameter(
            "If-None-Match",
            str,
            OpenApiParameter.HEADER,
            description='"<version>" you hold: 304 with no body while it is current',
        )
    ]
    if OPENAPI
    else None,
)
UPDATE = extend_schema(
    summary="Write a session's blob (staff)",
    description=(
        "Replace the blob conditionally: `If-Match` (or the body's version) must be the "
        "stored version, else 412; `If-None-Match: *` creates it. For repairs and imports; "
        "turns go through `turn/`."
    ),
    request=SessionEnvelopeSerializer,
    responses={
        200: SessionEnvelopeSerializer,
        201: SessionEnvelopeSerializer,
        **errors(400, 403, 404, 412, 413, 429),
    },
    parameters=[
        OpenApiParameter(
            "If-Match", str, OpenApiParameter.HEADER, description='"<version>": update'
        ),
        OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, description="*: create"),
    ]
    if OPENAPI
    else None,
)
DESTROY = extend_schema(
    summary="Delete a session",
    description="The session, its event log, outbox, wakes and owner record go together.",
    responses={204: None, **errors(403, 404, 429)},
)
TURN = extend_schema(
    summary="Run one turn",
    description=(
        "Apply one input (`message`, `event`, `start` or `wake`) and answer what the turn "
        "did: its messages, schedule, outcomes and the session as saved. A resend of an input"
        " with the same id changes nothing."
    ),
    request=TurnRequestSerializer,
    responses={200: TurnResultSerializer, **errors(400, 403, 404, 409, 413, 429, 503)},
)
EVENTS = extend_schema(
    summary="Read the event log",
    description=(
        "What the session's turns logged after `after` (a `seq`), oldest first: messages both"
        " ways, runs started and ended, outcomes."
    ),
    responses={200: EventsSerializer, **errors(400, 403, 404, 429)},
    parameters=[OpenApiParameter("after_seq", int, description="events after this seq")]
    if OPENAPI
    else None,
)


class SnapshotEnvelopeSerializer(Shape):
    key = serializers.CharField()
    snapshot = serializers.JSONField(help_text="the run's snapshot as stored")


SNAPSHOT_LIST = extend_schema(
    summary="List run snapshots (staff)",
    description=(
        "The keys of the run snapshots in `SNAPSHOT_STORE`, starting with `prefix`, paginated."
    ),
    responses={
        200: serializers.ListSerializer(child=serializers.CharField()),
        **errors(400, 403, 404),
    },
    parameters=[OpenApiParameter("prefix", str, description="keys starting with this, exactly")]
    if OPENAPI
    else None,
)
SNAPSHOT_RETRIEVE = extend_schema(
    summary="Read a run snapshot (staff)",
    description="A workflow, supervisor or agent run's snapshot as stored.",
    responses={200: SnapshotEnvelopeSerializer, **errors(400, 403, 404)},
)


class CancelRunSerializer(Shape):
    status = serializers.ChoiceField(choices=["cancelled"])
    reason = serializers.CharField(required=False, max_length=500)


SNAPSHOT_CANCEL = extend_schema(
    summary="Cancel a running run (staff)",
    request=CancelRunSerializer,
    responses={200: SnapshotEnvelopeSerializer, **errors(400, 403, 404, 409)},
    description="Cancel a running run (409 run-not-running when it has settled, "
    "cancel-unsupported on a store that keeps no versions).",
)
SNAPSHOT_DESTROY = extend_schema(
    summary="Delete a run snapshot (staff)",
    description="The run can no longer be resumed.",
    responses={204: None, **errors(400, 403, 404)},
)


class ConversationSerializer(Shape):
    id = serializers.CharField()
    version = serializers.IntegerField()
    turns = serializers.IntegerField()
    pending = serializers.BooleanField(help_text="a turn was cut short: resume finishes it")
    forked_from = serializers.JSONField(allow_null=True, help_text='{"id", "messageCount"}')
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SendSerializer(Shape):
    input = serializers.CharField(help_text="the user's text (end users send text only)")


class AgentResultSerializer(Shape):
    text = serializers.CharField(help_text="the agent's reply")
    run_id = serializers.CharField()
    usage = serializers.JSONField()
    cached = serializers.CharField(
        help_text='"exact" or "similar" when a semantic cache answered, "" when the model did'
    )
    messages = serializers.ListField(
        child=serializers.JSONField(), help_text="the turn's messages: user, tool calls, reply"
    )
    conversation = ConversationSerializer()


class ResumeSerializer(AgentResultSerializer):
    resumed = serializers.BooleanField(help_text="false: no turn was pending")


class ForkSerializer(Shape):
    target = serializers.CharField(
        required=False, help_text="the new conversation's id, unused (default: one is made)"
    )
    message_count = serializers.IntegerField(required=False, help_text="default: all")


class TruncateSerializer(Shape):
    message_count = serializers.IntegerField(help_text="how many messages to keep")


class HistorySerializer(Shape):
    id = serializers.CharField()
    messages = serializers.ListField(child=serializers.JSONField())


def conversation_errors(*statuses: int) -> dict[int, Any]:
    return _error_responses(CONVERSATION_ERRORS, statuses)


CONVERSATION_ERRORS = {
    400: "invalid input, or a cut that would split a tool call from its result",
    403: "not allowed",
    404: "no such conversation",
    409: "busy, conflict, an existing fork target, or a turn that cannot resume",
    413: "the body is too large",
    502: "the agent failed; the conversation is unchanged",
    503: "the model provider failed, or no conversation agent is configured",
}


CONVERSATION_RETRIEVE = extend_schema(
    summary="Read a conversation's header",
    description="Its version, turns, whether a turn is pending, and where it was forked from.",
    responses={200: ConversationSerializer, **conversation_errors(403, 404)},
)
CONVERSATION_HISTORY = extend_schema(
    summary="Read a conversation's messages",
    description="The messages the agent sees next turn, in order (never the system prompt).",
    responses={200: HistorySerializer, **conversation_errors(403, 404)},
)
CONVERSATION_SEND = extend_schema(
    summary="Send a turn",
    description=(
        "The user's text to the conversation's agent; the turn is stored only if the agent's "
        "run succeeded. An id nobody uses becomes the requester's conversation."
    ),
    request=SendSerializer,
    responses={
        200: AgentResultSerializer,
        **conversation_errors(400, 403, 404, 409, 413, 502, 503),
    },
)
CONVERSATION_RESUME = extend_schema(
    summary="Finish a turn a crash cut short",
    description=(
        "A durable agent resumes its run from its last snapshot; `resumed: false` when no "
        "turn is pending."
    ),
    request=None,
    responses={200: ResumeSerializer, **conversation_errors(403, 404, 409, 502, 503)},
)
CONVERSATION_FORK = extend_schema(
    summary="Fork a conversation",
    description=(
        "A new conversation, named by the server, starting with this one's first "
        "`message_count` messages (never splitting a tool call from its result)."
    ),
    request=ForkSerializer,
    responses={201: ConversationSerializer, **conversation_errors(400, 403, 404, 409)},
)
CONVERSATION_TRUNCATE = extend_schema(
    summary="Keep the first messages",
    description=(
        "Undo: keep the first `message_count` messages (never splitting a tool call from its "
        "result)."
    ),
    request=TruncateSerializer,
    responses={200: ConversationSerializer, **conversation_errors(400, 403, 404, 409)},
)
CONVERSATION_DESTROY = extend_schema(
    summary="Delete a conversation",
    description="Its messages, and what a semantic cache kept for it, go too.",
    responses={204: None, **conversation_errors(403, 404, 409)},
)
