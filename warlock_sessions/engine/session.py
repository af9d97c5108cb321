"""The v4 session blob: its shape, the check every store runs, 3.x migration and the JSON codec.

A session is one conversation's state as one JSON-native dict with camelCase keys exactly as
upstream @falai/agent writes them, so a TypeScript host and a Django host can share a store.
The host loads it, hands it to ``turn()``, and saves what comes back with the version it loaded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from ..errors import InvalidSessionError
from .isotime import to_iso

SESSION_FORMAT = 4

RunStatus = Literal["running", "asking", "waiting", "suspended"]
TriggerKind = Literal["message", "mention", "silence", "event", "start", "flow"]
RUN_STATUSES: frozenset[str] = frozenset({"running", "asking", "waiting", "suspended"})


class Trigger(TypedDict):
    kind: TriggerKind
    key: str
    payload: NotRequired[Any]


class Waiting(TypedDict):
    kind: Literal["timer", "event"]
    setAt: str
    key: NotRequired[str]
    until: NotRequired[str]
    event: NotRequired[str]


class StepOutcome(TypedDict):
    kind: str
    status: str
    at: str
    runId: NotRequired[str]
    flowId: NotRequired[str]
    stepId: NotRequired[str]
    key: NotRequired[str]
    code: NotRequired[str]
    message: NotRequired[str]
    detail: NotRequired[str]
    next: NotRequired[str]
    until: NotRequired[str]
    llmCalls: NotRequired[int]


class Run(TypedDict):
    id: str
    flowId: str
    anchor: str
    dedupeKey: str
    stepId: str | None
    status: RunStatus
    trigger: Trigger
    hop: int
    startedAt: str
    asked: dict[str, int]
    visits: dict[str, int]
    outcomes: list[StepOutcome]
    input: NotRequired[Any]
    suspendedAt: NotRequired[str]
    staying: NotRequired[Literal[True]]
    waiting: NotRequired[Waiting]


class Claim(TypedDict):
    at: str


class Session(TypedDict):
    id: str
    v: Literal[4]
    version: int
    data: dict[str, Any]
    runs: list[Run]
    claims: dict[str, Claim]
    inputs: list[str]
    metadata: dict[str, Any]
    lastUserAt: NotRequired[str]
    lastAssistantAt: NotRequired[str]
    history: NotRequired[list[Any]]


def new_session(session_id: str) -> Session:
    """A fresh, empty v4 session at version 0 (what a first turn starts from)."""
    return {
        "id": session_id,
        "v": SESSION_FORMAT,
        "version": 0,
        "data": {},
        "runs": [],
        "claims": {},
        "inputs": [],
        "metadata": {},
    }


_MISSING = object()


def _describe(value: object) -> str:
    """A short description of a value for error messages, as upstream words them."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _is_whole(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_record(value: object) -> bool:
    return isinstance(value, dict)


def assert_session(blob: object, session_id: str) -> Session:
    """Check that ``blob`` is a readable v4 session with this id and return its session keys.

    Raises :class:`InvalidSessionError` naming the first thing that is off. A store runs this
    on every load (and on every save), and it never migrates: a 3.x row needs
    :func:`migrate_session`. Keys a store may add around the session are dropped.
    """

    def bad(why: str) -> InvalidSessionError:
        return InvalidSessionError(session_id, why)

    if not _is_record(blob):
        raise bad(f"expected an object, got {_describe(blob)}")
    assert isinstance(blob, dict)
    v = blob.get("v", _MISSING)
    if type(v) is not int or v != SESSION_FORMAT:
        raise bad(f"v is {_describe(v)}, expected 4")
    if blob.get("id") != session_id:
        raise bad(f'id is {_describe(blob.get("id", _MISSING))}, expected "{session_id}"')

    version = blob.get("version", _MISSING)
    if not _is_whole(version):
        raise bad(f"version is {_describe(version)}, expected a whole number")
    for key in ("data", "metadata"):
        if not _is_record(blob.get(key)):
            raise bad(f"{key} is {_describe(blob.get(key, _MISSING))}, expected an object")
    runs = blob.get("runs", _MISSING)
    if not isinstance(runs, list):
        raise bad(f"runs is {_describe(runs)}, expected a list")
    claims = blob.get("claims")
    if not _is_record(claims) or not all(
        _is_record(claim) and isinstance(claim.get("at"), str) for claim in claims.values()
    ):
        raise bad("claims is not a map of { at }")
    inputs = blob.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(item, str) for item in inputs):
        raise bad("inputs is not a list of ids")
    history = blob.get("history", _MISSING)
    if history is not _MISSING and not isinstance(history, list):
        raise bad(f"history is {_describe(history)}, expected a list")
    for key in ("lastUserAt", "lastAssistantAt"):
        value = blob.get(key, _MISSING)
        if value is not _MISSING and not isinstance(value, str):
            raise bad(f"{key} is not text")

    for index, run in enumerate(runs):
        _check_run(run, index, bad)

    session: dict[str, Any] = {
        "id": session_id,
        "v": SESSION_FORMAT,
        "version": version,
        "data": blob["data"],
        "runs": runs,
        "claims": claims,
        "inputs": inputs,
        "metadata": blob["metadata"],
    }
    for key in ("lastUserAt", "lastAssistantAt", "history"):
        if key in blob:
            session[key] = blob[key]
    return session  # type: ignore[return-value]


