"""Flow definitions: the format of docs/engine.md (plain dicts/JSON, camelCase keys as upstream),
validated once when the agent is built and compiled into small read-only objects.

Every mistake raises :class:`FlowConfigurationError` naming the path of the bad key, such as
``flows[2].steps[1].wait: '2x' is not a duration (...)``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from ..errors import FlowConfigurationError
from .durations import is_duration, parse_duration
from .fields import DEFAULT_MAX_ASKS, FIELD_FORMATS, FIELD_TYPES, real_time
from .predicates import BUILT_IN, Predicate

TRIGGER_KINDS = ("message", "mention", "silence", "event")
#: Every key each part of a definition takes (docs/agents.md is checked against these): a key
#: outside them is a typo until proven otherwise, refused with the closest valid one.
FLOW_KEYS = frozenset(
    {
        "id",
        "name",
        "on",
        "anchor",
        "while",
        "clearOnStart",
        "steps",
        "onEnd",
        "instructions",
        "tools",
        "interrupts",
        "language",
    }
)
STEP_KEYS = {
    "talk": frozenset(
        {
            "id",
            "then",
            "prompt",
            "collect",
            "ask",
            "question",
            "maxAsks",
            "branches",
            "tools",
            "amend",
            "giveUp",
            "onGiveUp",
            "instructions",
        }
    ),
    "say": frozenset({"id", "then", "say", "media", "once"}),
    "do": frozenset({"id", "then", "do", "with", "onFail"}),
    "wait": frozenset({"id", "then", "wait", "businessHours", "else", "branches"}),
    "wait_event": frozenset({"id", "then", "wait", "else"}),
    "if": frozenset({"id", "then", "if", "else"}),
    "handover": frozenset({"id", "then", "handover"}),
}
ALL_STEP_KEYS = frozenset().union(*STEP_KEYS.values())
FIELD_KEYS = frozenset(
    {
        "type",
        "enum",
        "ask",
        "extract",
        "format",
        "min",
        "max",
        "pattern",
        "label",
        "invalid",
        "giveUp",
        "askAgain",
        "description",
        "required",
        "stuck",
    }
)
TRIGGER_OPTIONS = frozenset({"if", "repeat", "after", "businessHours", "extract"})
TRIGGER_KEYS = TRIGGER_OPTIONS | frozenset(TRIGGER_KINDS)
INTERRUPT_KEYS = frozenset({"when", "say", "then", "handover"})
TALK_BRANCH_KEYS = frozenset({"when", "if", "then"})
WAIT_BRANCH_KEYS = frozenset({"if", "then"})
EVENT_WAIT_KEYS = frozenset({"event", "upTo"})
NEXT_KEYS = {"step": frozenset({"step", "clear"}), "flow": frozenset({"flow", "input"})}
ON_END = frozenset({"end", "stay", "reset"})
_ID = re.compile(r"^[^:#\s]+$")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TEMPLATE = re.compile(r"\{\{")

Repeat = str | int  # "once", "always", or a cooldown in milliseconds


@dataclass(frozen=True)
class Trigger:
    kind: str
    phrases: tuple[str, ...] = ()
    silence_ms: int = 0
    event: str = ""
    after_ms: int = 0
    has_after: bool = False
    condition: Predicate | None = None
    repeat: Repeat = "once"
    business_hours: bool = False
    extract: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Step:
    id: str
    kind: str  # talk, say, do, wait, wait_event, if, handover
    raw: Mapping[str, Any]

    @property
    def then(self) -> Any:
        return self.raw.get("then")

    @property
    def outcome_kind(self) -> str:
        """The ``kind`` of this step's outcome lines."""
        if self.kind == "talk":
            return "collect" if self.raw.get("collect") else "prompt"
        if self.kind in ("wait", "wait_event"):
            return "wait"
        return self.kind

    @property
    def collect(self) -> list[str]:
        return self.raw.get("collect") or []

    @property
    def max_asks(self) -> int:
        return int(self.raw.get("maxAsks", DEFAULT_MAX_ASKS))


