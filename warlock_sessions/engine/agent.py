"""The agent definition: flows, fields, actions, conditions, the model and the idle speaker."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import FlowConfigurationError
from .flows import Flow, check_fields, compile_flows, compile_interrupts
from .ports import Deferral, Model
from .predicates import Condition
from .references import check_references
from .sentences import check_labels, check_templates

if TYPE_CHECKING:
    from .turn import TurnResult


@dataclass
class ActionContext:
    """What an action sees. ``key`` is stable across replays: make the action idempotent on it."""

    context: Any
    data: dict[str, Any]
    input: Any
    run: Mapping[str, Any]
    key: str
    dedupe_key: str
    silenced: str | None
    now: datetime

    def set(self, patch: Mapping[str, Any]) -> None:
        """Merge ``patch`` into the session's data."""
        self.data.update(patch)


Action = Callable[[dict[str, Any], ActionContext], Mapping[str, Any] | None]


def tool_id(tool: Any) -> Any:
    """The id of an agent tool: a dict's ``"id"`` or an object's ``id`` attribute."""
    return tool.get("id") if isinstance(tool, Mapping) else getattr(tool, "id", None)


BusinessHours = Callable[[datetime, Any], datetime]


class Agent:
    """Flows plus what they need to run, validated once, at construction.

    * ``flows``: flow definitions in the format of docs/engine.md (dicts/JSON, camelCase keys).
    * ``fields``: ``{name: {"type": "string"|"number"|"integer"|"boolean", "enum"?, "ask"?,
      "extract"?}}``, the fields talk steps collect.
    * ``actions``: ``{name: callable(params, ctx) -> result}`` for ``do`` steps. A result is
      ``{"ok": True, "detail"?, "spoke"?}``, ``{"skipped": why}``, ``{"failed": why}`` or
      ``{"defer": "1h", "detail"?}``; ``None`` means ok and a raised exception means failed.
    * ``conditions``: ``{name: callable(ctx, arg) -> bool}``, usable by name in predicates,
      so flows stay serialisable.
    * ``model``: the default model (ports ``understand`` and ``speak``).
    * ``idle``: ``"silent"``, or ``{"prompt", "instructions"?, "tools"?}`` for the speaker that
      answers a message no run holds (default: an empty prompt).
    * ``business_hours``: ``callable(datetime, context) -> datetime`` snapping wake times.
    * ``events``: ``{name: {"direction": "inbound"|"outbound"}}``.
    * ``interrupts``: ``[{when, say?, handover?}]``, what the user may say in any state, a
      run asking or none: "talk to a person" handing the session over, every run staying
      where it was (a flow's own ``interrupts`` are heard first while it holds the floor).
    * ``should_retry``: ``callable(deferral) -> bool`` overriding a provider error's verdict.
    * ``public_events`` and ``public_starts``: the event names and the flow ids an end user (a
      session's owner, over HTTP or a websocket) may send and start; every other event and
      start comes only from server code or staff.
    """

    def __init__(
        self,
        flows: Sequence[Mapping[str, Any]],
        *,
        model: Model | None = None,
        fields: Mapping[str, Mapping[str, Any]] | None = None,
        actions: Mapping[str, Action] | None = None,
        conditions: Mapping[str, Condition] | None = None,
        idle: str | Mapping[str, Any] | None = None,
        business_hours: BusinessHours | None = None,
        events: Mapping[str, Mapping[str, Any]] | None = None,
        interrupts: Sequence[Mapping[str, Any]] = (),
        instructions: Sequence[Any] = (),
        tools: Sequence[Any] = (),
        should_retry: Callable[[Deferral], bool] | None = None,
        name: str = "",
        public_events: Sequence[str] = (),
        public_starts: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.model = model
        self.fields = check_fields(fields or {})
        self.actions: dict[str, Action] = dict(actions or {})
        self.conditions: dict[str, Condition] = dict(conditions or {})
        for kind, registry in (("actions", self.actions), ("conditions", self.conditions)):
            for key, value in registry.items():
                if not callable(value):
                    raise FlowConfigurationError(f"{kind}.{key}", "expected a callable")
        if idle is not None and idle != "silent" and not isinstance(idle, Mapping):
            raise FlowConfigurationError(
                "idle", "expected 'silent' or {prompt, instructions?, tools?}"
            )
        self.idle: str | Mapping[str, Any] = {"prompt": ""} if idle is None else idle
        self.business_hours = business_hours
        self.events: dict[str, Mapping[str, Any]] = dict(events or {})
        self.instructions = list(instructions)
        self.tools = list(tools)
        self.should_retry = should_retry
        self.flows: dict[str, Flow] = compile_flows(
            flows, self.fields, self.actions, self.conditions
        )
        self.interrupts = compile_interrupts(list(interrupts), self.fields, self.flows)
        check_references(self.flows, self.fields, self.interrupts, self.idle)
        check_templates(self.flows, self.fields, self.interrupts)
        check_labels(self.flows, self.fields, self.interrupts)
        self.public_events = frozenset(public_events)
        self.public_starts = frozenset(public_starts)
        unknown = sorted(self.public_starts - set(self.flows))
        if unknown:
            raise FlowConfigurationError("public_starts", f"no flow {unknown[0]!r}")

    def may_block(self, model: Model | None = None) -> bool:
        """Whether a turn of this agent (with ``model`` in place of its own) may wait on I/O:
        unless the model says ``blocking = False``, it may, and so may any code of the agent's
        own that a turn calls (actions, conditions, business hours, ``should_retry``)."""
        chosen = model or self.model
        return bool(
            getattr(chosen, "blocking", True)
            or self.actions
            or self.conditions
            or self.business_hours
            or self.should_retry
        )

    def fields_asked(self, runs: Iterable[Mapping[str, Any]]) -> frozenset[str]:
        """The fields the flows of ``runs`` collect: what a session's data holds because a
        flow asked for it (a value the model extracted while no such flow ran was not asked
        for)."""
        flows = [self.flows.get(run.get("flowId", "")) for run in runs]
        return frozenset(
            name
            for flow in flows
            if flow is not None
            for step in flow.steps
            for name in step.collect
        )

    def turn(self, **turn_input: Any) -> TurnResult:
        """``warlock_sessions.engine.turn`` with this agent."""
        from .turn import turn

        return turn(agent=self, **turn_input)

    def __repr__(self) -> str:
        return f"<Agent {self.name or ''} flows={list(self.flows)}>".replace("  ", " ")