def _check_run(run: object, index: int, bad: Callable[[str], InvalidSessionError]) -> None:
    at = f"runs[{index}]"
    if not _is_record(run):
        raise bad(f"{at} is {_describe(run)}, expected an object")
    assert isinstance(run, dict)
    for key in ("id", "flowId", "anchor", "dedupeKey", "status", "startedAt"):
        if not isinstance(run.get(key), str):
            raise bad(f"{at}.{key} is {_describe(run.get(key, _MISSING))}, expected text")
    if run["status"] not in RUN_STATUSES:
        raise bad(f'{at}.status is "{run["status"]}"')
    step_id = run.get("stepId", _MISSING)
    if step_id is not None and not isinstance(step_id, str):
        raise bad(f"{at}.stepId is {_describe(step_id)}, expected text or null")
    hop = run.get("hop", _MISSING)
    if not _is_whole(hop):
        raise bad(f"{at}.hop is {_describe(hop)}, expected a whole number")
    outcomes = run.get("outcomes", _MISSING)
    if not isinstance(outcomes, list):
        raise bad(f"{at}.outcomes is {_describe(outcomes)}, expected a list")
    trigger = run.get("trigger", _MISSING)
    if not _is_record(trigger):
        raise bad(f"{at}.trigger is {_describe(trigger)}, expected an object")
    if not isinstance(trigger.get("kind"), str) or not isinstance(trigger.get("key"), str):
        raise bad(f"{at}.trigger needs kind and key")
    for key in ("asked", "visits"):
        if not _is_record(run.get(key)):
            raise bad(f"{at}.{key} is {_describe(run.get(key, _MISSING))}, expected an object")
    waiting = run.get("waiting", _MISSING)
    if waiting is not _MISSING and not _is_record(waiting):
        raise bad(f"{at}.waiting is {_describe(waiting)}, expected an object")


# -- 3.x -> 4 ------------------------------------------------------------------------------