@dataclass(frozen=True)
class Flow:
    id: str
    raw: Mapping[str, Any]
    triggers: tuple[Trigger, ...]
    steps: tuple[Step, ...]
    on_end: str = "end"
    anchor: str | None = None
    premise: Predicate | None = None
    clear_on_start: tuple[str, ...] = ()
    positions: Mapping[str, int] = field(default_factory=dict)

    def step(self, step_id: str | None) -> Step | None:
        position = self.positions.get(step_id) if step_id is not None else None
        return None if position is None else self.steps[position]

    def after(self, step: Step) -> Step | None:
        """The step listed after ``step``, if any."""
        position = self.positions[step.id] + 1
        return self.steps[position] if position < len(self.steps) else None

    def trigger_of(self, kind: str) -> Trigger | None:
        return next((trigger for trigger in self.triggers if trigger.kind == kind), None)

    @property
    def anchored(self) -> bool:
        return self.anchor is not None and self.anchor != "session"


class _Checker:
    """Walks a flow list once, raising on the first mistake with its path."""

    def __init__(
        self,
        fields: Mapping[str, Any],
        actions: Mapping[str, Callable[..., Any]],
        conditions: Mapping[str, Callable[..., Any]],
        flow_ids: set[str],
    ) -> None:
        self.fields = fields
        self.actions = actions
        self.conditions = conditions
        self.flow_ids = flow_ids

    def fail(self, path: str, why: str) -> FlowConfigurationError:
        return FlowConfigurationError(path, why)

    def mapping(self, value: object, path: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected an object, got {type(value).__name__}")
        return value

    def text_list(self, value: object, path: str) -> list[str]:
        if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
            raise self.fail(path, "expected a list of text")
        return list(value)

    def duration(self, value: object, path: str) -> int:
        if not is_duration(value):
            raise self.fail(
                path, f"{value!r} is not a duration (a number then s, m, h or d, like '30s')"
            )
        return parse_duration(value, path)

    def predicate(self, value: object, path: str) -> Predicate:
        if callable(value):
            return value
        spec = self.mapping(value, path)
        for name, arg in spec.items():
            where = f"{path}.{name}"
            if name in ("equals", "input", "context"):
                self.mapping(arg, where)
            elif name == "known":
                self.text_list(arg, where)
            elif name == "silenced":
                if not isinstance(arg, bool):
                    raise self.fail(where, "expected true or false")
            elif name == "running":
                if not isinstance(arg, bool):
                    self.text_list(arg, where)
            elif name not in self.conditions:
                known = ", ".join(sorted(BUILT_IN | set(self.conditions)))
                raise self.fail(
                    where,
                    f"unknown condition {name!r} (known: {known}); register it "
                    "in the agent's conditions",
                )
        return spec

    def identifier(self, value: object, path: str, what: str) -> str:
        if not isinstance(value, str) or not _ID.match(value):
            raise self.fail(path, f"{what} must be text without ':', '#' or spaces, got {value!r}")
        return value

    def trigger(self, raw: object, path: str) -> Trigger:
        spec = self.mapping(raw, path)
        kinds = [kind for kind in TRIGGER_KINDS if kind in spec]
        if not kinds:  # a mistyped kind ("mesage") is named, with the key it may mean
            refuse_unknown_keys(spec, TRIGGER_KEYS, path)
        if len(kinds) != 1:
            raise self.fail(path, "a trigger has exactly one of message, mention, silence, event")
        kind = kinds[0]
        refuse_unknown_keys(spec, TRIGGER_OPTIONS | {kind}, path)
        options: dict[str, Any] = {"kind": kind}
        if kind in ("message", "mention"):
            options["phrases"] = tuple(self.text_list(spec[kind], f"{path}.{kind}"))
        elif kind == "silence":
            options["silence_ms"] = self.duration(spec["silence"], f"{path}.silence")
        else:
            if not isinstance(spec["event"], str) or not spec["event"]:
                raise self.fail(f"{path}.event", "expected an event name")
            options["event"] = spec["event"]
        if "after" in spec:
            if kind != "event":
                raise self.fail(f"{path}.after", "only event triggers take after")
            options["after_ms"] = self.duration(spec["after"], f"{path}.after")
            options["has_after"] = True
        if "if" in spec:
            options["condition"] = self.predicate(spec["if"], f"{path}.if")
        if "businessHours" in spec:
            options["business_hours"] = bool(spec["businessHours"])
        if "extract" in spec:
            if kind != "mention":
                raise self.fail(f"{path}.extract", "only mention triggers take extract")
            options["extract"] = self.mapping(spec["extract"], f"{path}.extract")
        options["repeat"] = self.repeat(spec.get("repeat"), kind, f"{path}.repeat")
        return Trigger(**options)

    def repeat(self, value: object, kind: str, path: str) -> Repeat:
        if value is None:
            return "always" if kind == "event" else "once"
        if value in ("once", "always"):
            return value
        if isinstance(value, Mapping) and set(value) == {"cooldown"}:
            return self.duration(value["cooldown"], f"{path}.cooldown")
        raise self.fail(path, f"expected 'once', 'always' or {{cooldown: duration}}, got {value!r}")

    def step(self, raw: object, path: str) -> Step:
        spec = self.mapping(raw, path)
        step_id = self.identifier(spec.get("id"), f"{path}.id", "a step id")
        if step_id == "end":
            raise self.fail(f"{path}.id", "'end' is reserved for the end of the flow")
        kinds = [
            key
            for key in ("prompt", "collect", "say", "do", "wait", "if", "handover")
            if key in spec
        ]
        if "prompt" in kinds and "collect" in kinds:
            kinds.remove("prompt")
        if not kinds:  # a mistyped kind ("colect") is named, with the key it may mean
            refuse_unknown_keys(spec, ALL_STEP_KEYS, path)
        if len(kinds) != 1:
            raise self.fail(
                path, "a step has exactly one of prompt/collect, say, do, wait, if, handover"
            )
        check = {
            "prompt": self.talk,
            "collect": self.talk,
            "say": self.say,
            "do": self.do,
            "wait": self.wait,
            "if": self.condition,
            "handover": self.handover,
        }[kinds[0]]
        kind = check(spec, path)
        refuse_unknown_keys(spec, STEP_KEYS[kind], path)
        return Step(id=step_id, kind=kind, raw=spec)

    def text(self, value: object, path: str, what: str = "expected text") -> None:
        check_text(value, path, what)

    def say(self, spec: Mapping[str, Any], path: str) -> str:
        self.text(spec["say"], f"{path}.say", "expected the text to send")
        return "say"

    def do(self, spec: Mapping[str, Any], path: str) -> str:
        if spec["do"] not in self.actions:
            raise self.fail(
                f"{path}.do", f"unknown action {spec['do']!r}; register it in the agent's actions"
            )
        if "with" in spec:
            self.mapping(spec["with"], f"{path}.with")
        return "do"

    def wait(self, spec: Mapping[str, Any], path: str) -> str:
        """A timer (``wait: "2h"``, with reply ``branches``) or an event (``wait: {event}``)."""
        if isinstance(spec["wait"], Mapping):
            wait = spec["wait"]
            refuse_unknown_keys(wait, EVENT_WAIT_KEYS, f"{path}.wait")
            if not isinstance(wait.get("event"), str) or not wait["event"]:
                raise self.fail(f"{path}.wait.event", "expected an event name")
            if "upTo" in wait:
                self.duration(wait["upTo"], f"{path}.wait.upTo")
            return "wait_event"
        self.duration(spec["wait"], f"{path}.wait")
        for index, branch in enumerate(spec.get("branches") or []):
            branch = self.mapping(branch, f"{path}.branches[{index}]")
            refuse_unknown_keys(branch, WAIT_BRANCH_KEYS, f"{path}.branches[{index}]")
            if "if" not in branch:
                raise self.fail(f"{path}.branches[{index}]", "a wait branch needs if")
            self.predicate(branch["if"], f"{path}.branches[{index}].if")
        return "wait"

    def handover(self, spec: Mapping[str, Any], path: str) -> str:
        self.handover_reason(spec["handover"], f"{path}.handover")
        return "handover"

    def handover_reason(self, value: object, path: str) -> None:
        """``true``, or the reason people are told (text: the inbox shows it)."""
        if value is not True and (not isinstance(value, str) or not value.strip()):
            raise self.fail(path, "expected true or the reason (text)")

    def condition(self, spec: Mapping[str, Any], path: str) -> str:
        self.predicate(spec["if"], f"{path}.if")
        return "if"

    def talk(self, spec: Mapping[str, Any], path: str) -> str:
        self.declared_fields(spec.get("collect") or [], f"{path}.collect")
        if "maxAsks" in spec and (type(spec["maxAsks"]) is not int or spec["maxAsks"] < 1):
            raise self.fail(f"{path}.maxAsks", "expected a whole number >= 1")
        for key in ("prompt", "ask", "question", "giveUp"):
            if key in spec:
                self.text(spec[key], f"{path}.{key}")
        self.declared_fields(spec.get("amend") or [], f"{path}.amend")
        for index, branch in enumerate(spec.get("branches") or []):
            self.talk_branch(branch, f"{path}.branches[{index}]")
        return "talk"

    def declared_fields(self, names: object, path: str) -> None:
        """A list of the agent's field names."""
        for index, name in enumerate(self.text_list(names, path)):
            if name not in self.fields:
                raise self.fail(
                    f"{path}[{index}]", f"unknown field {name!r}; declare it in the agent's fields"
                )

    def talk_branch(self, branch: object, where: str) -> None:
        branch = self.mapping(branch, where)
        refuse_unknown_keys(branch, TALK_BRANCH_KEYS, where)
        if ("when" in branch) == ("if" in branch):
            raise self.fail(where, "a branch has exactly one of when (judged by the model) or if")
        if "if" in branch:
            self.predicate(branch["if"], f"{where}.if")
        elif not isinstance(branch["when"], str):
            raise self.fail(f"{where}.when", "expected text")

    def next(self, value: object, path: str, step_ids: set[str]) -> None:
        if isinstance(value, str):
            if value != "end" and value not in step_ids:
                raise self.fail(path, f"no step {value!r} in this flow")
            return
        spec = self.mapping(value, path)
        for kind, allowed in NEXT_KEYS.items():
            if kind in spec:
                refuse_unknown_keys(spec, allowed, path)
        if "step" in spec:
            if spec["step"] not in step_ids:
                raise self.fail(f"{path}.step", f"no step {spec['step']!r} in this flow")
            self.text_list(spec.get("clear", []), f"{path}.clear")
        elif "flow" in spec:
            target = spec["flow"]
            if not isinstance(target, str):
                raise self.fail(f"{path}.flow", "expected a flow id")
            if not _TEMPLATE.search(target) and target not in self.flow_ids:
                raise self.fail(f"{path}.flow", f"no flow {target!r} on this agent")
        else:
            raise self.fail(path, "expected a step id, 'end', {step, clear?} or {flow, input?}")

    def interrupts(self, value: object, path: str, step_ids: set[str]) -> None:
        """``[{when, say?, then?, handover?}]``: ways out of the flow the user may take at any
        step; one with ``handover`` gives the session to people, its run staying where it was
        (or moving to ``then``) until they hand it back."""
        if not isinstance(value, list | tuple):
            raise self.fail(path, "expected a list of {when, say?, then?, handover?}")
        for index, raw in enumerate(value):
            where = f"{path}[{index}]"
            interrupt = self.mapping(raw, where)
            refuse_unknown_keys(interrupt, INTERRUPT_KEYS, where)
            if "when" in interrupt and not isinstance(interrupt["when"], str):
                raise self.fail(f"{where}.when", "expected text")
            if "say" in interrupt:
                self.text(interrupt["say"], f"{where}.say")
            if not interrupt.get("when"):
                raise self.fail(f"{where}.when", "expected what the user says to leave")
            if "then" in interrupt:
                self.next(interrupt["then"], f"{where}.then", step_ids)
            if "handover" in interrupt:
                self.handover_reason(interrupt["handover"], f"{where}.handover")

    def steps(self, raw_steps: object, path: str) -> tuple[Step, ...]:
        """A flow's steps, with unique ids, every ``then``/``else``/``onFail`` and branch
        pointing at a step of the flow, ``end`` or another flow."""
        if not isinstance(raw_steps, list | tuple):
            raise self.fail(path, "expected a list of steps")
        steps = tuple(self.step(step, f"{path}[{i}]") for i, step in enumerate(raw_steps))
        step_ids: set[str] = set()
        for index, step in enumerate(steps):
            if step.id in step_ids:
                raise self.fail(f"{path}[{index}].id", f"step id {step.id!r} is used twice")
            step_ids.add(step.id)
        for index, step in enumerate(steps):
            self.targets(step, f"{path}[{index}]", step_ids)
        return steps

    def targets(self, step: Step, where: str, step_ids: set[str]) -> None:
        for key in ("then", "else", "onFail", "onGiveUp"):
            if key in step.raw:
                self.next(step.raw[key], f"{where}.{key}", step_ids)
        for b, branch in enumerate(step.raw.get("branches") or []):
            if "then" not in branch:
                raise self.fail(f"{where}.branches[{b}]", "a branch needs then")
            self.next(branch["then"], f"{where}.branches[{b}].then", step_ids)

    def flow(self, raw: object, path: str) -> Flow:
        spec = self.mapping(raw, path)
        flow_id = self.identifier(spec.get("id"), f"{path}.id", "a flow id")
        refuse_unknown_keys(spec, FLOW_KEYS, path)
        steps = self.steps(spec.get("steps", []), f"{path}.steps")
        raw_triggers = spec.get("on", [])
        if not isinstance(raw_triggers, list | tuple):
            raise self.fail(f"{path}.on", "expected a list of triggers")
        triggers = tuple(self.trigger(t, f"{path}.on[{i}]") for i, t in enumerate(raw_triggers))
        on_end = spec.get("onEnd", "end")
        if on_end not in ON_END:
            raise self.fail(f"{path}.onEnd", f"expected end, stay or reset, got {on_end!r}")
        anchor = spec.get("anchor")
        if anchor is not None and not isinstance(anchor, str):
            raise self.fail(f"{path}.anchor", "expected an anchor name")
        premise = self.predicate(spec["while"], f"{path}.while") if "while" in spec else None
        self.interrupts(
            spec.get("interrupts", []), f"{path}.interrupts", {step.id for step in steps}
        )
        clear = tuple(self.text_list(spec.get("clearOnStart", []), f"{path}.clearOnStart"))
        return Flow(
            id=flow_id,
            raw=spec,
            triggers=triggers,
            steps=steps,
            on_end=on_end,
            anchor=anchor,
            premise=premise,
            clear_on_start=clear,
            positions={step.id: index for index, step in enumerate(steps)},
        )


def refuse_unknown_keys(spec: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
    """``FlowConfigurationError`` at the first key outside ``allowed`` (in sorted order),
    naming the closest valid key."""
    unknown = sorted(key for key in spec if key not in allowed)
    if not unknown:
        return
    key = unknown[0]
    raise FlowConfigurationError(f"{path}.{key}", f"unknown key; {closest_hint(key, allowed)}")


def closest_hint(key: Any, allowed: Iterable[str], known: str = "known keys") -> str:
    """What a misspelt ``key`` was likely meant to be: ``did you mean 'x'?``, or, when
    nothing is close, every ``allowed`` one."""
    close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else f"{known}: {', '.join(sorted(allowed))}"


def check_text(value: object, path: str, what: str = "expected text") -> None:
    """Text a person reads: a string, or one per language (``{"en": …, "pt": …}``)."""
    if isinstance(value, str):
        return
    if (
        isinstance(value, Mapping)
        and value
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    ):
        return
    raise FlowConfigurationError(path, f"{what}, or one per language like {{'en': ..., 'pt': ...}}")


def check_fields(fields: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(fields, Mapping):
        raise FlowConfigurationError("fields", "expected an object of field definitions")
    for name, definition in fields.items():
        path = f"fields.{name}"
        if not isinstance(definition, Mapping):
            raise FlowConfigurationError(path, "expected an object like {type: 'string'}")
        refuse_unknown_keys(definition, FIELD_KEYS, path)
        if definition.get("type") not in FIELD_TYPES:
            raise FlowConfigurationError(
                f"{path}.type", f"expected one of {', '.join(sorted(FIELD_TYPES))}"
            )
        if "enum" in definition and not isinstance(definition["enum"], list | tuple):
            raise FlowConfigurationError(f"{path}.enum", "expected a list of options")
        if definition.get("extract", "anywhere") not in ("anywhere", "asked"):
            raise FlowConfigurationError(f"{path}.extract", "expected anywhere or asked")
        if definition.get("format", "email") not in FIELD_FORMATS:
            raise FlowConfigurationError(
                f"{path}.format", f"expected one of {', '.join(sorted(FIELD_FORMATS))}"
            )
        required = definition.get("required", False)
        if not (isinstance(required, bool) or required == "handover"):
            raise FlowConfigurationError(
                f"{path}.required", "expected true, false or 'handover' (to people when stuck)"
            )
        if "format" in definition and definition["type"] != "string":
            raise FlowConfigurationError(
                f"{path}.format", "only text fields take a format: give it type 'string'"
            )
        _check_constraints(definition, path)
    return dict(fields)


def _check_constraints(definition: Mapping[str, Any], path: str) -> None:
    """``min``/``max`` fit the field, ``pattern`` compiles, and the sentences are text."""
    for key in ("min", "max"):
        if key in definition:
            _check_bound(definition, definition[key], f"{path}.{key}")
    if "pattern" in definition:
        if definition["type"] != "string":
            raise FlowConfigurationError(f"{path}.pattern", "only text fields take a pattern")
        try:
            regex.compile(definition["pattern"])
        except (regex.error, TypeError) as error:
            raise FlowConfigurationError(
                f"{path}.pattern", f"not a regular expression: {error}"
            ) from None
    for key in ("ask", "askAgain", "label", "invalid", "giveUp", "stuck"):
        if key in definition:
            check_text(definition[key], f"{path}.{key}")


def _check_bound(definition: Mapping[str, Any], bound: Any, path: str) -> None:
    """A ``min`` or ``max``: a number, an ISO date or "today" for a date, "HH:MM" for a time."""
    form = definition.get("format")
    if form == "date":
        if bound != "today" and not (isinstance(bound, str) and _ISO_DATE.fullmatch(bound)):
            raise FlowConfigurationError(path, "expected an ISO date or 'today'")
    elif form == "time":
        if real_time(bound) != bound:
            raise FlowConfigurationError(path, "expected a time like '09:00'")
    elif definition["type"] not in ("number", "integer"):
        raise FlowConfigurationError(path, "only number, date and time fields take min and max")
    elif isinstance(bound, bool) or not isinstance(bound, int | float):
        raise FlowConfigurationError(path, "expected a number")


def compile_flows(
    flows: Sequence[object],
    fields: Mapping[str, Any],
    actions: Mapping[str, Callable[..., Any]],
    conditions: Mapping[str, Callable[..., Any]],
) -> dict[str, Flow]:
    """Validate ``flows`` (docs/engine.md) and return them by id, in declaration order."""
    if not isinstance(flows, list | tuple):
        raise FlowConfigurationError("flows", "expected a list of flows")
    ids = {flow.get("id") for flow in flows if isinstance(flow, Mapping)}
    checker = _Checker(fields, actions, conditions, {i for i in ids if isinstance(i, str)})
    compiled: dict[str, Flow] = {}
    for index, raw in enumerate(flows):
        flow = checker.flow(raw, f"flows[{index}]")
        if flow.id in compiled:
            raise FlowConfigurationError(f"flows[{index}].id", f"flow id {flow.id!r} is used twice")
        compiled[flow.id] = flow
    return compiled


def compile_interrupts(
    interrupts: object,
    fields: Mapping[str, Any],
    flow_ids: Iterable[str],
) -> list[Mapping[str, Any]]:
    """An agent's own ``interrupts`` (``[{when, say?, handover?}]``): heard in any state, each
    says its sentence and may hand the session over, moving no run (a flow's interrupts are
    the ways out of that flow)."""
    _Checker(fields, {}, {}, set(flow_ids)).interrupts(interrupts, "interrupts", set())
    assert isinstance(interrupts, list | tuple)  # the checker refused anything else
    for index, interrupt in enumerate(interrupts):
        where = f"interrupts[{index}]"
        if "then" in interrupt:
            raise FlowConfigurationError(
                f"{where}.then", "an agent's interrupt moves no run; a flow's interrupts can"
            )
        if not interrupt.get("say") and not interrupt.get("handover"):
            raise FlowConfigurationError(where, "expected a say, a handover or both")
    return [dict(interrupt) for interrupt in interrupts]
