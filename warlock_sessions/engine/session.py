"""The v4 session blob: its shape, the check every store runs, 3.x migration and the JSON codec.

A session is one conversation's state as one JSON-native dict with camelCase keys exactly as
upstream @falai/agent writes them, so a TypeScript host and a Django host can share a store.
The host loads it, hands it to ``turn()``, and saves what comes back with the version it loaded.
"""

from __future__ import annotations

import json
import marshal
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

import orjson

from ..errors import InvalidSessionError
from .isotime import to_iso

SESSION_FORMAT: Literal[4] = 4

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


#: Longest session id every store accepts (the database column's length).
MAX_SESSION_ID_LENGTH = 255

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

    record = _record(blob, bad)
    v = record.get("v", _MISSING)
    if type(v) is not int or v != SESSION_FORMAT:
        raise bad(f"v is {_describe(v)}, expected 4")
    if record.get("id") != session_id:
        raise bad(f'id is {_describe(record.get("id", _MISSING))}, expected "{session_id}"')
    _expect(record, "version", _is_whole, "a whole number", bad)
    _expect(record, "data", _is_record, "an object", bad)
    _expect(record, "metadata", _is_record, "an object", bad)
    runs = _expect(record, "runs", _is_list, "a list", bad)
    if not _is_claims(record.get("claims")):
        raise bad("claims is not a map of { at }")
    inputs = record.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(item, str) for item in inputs):
        raise bad("inputs is not a list of ids")
    _expect(record, "history", _is_list, "a list", bad, optional=True)
    for key in ("lastUserAt", "lastAssistantAt"):
        if not isinstance(record.get(key, ""), str):
            raise bad(f"{key} is not text")
    for index, run in enumerate(runs):
        _check_run(run, f"runs[{index}]", bad)
    return {key: record[key] for key in _SESSION_KEYS if key in record}  # type: ignore[return-value]


_SESSION_KEYS = (
    "id", "v", "version", "data", "runs", "claims", "inputs", "metadata",
    "lastUserAt", "lastAssistantAt", "history",
)  # fmt: skip
_RUN_TEXT = ("id", "flowId", "anchor", "dedupeKey", "status", "startedAt")


def _check_run(run: object, at: str, bad: Callable[[str], InvalidSessionError]) -> None:
    record = _record(run, bad, at)
    for key in _RUN_TEXT:
        _expect(record, key, _is_text, "text", bad, at)
    if record["status"] not in RUN_STATUSES:
        raise bad(f'{at}.status is "{record["status"]}"')
    _expect(record, "stepId", _is_text_or_null, "text or null", bad, at)
    _expect(record, "hop", _is_whole, "a whole number", bad, at)
    _expect(record, "outcomes", _is_list, "a list", bad, at)
    trigger = _expect(record, "trigger", _is_record, "an object", bad, at)
    if not (_is_text(trigger.get("kind")) and _is_text(trigger.get("key"))):
        raise bad(f"{at}.trigger needs kind and key")
    _expect(record, "asked", _is_record, "an object", bad, at)
    _expect(record, "visits", _is_record, "an object", bad, at)
    _expect(record, "waiting", _is_record, "an object", bad, at, optional=True)


def _record(
    value: object, bad: Callable[[str], InvalidSessionError], at: str | None = None
) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if at is None:
        raise bad(f"expected an object, got {_describe(value)}")
    raise bad(f"{at} is {_describe(value)}, expected an object")