def migrate_session(
    blob: object,
    session_id: str,
    flow_id_of: Callable[[str], str] = lambda key: key,
    now: datetime | None = None,
) -> Session:
    """Lift a stored blob to a v4 session.

    A blob that has ``v`` passes through :func:`assert_session`. Anything else is read as a
    3.x ``SessionState``: ``data`` is kept; ``currentFlow``/``currentStep`` become one run
    ``<flow>#legacy`` (asking at that step, or running before the first step) with its claim;
    every completed ``flowHistory`` entry and every ``signals.triggers`` key becomes a ``once``
    claim so nothing fires twice; ``metadata`` dates become ISO text. The result has version 0
    (or the 3.x version when it had one). ``flow_id_of`` maps a 3.x flow or signal id to the
    v4 flow id that took it over; ``now`` stamps claims and runs that carry no date.
    """

    def bad(why: str) -> InvalidSessionError:
        return InvalidSessionError(session_id, why)

    if not _is_record(blob):
        raise bad(f"expected an object, got {_describe(blob)}")
    assert isinstance(blob, dict)
    if "v" in blob:
        return assert_session(blob, session_id)

    data = blob.get("data", _MISSING)
    if not _is_record(data):
        raise bad(f"data is {_describe(data)}, expected an object; not a 3.x session either")
    version = blob.get("version", 0)
    if not _is_whole(version):
        raise bad(f"version is {_describe(version)}, expected a whole number")
    metadata = blob.get("metadata", {})
    if not _is_record(metadata):
        raise bad(f"metadata is {_describe(metadata)}, expected an object")
    history = blob.get("history", _MISSING)
    if history is not _MISSING and not isinstance(history, list):
        raise bad(f"history is {_describe(history)}, expected a list")
    flow_history = blob.get("flowHistory", [])
    if not isinstance(flow_history, list):
        raise bad(f"flowHistory is {_describe(flow_history)}, expected a list")
    signals = blob.get("signals", {})
    if not _is_record(signals):
        raise bad(f"signals is {_describe(signals)}, expected an object")
    triggers = signals.get("triggers", {})
    if not _is_record(triggers):
        raise bad(f"signals.triggers is {_describe(triggers)}, expected an object")

    fallback = to_iso(now or datetime.now().astimezone())
    assert fallback is not None

    def claim_key(key: str) -> str:
        return f"{flow_id_of(key)}:{session_id}:"

    claims: dict[str, Claim] = {}
    for index, entry in enumerate(flow_history):
        if not _is_record(entry) or not isinstance(entry.get("flowId"), str):
            raise bad(f"flowHistory[{index}] is not a flow entry")
        if entry.get("completed") is True:
            at = to_iso(entry.get("exitedAt")) or to_iso(entry.get("enteredAt")) or fallback
            claims[claim_key(entry["flowId"])] = {"at": at}
    for key, state in triggers.items():
        if not _is_record(state):
            raise bad(f"signals.triggers.{key} is not a trigger state")
        at = to_iso(state.get("lastTriggeredAt")) or to_iso(state.get("firstTriggeredAt"))
        claims[claim_key(key)] = {"at": at or fallback}

    runs: list[Run] = []
    flow_ref = _legacy_ref(blob.get("currentFlow"), "currentFlow", bad)
    step_ref = _legacy_ref(blob.get("currentStep"), "currentStep", bad)
    if flow_ref is not None:
        flow_id = flow_id_of(flow_ref[0])
        started_at = to_iso(flow_ref[1]) or fallback
        step_id = step_ref[0] if step_ref is not None else None
        dedupe_key = f"{flow_id}:{session_id}:"
        runs.append(
            {
                "id": f"{flow_id}#legacy",
                "flowId": flow_id,
                "anchor": session_id,
                "dedupeKey": dedupe_key,
                "stepId": step_id,
                # Entered before its first step it is a fresh run; at a step it asks there.
                "status": "running" if step_id is None else "asking",
                "trigger": {"kind": "message", "key": "legacy"},
                "hop": 0,
                "startedAt": started_at,
                "asked": {},
                "visits": {},
                "outcomes": [],
            }
        )
        # A run never exists without its claim, or its flow could start a second time.
        claims[dedupe_key] = {"at": started_at}

    session = new_session(session_id)
    session.update(
        version=version,
        data=data,
        runs=runs,
        claims=claims,
        metadata=_dates_to_iso(metadata),
    )
    if history is not _MISSING:
        session["history"] = history  # type: ignore[typeddict-item]
    return session


