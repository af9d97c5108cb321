"""``turn()``: one input applied to one session, purely.

The turn is a pipeline over one :class:`~.state.TurnState`; the model is called only between
phases, so every phase is plain code::

    ingest ──▶ understand_request ─(model.understand)─▶ decide ──▶ advance
    (record      (what to ask)                           (route,      (move runs
     the input)                                           fields,      through steps)
                                                          branches)        │
                                                                           ▼
                        settle ◀─(model.speak, or a provider error as a deferral)
                        (apply the reply or retry; resume askers; arm silence)

It never mutates its inputs, never saves, and reads no clock or randomness of its own: the same
session, input, clock reading and model replies give a deep-equal :class:`TurnResult`, so a host
that lost a version race reloads, replays, and mints the same message and wake keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ..errors import InvalidInputError, NoModelError
from .agent import Agent
from .decide import decide, understand_request
from .handover import ACTIONS as HANDOVER_ACTIONS
from .ingest import ingest
from .isotime import iso_from_ms, ms_from_iso
from .ports import Deferral, Model, ProviderError, Spoken, deferral_of
from .session import Session, assert_session, json_problem
from .settle import settle, silence_wakes, speak_request
from .state import TurnState, ignored_line
from .steps import advance

INPUT_KINDS = ("message", "wake", "event", "start", "handover")


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, for hosts; tests inject ``FakeClock``."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class TurnResult:
    """What a turn produced; ``session`` keeps the loaded version (the store bumps it)."""

    session: Session
    changed: bool
    messages: list[dict[str, Any]]
    schedule: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]
    started: list[dict[str, Any]]
    ended: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    llm_calls: int
    code: str | None = None
    #: Keys of wakes scheduled by earlier turns that this turn no longer wants: the timer or
    #: retry of a run that ended, or a silence the user broke or no live run waits out. A host
    #: drops them (firing one would only be ignored, after waking the worker for nothing).
    retired: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: How deeply an input's payload, a start's input or a context may nest.
MAX_INPUT_DEPTH = 32
#: The longest message id, event or start key, or wake key (they are stored keyed).
MAX_KEY_LENGTH = 255


def _require(value: object, check: type | tuple[type, ...], where: str, what: str) -> None:
    if not isinstance(value, check) or (isinstance(value, bool) and check is int):
        raise InvalidInputError(where, f"must be {what}, not {_shown(value)}")


def _shown(value: object) -> str:
    return "a deeply nested value" if isinstance(value, dict | list) else f"{value!r:.80}"


def _require_key(value: object, where: str, what: str) -> None:
    _require(value, str, where, what)
    if not isinstance(value, str) or not value or len(value) > MAX_KEY_LENGTH:
        raise InvalidInputError(where, f"must be 1 to {MAX_KEY_LENGTH} characters long")


def _require_json(value: object, where: str) -> None:
    """Refuse what no store could keep (checked before the turn, so never after a save)."""
    problem = json_problem(value, MAX_INPUT_DEPTH)
    if problem is not None:
        path, why = problem
        raise InvalidInputError(f"{where}{path}", why)


def _require_moment(value: object, where: str) -> None:
    _require(value, str, where, "an ISO-8601 date and time")
    try:
        iso_from_ms(ms_from_iso(str(value)))
    except (ValueError, OverflowError, OSError):
        raise InvalidInputError(
            where, f"must be an ISO-8601 date and time, not {value!r:.80}"
        ) from None


def check_input(
    message: Any = None,
    wake: Any = None,
    event: Any = None,
    start: Any = None,
    handover: Any = None,
) -> tuple[str, dict[str, Any]]:
    """The input ``turn`` would apply, as its kind and a checked copy; raises
    ``InvalidInputError`` naming the field for anything ``turn`` would refuse. Hosts call it
    before they act on an input at all (claim a session, open a transaction)."""
    given = [
        (kind, value)
        for kind, value in zip(INPUT_KINDS, (message, wake, event, start, handover), strict=True)
        if value is not None
    ]
    if len(given) != 1:
        raise InvalidInputError(
            "input", "give exactly one of message=, wake=, event=, start=, handover="
        )
    kind, value = given[0]
    if kind == "wake":
        _require(value, str, "wake", "a wake key (text)")
        if len(value) > 2 * MAX_KEY_LENGTH:
            raise InvalidInputError("wake", "is longer than any wake key")
        _require_json(value, "wake")
        return kind, {"key": value}
    if kind == "message" and isinstance(value, str):
        value = {"text": value}
    _require(value, Mapping, kind, "an object")
    what = dict(value)
    if kind == "message":
        _require(what.get("text"), str, "message.text", "text")
        if what.get("id") is not None:
            _require_key(what["id"], "message.id", "text")
        else:
            what.pop("id", None)
        if what.get("at") is not None:
            _require_moment(what["at"], "message.at")
        else:
            what.pop("at", None)
    elif kind == "handover":
        _check_handover(what)
    elif kind == "event":
        _require_key(what.get("name"), "event.name", "an event name")
        _require_key(what.get("key"), "event.key", "a key (text)")
        _require(what.setdefault("hop", 0), int, "event.hop", "a whole number")
    else:
        _require_key(what.get("flow"), "start.flow", "a flow id")
        _require_key(what.get("key"), "start.key", "a key (text)")
        _require(what.setdefault("hop", 0), int, "start.hop", "a whole number")
    _require_json(what, kind)
    return kind, what


def _check_handover(what: dict[str, Any]) -> None:
    action = what.get("action")
    if action not in HANDOVER_ACTIONS:
        raise InvalidInputError(
            "handover.action", f"must be one of {', '.join(HANDOVER_ACTIONS)}, not {_shown(action)}"
        )
    _require_key(what.get("key"), "handover.key", "a key (text)")
    for name in ("by", "reason"):
        if what.get(name) is not None:
            _require_key(what[name], f"handover.{name}", "text")
        else:
            what.pop(name, None)
    if action in ("take", "reply") and "by" not in what:
        raise InvalidInputError("handover.by", "must name the person who takes the session")
    if action == "reply":
        _require(what.get("text"), str, "handover.text", "text")
        if not what["text"].strip():
            raise InvalidInputError("handover.text", "must say something")
    elif "text" in what:
        raise InvalidInputError("handover.text", "is only for a reply")


def turn(
    *,
    agent: Agent,
    session_id: str,
    session: Session | None = None,
    message: Mapping[str, Any] | str | None = None,
    wake: str | None = None,
    event: Mapping[str, Any] | None = None,
    start: Mapping[str, Any] | None = None,
    handover: Mapping[str, Any] | None = None,
    context: Any = None,
    history: Any = None,
    silenced: str | Mapping[str, Any] | None = None,
    anchors: Mapping[str, Any] | None = None,
    claims: Mapping[str, Any] | None = None,
    clock: Clock | None = None,
    model: Model | None = None,
) -> TurnResult:
    """Apply exactly one input (``message``, ``wake``, ``event``, ``start`` or ``handover``)
    to ``session``.

    ``session`` is the stored blob (``None`` for a conversation's first turn); it is checked
    with ``assert_session`` and never changed. ``model`` defaults to ``agent.model`` and is
    called at most once to understand a message and once to speak (plus tool rounds).
    """
    _require(session_id, str, "session_id", "text")
    kind, what = check_input(message, wake, event, start, handover)
    if session is not None:
        assert_session(session, session_id)
    state = TurnState(
        agent,
        session_id=session_id,
        session=session,
        kind=kind,
        what=what,
        now=(clock or SystemClock()).now(),
        context=context,
        history=history,
        silenced=silenced,
        anchors=anchors,
        claims=claims,
    )
    ingest(state)
    chosen = model or agent.model
    request = understand_request(state)
    understanding = _model(chosen).understand(request) if request is not None else None
    decide(state, understanding)
    talk = advance(state)
    outcome: Spoken | Deferral | None = None
    if talk is not None:
        try:
            outcome = _model(chosen).speak(speak_request(state, talk))
        except ProviderError as error:
            outcome = deferral_of(error)
    settle(state, outcome)
    return TurnResult(
        session=state.session,
        changed=state.changed(),
        messages=state.messages,
        schedule=state.schedule,
        outcomes=state.outcomes,
        started=state.started,
        ended=state.ended,
        skipped=state.skipped,
        llm_calls=state.llm_calls,
        code=state.code,
        retired=state.retired,
    )


def duplicate_input(session: Session, key: str, clock: Clock | None = None) -> TurnResult:
    """What ``turn`` returns for an input applied before, for a host that knows it was (its
    record of applied inputs outlives the session's own window of recent ids)."""
    at = iso_from_ms(round((clock or SystemClock()).now().timestamp() * 1000))
    return TurnResult(
        session=session,
        changed=False,
        messages=[],
        schedule=[],
        outcomes=[ignored_line("duplicate-input", key, at)],
        started=[],
        ended=[],
        skipped=[],
        llm_calls=0,
        code="duplicate-input",
    )


def _model(model: Model | None) -> Model:
    if model is None:
        raise NoModelError("this turn needs a model: pass model= or build the Agent with one")
    return model


def pending_wakes(
    agent: Agent,
    session: Session,
    *,
    context: Any = None,
    anchors: Mapping[str, Any] | None = None,
    claims: Mapping[str, Any] | None = None,
    clock: Clock | None = None,
) -> list[dict[str, Any]]:
    """Every wake ``session`` waits on, recomputed read-only: parked runs, then silence flows."""
    state = TurnState(
        agent,
        session_id=session["id"],
        session=session,
        kind="wake",
        what={"key": ""},
        now=(clock or SystemClock()).now(),
        context=context,
        anchors=anchors,
        claims=claims,
    )
    parked = [
        {"key": run["waiting"]["key"], "at": run["waiting"]["until"]}
        for run in state.runs
        if run["status"] == "waiting"
        and run.get("waiting", {}).get("key")
        and run["waiting"].get("until")
    ]
    return parked + silence_wakes(state)