def _expect(
    record: Mapping[str, Any],
    key: str,
    ok: Callable[[Any], bool],
    expected: str,
    bad: Callable[[str], InvalidSessionError],
    at: str = "",
    *,
    optional: bool = False,
    default: Any = _MISSING,
) -> Any:
    """``record[key]`` (or ``default``) when ``ok`` says it is what it should be; otherwise the
    error names the key, what it is, and what was ``expected``. An ``optional`` key may be
    missing."""
    value = record.get(key, default)
    if not ok(value) and not (optional and value is _MISSING):
        raise bad(f"{at}.{key} is {_describe(value)}, expected {expected}".lstrip("."))
    return value


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_text_or_null(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_list(value: object) -> bool:
    return isinstance(value, list)


def _is_claims(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(claim, dict) and isinstance(claim.get("at"), str) for claim in value.values()
    )


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

    record = _record(blob, bad)
    if "v" in record:
        return assert_session(record, session_id)
    data = record.get("data", _MISSING)
    if not _is_record(data):
        raise bad(f"data is {_describe(data)}, expected an object; not a 3.x session either")
    version = _expect(record, "version", _is_whole, "a whole number", bad, default=0)
    metadata = _expect(record, "metadata", _is_record, "an object", bad, default={})
    history = _expect(record, "history", _is_list, "a list", bad, optional=True)
    legacy = _Legacy(
        record, session_id, flow_id_of, to_iso(now or datetime.now().astimezone()) or "", bad
    )
    claims = legacy.claims()
    run = legacy.run()
    runs = [run] if run is not None else []
    if run is not None:
        # A run never exists without its claim, or its flow could start a second time.
        claims[run["dedupeKey"]] = {"at": run["startedAt"]}
    session = new_session(session_id)
    session["version"] = version
    session["data"] = data
    session["runs"] = runs
    session["claims"] = claims
    session["metadata"] = _dates_to_iso(metadata)
    if history is not _MISSING:
        session["history"] = history
    return session


@dataclass(frozen=True)
class _Legacy:
    """A 3.x blob being lifted: where its claims and its current run come from."""

    record: Mapping[str, Any]
    session_id: str
    flow_id_of: Callable[[str], str]
    fallback: str  # the date of what carries none
    bad: Callable[[str], InvalidSessionError]

    def claim_key(self, flow_or_signal: str) -> str:
        return f"{self.flow_id_of(flow_or_signal)}:{self.session_id}:"

    def claims(self) -> dict[str, Claim]:
        """A ``once`` claim for every completed ``flowHistory`` entry and every fired signal."""
        record, bad = self.record, self.bad
        flow_history = _expect(record, "flowHistory", _is_list, "a list", bad, default=[])
        signals = _expect(record, "signals", _is_record, "an object", bad, default={})
        triggers = _expect(signals, "triggers", _is_record, "an object", bad, "signals", default={})
        claims: dict[str, Claim] = {}
        for index, entry in enumerate(flow_history):
            if not _is_record(entry) or not isinstance(entry.get("flowId"), str):
                raise bad(f"flowHistory[{index}] is not a flow entry")
            if entry.get("completed") is True:
                at = to_iso(entry.get("exitedAt")) or to_iso(entry.get("enteredAt"))
                claims[self.claim_key(entry["flowId"])] = {"at": at or self.fallback}
        for key, state in triggers.items():
            if not _is_record(state):
                raise bad(f"signals.triggers.{key} is not a trigger state")
            fired = to_iso(state.get("lastTriggeredAt")) or to_iso(state.get("firstTriggeredAt"))
            claims[self.claim_key(key)] = {"at": fired or self.fallback}
        return claims

    def run(self) -> Run | None:
        """The run of 3.x's ``currentFlow``/``currentStep``, if a flow was current."""
        flow_ref = _legacy_ref(self.record.get("currentFlow"), "currentFlow", self.bad)
        step_ref = _legacy_ref(self.record.get("currentStep"), "currentStep", self.bad)
        if flow_ref is None:
            return None
        flow_id = self.flow_id_of(flow_ref[0])
        step_id = step_ref[0] if step_ref is not None else None
        return {
            "id": f"{flow_id}#legacy",
            "flowId": flow_id,
            "anchor": self.session_id,
            "dedupeKey": self.claim_key(flow_ref[0]),
            "stepId": step_id,
            # Entered before its first step it is a fresh run; at a step it asks there.
            "status": "running" if step_id is None else "asking",
            "trigger": {"kind": "message", "key": "legacy"},
            "hop": 0,
            "startedAt": to_iso(flow_ref[1]) or self.fallback,
            "asked": {},
            "visits": {},
            "outcomes": [],
        }


def _legacy_ref(
    value: object, name: str, bad: Callable[[str], InvalidSessionError]
) -> tuple[str, object] | None:
    """3.x wrote ``currentFlow``/``currentStep`` as ``{id, enteredAt?}``, or a bare id in a row."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and isinstance(value.get("id"), str):
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


def storable(value: Any) -> Any:
    """``value`` with every text in it made ``storable_text`` (keys included): what a model
    wrote must never fail a save."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def plain_json(value: Any) -> Any:
    """``value`` as what a blob may hold: itself when it is plain JSON, else its text (an
    action's ``detail`` may be a Decimal, a UUID, a subclass of str)."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return "".join([value])  # a subclass (SafeString): its text, as a plain str
    return value if json_problem(value) is None else str(value)


def _check_json_native(value: Any, depth: int, limit: int) -> None:
    kind = type(value)
    if kind is str:
        problem = text_problem(value)
        if problem:
            raise _NotJson(problem)
    elif kind is dict:
        _check_object(value, depth, limit)
    elif kind is list or kind is tuple:
        _check_array(value, depth, limit)
    elif kind is float:
        if not math.isfinite(value):
            raise _NotJson(f"is {value!r}, which JSON cannot represent")
    elif kind is int:
        if not SMALLEST_INTEGER <= value <= LARGEST_INTEGER:
            raise _NotJson(f"is {value}, an integer beyond 64 bits, which JSON readers round")
    elif not (value is None or kind is bool):
        raise _NotJson(f"is a {kind.__name__} ({value!r:.60}), which is not a JSON value")


def _check_object(value: dict[Any, Any], depth: int, limit: int) -> None:
    if depth == 0:
        raise _NotJson(f"nests deeper than {limit} levels")
    for key, item in value.items():
        try:
            if type(key) is not str:
                raise _NotJson(f"has the non-text key {key!r}")
            problem = text_problem(key)
            if problem:
                raise _NotJson(f"has the key {key!r}, which {problem}")
            _check_json_native(item, depth - 1, limit)
        except _NotJson as error:
            error.path.append(f".{key}" if type(key) is str else "")
            raise


def _check_array(value: list[Any] | tuple[Any, ...], depth: int, limit: int) -> None:
    if depth == 0:
        raise _NotJson(f"nests deeper than {limit} levels")
    for index, item in enumerate(value):
        try:
            _check_json_native(item, depth - 1, limit)
        except _NotJson as error:
            error.path.append(f"[{index}]")
            raise


def json_problem(value: Any, depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """The path and reason of the first part of ``value`` that is not storable JSON (not a JSON
    type, NaN or infinity, a NUL or lone surrogate in text, nesting deeper than ``depth``), or
    ``None`` when all of it is."""
    try:
        _check_json_native(value, depth, depth)
    except _NotJson as error:
        return "".join(reversed(error.path)), error.why
    return None


def described(path: str, why: str, whole: str = "the value") -> str:
    """A ``json_problem`` as a sentence: where (``whole`` for the value itself) and why."""
    return f"{path.lstrip('.') or whole} {why}"


class NotJsonError(ValueError):
    """A value ``json_text`` refuses: ``path`` (``.state.items[2]``, empty for the value
    itself) and ``why`` are ``json_problem``'s."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(described(path, why))
        self.path = path
        self.why = why


def json_text(value: Any, depth: int = MAX_JSON_DEPTH) -> str:
    """``value`` as compact JSON text when ``json_problem`` finds nothing in it, else
    ``NotJsonError`` naming the first problem (``depth`` up to orjson's own limit, 254).

    The same judgement as walking the value first, at a third of the cost on a snapshot of a
    few kilobytes: orjson refuses what the walk would (other types, non-text keys, integers
    beyond 64 bits, lone surrogates), and checks in C catch what it writes silently. An
    enum, a UUID or a subclass of a JSON type is not ``marshal``'s (which takes the exact
    built-in types only); a NaN does not read back equal to itself; a NUL shows as
    ``\\u0000``; and with two spaces of indent per level, a line indented ``2 * depth``
    spaces holds a member of a container nested ``depth`` deep, where nothing deeper may
    start. Any doubt (a tuple reads back as a list, a text may spell ``\\u0000`` literally)
    is settled by the walk."""
    try:
        text = orjson.dumps(value, default=_refuse_unknown_type, option=_ORJSON_OPTIONS)
    except TypeError as error:  # orjson.JSONEncodeError: the walk names where and why
        refused = json_problem(value, depth) or ("", f"is not JSON ({error})")
        raise NotJsonError(*refused) from None
    if depth < 1 or _doubtful(value, text, depth):
        problem = json_problem(value, depth)
        if problem is not None:
            raise NotJsonError(*problem)
    return text.decode()


def _doubtful(value: Any, text: bytes, depth: int) -> bool:
    """Whether orjson's ``text`` of ``value`` may hide what the walk refuses."""
    try:
        marshal.dumps(value, 2)
    except ValueError:  # an enum, a UUID, a subclass: orjson writes them as their values
        return True
    indented = orjson.dumps(value, option=orjson.OPT_INDENT_2 | _ORJSON_OPTIONS)
    return (
        b"\\u0000" in text or b"\n" + b" " * (2 * depth) in indented or orjson.loads(text) != value
    )


def _not_json_error(session_id: str, blob: Any) -> InvalidSessionError | None:
    """Walk ``blob`` and describe its first non-JSON value with its path, if it has one."""
    problem = json_problem(blob)
    if problem is None:
        return None
    return InvalidSessionError(session_id, described(*problem, whole="the session"))


def _refuse_unknown_type(value: Any) -> Any:
    raise TypeError(type(value).__name__)


#: The integers a blob may hold: what orjson (and a PostgreSQL ``jsonb`` round trip through
#: most readers) keeps exact. Beyond them a reader would round the number to a float.
SMALLEST_INTEGER = -(2**63)
LARGEST_INTEGER = 2**64 - 1
#: orjson writes what the stdlib's ``json`` would, and refuses the same things, once told not
#: to write datetimes, dataclasses and subclasses of str, int, dict and list itself (it would
#: turn them into JSON, and they would not come back as what was saved).
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _caller_values(blob: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a blob that hold values from callers' code rather than the engine's,
    keyed by their path so an error names where the bad value sits."""
    parts = {key: blob[key] for key in ("data", "metadata", "history") if key in blob}
    for index, run in enumerate(blob["runs"]):
        parts[f"runs[{index}].input"] = run.get("input")
        parts[f"runs[{index}].trigger.payload"] = run["trigger"].get("payload")
    return parts


def _caller_values_of(blob: dict[str, Any]) -> dict[str, Any]:
    """``_caller_values`` of a blob not yet checked (its runs may be missing or malformed)."""
    runs = blob.get("runs")
    if not isinstance(runs, list) or not all(
        isinstance(run, dict) and isinstance(run.get("trigger"), dict) for run in runs
    ):
        return {key: blob[key] for key in ("data", "metadata", "history") if key in blob}
    return _caller_values(blob)


def _rounded_integer(value: Any) -> bool:
    """Whether ``value`` holds a float as large as only an integer beyond 64 bits, read by
    orjson, becomes."""
    kind = type(value)
    if kind is float:
        return bool(not SMALLEST_INTEGER <= value <= LARGEST_INTEGER and value.is_integer())
    if kind is dict:
        return any(_rounded_integer(item) for item in value.values())
    if kind is list:
        return any(_rounded_integer(item) for item in value)
    return False


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
    # Only the caller-supplied parts are walked up front: there orjson would write a NaN as
    # null, and a UUID, an enum or a date as text, instead of refusing them. The engine's own
    # parts hold only JSON values; anything else there the encoder refuses, and the walk runs
    # over the whole blob only to name the path of a value already known to be bad.
    error = _not_json_error(session_id, _caller_values(blob))
    if error is None:
        try:
            text = orjson.dumps(blob, default=_refuse_unknown_type, option=_ORJSON_OPTIONS)
        except TypeError:
            error = _not_json_error(session_id, blob)
        else:
            # The encoder escapes NUL as \u0000; that text can also be a literal backslash
            # sequence, so only the walk decides.
            if b"\\u0000" not in text:
                return text.decode()
            error = _not_json_error(session_id, blob)
            if error is None:
                return text.decode()
    assert error is not None
    raise error


def decode_session(text: str | bytes, session_id: str, version: int | None = None) -> Session:
    """A stored JSON text back to a checked session; ``version`` (the store's column) wins."""
    try:
        blob = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise InvalidSessionError(session_id, f"the stored text is not JSON ({error})") from None
    if isinstance(blob, dict) and _rounded_integer(_caller_values_of(blob)):
        # Written before integers were bounded: read the exact ones, as they were saved.
        blob = json.loads(text)
    if version is not None and isinstance(blob, dict):
        blob["version"] = version
    return assert_session(blob, session_id)