def _legacy_ref(
    value: object, name: str, bad: Callable[[str], InvalidSessionError]
) -> tuple[str, object] | None:
    """3.x wrote ``currentFlow``/``currentStep`` as ``{id, enteredAt?}``, or a bare id in a row."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value, None
    if _is_record(value) and isinstance(value.get("id"), str):
        return value["id"], value.get("enteredAt")
    raise bad(f"{name} is {_describe(value)}, expected {{ id }} or text")


def _dates_to_iso(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, list | tuple):
        return [_dates_to_iso(item) for item in value]
    if isinstance(value, dict):
        return {key: _dates_to_iso(item) for key, item in value.items()}
    return value


# -- JSON codec shared by every store ------------------------------------------------------


#: How deeply JSON values may nest. Deeper input is refused before anything walks or encodes it
#: recursively: Python's recursion limit (and PostgreSQL's ``jsonb``) would fail far later, after
#: a save, with an error no caller could act on.
MAX_JSON_DEPTH = 100


class _NotJson(Exception):
    """Raised while walking a value; collects the path on the way out."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.path: list[str] = []


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored everywhere (a NUL, which PostgreSQL refuses, or a lone
    surrogate, which has no UTF-8 form), or ``None`` when it can."""
    if "\x00" in text:
        return "contains a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate, which is not text"
    return None


def storable_text(text: str) -> str:
    """``text`` with what no store can keep (NUL, lone surrogates) replaced: a model reply or a
    rendered template must never fail a save."""
    if text_problem(text) is None:
        return text
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _check_json_native(value: Any, depth: int, limit: int) -> None:
    kind = type(value)
    if kind is str:
        problem = text_problem(value)
        if problem:
            raise _NotJson(problem)
    elif kind is dict or kind is list or kind is tuple:
        if depth == 0:
            raise _NotJson(f"nests deeper than {limit} levels")
        items = value.items() if kind is dict else enumerate(value)
        for key, item in items:
            try:
                if kind is dict:
                    if type(key) is not str:
                        raise _NotJson(f"has the non-text key {key!r}")
                    problem = text_problem(key)
                    if problem:
                        raise _NotJson(f"has the key {key!r}, which {problem}")
                _check_json_native(item, depth - 1, limit)
            except _NotJson as error:
                if kind is dict:
                    error.path.append(f".{key}" if type(key) is str else "")
                else:
                    error.path.append(f"[{key}]")
                raise
    elif kind is float:
        if not math.isfinite(value):
            raise _NotJson(f"is {value!r}, which JSON cannot represent")
    elif value is None or kind is int or kind is bool:
        return
    else:
        raise _NotJson(f"is a {kind.__name__} ({value!r:.60}), which is not a JSON value")


def json_problem(value: Any, depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """The path and reason of the first part of ``value`` that is not storable JSON (not a JSON
    type, NaN or infinity, a NUL or lone surrogate in text, nesting deeper than ``depth``), or
    ``None`` when all of it is."""
    try:
        _check_json_native(value, depth, depth)
    except _NotJson as error:
        return "".join(reversed(error.path)), error.why
    return None


def _not_json_error(session_id: str, blob: Any) -> InvalidSessionError | None:
    """Walk ``blob`` and describe its first non-JSON value with its path, if it has one."""
    problem = json_problem(blob)
    if problem is None:
        return None
    path, why = problem
    return InvalidSessionError(session_id, f"{path.lstrip('.') or 'the session'} {why}")


def _refuse_unknown_type(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _caller_values(blob: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a blob that hold values from callers' code rather than the engine's,
    keyed by their path so an error names where the bad value sits."""
    parts = {key: blob[key] for key in ("data", "metadata", "history") if key in blob}
    for index, run in enumerate(blob["runs"]):
        parts[f"runs[{index}].input"] = run.get("input")
        parts[f"runs[{index}].trigger.payload"] = run["trigger"].get("payload")
    return parts


def encode_session(session: Mapping[str, Any], version: int) -> str:
    """The session as compact JSON text with ``version`` stamped in, after every check.

    Raises :class:`InvalidSessionError` when the blob is not a v4 session or holds anything
    that is not JSON-native (a datetime, a set, NaN, a non-text key, a NUL character): such a
    value would not survive the round trip, or a PostgreSQL ``jsonb`` column, unchanged.
    """
    session_id = session.get("id")
    if not isinstance(session_id, str):
        raise InvalidSessionError(str(session_id), f"id is {_describe(session_id)}, expected text")
    blob = {**session, "version": version}
    assert_session(blob, session_id)
    # Only the caller-supplied parts are walked up front (the C encoder would silently turn an
    # int key into text there); everything else the encoder itself refuses, and the walk runs
    # over the whole blob only to name the path of a value already known to be bad.
    error = _not_json_error(session_id, _caller_values(blob))
    if error is None:
        try:
            text = json.dumps(
                blob,
                separators=(",", ":"),
                ensure_ascii=False,
                allow_nan=False,
                default=_refuse_unknown_type,
            )
        except (TypeError, ValueError):
            error = _not_json_error(session_id, blob)
        else:
            # The encoder escapes NUL as \u0000; that text can also be a literal backslash
            # sequence, so only the walk decides.
            if "\\u0000" not in text:
                return text
            error = _not_json_error(session_id, blob)
            if error is None:
                return text
    assert error is not None
    raise error


def decode_session(text: str | bytes, session_id: str, version: int | None = None) -> Session:
    """A stored JSON text back to a checked session; ``version`` (the store's column) wins."""
    try:
        blob = json.loads(text)
    except ValueError as error:
        raise InvalidSessionError(session_id, f"the stored text is not JSON ({error})") from None
    if version is not None and isinstance(blob, dict):
        blob["version"] = version
    return assert_session(blob, session_id)
