"""The v4 blob (docs/session-blob.md): new_session, assert_session, migrate_session, dates."""

from __future__ import annotations

import copy
import enum
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warlock_sessions.engine import assert_session, migrate_session, new_session
from warlock_sessions.engine.isotime import iso_from_ms, ms_from_iso, to_iso
from warlock_sessions.errors import InvalidSessionError
from warlock_sessions.testing import T0, T0_MS, realistic_session, run_blob, session_blob


class _Colour(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Size(enum.StrEnum):
    LARGE = "large"


def test_a_fresh_session_has_exactly_the_upstream_keys() -> None:
    assert new_session("s1") == {
        "id": "s1",
        "v": 4,
        "version": 0,
        "data": {},
        "runs": [],
        "claims": {},
        "inputs": [],
        "metadata": {},
    }


def test_t0_renders_as_javascript_would() -> None:
    assert (T0, T0_MS) == ("2026-09-20T10:00:00.000Z", 1789898400000)
    assert iso_from_ms(1789898400123) == "2026-09-20T10:00:00.123Z"
    assert ms_from_iso("2026-09-20T10:00:00.123Z") == 1789898400123
    assert ms_from_iso("2026-09-20T07:00:00-03:00") == T0_MS
    assert to_iso(datetime(2026, 9, 20, 10, tzinfo=UTC)) == T0
    assert (to_iso("not a date"), to_iso(True), to_iso(None)) == (None, None, None)


@given(st.integers(min_value=-62135596800000, max_value=253402300799999))
def test_every_instant_renders_as_javascript_would(epoch_ms: int) -> None:
    """Years 1 to 9999: toISOString pads the year to four digits, as isoformat does."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_ms)
    expected = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert iso_from_ms(epoch_ms) == expected
    assert ms_from_iso(expected) == epoch_ms


def test_assert_session_returns_only_session_keys() -> None:
    blob = {**realistic_session("s1"), "createdAt": "x", "updatedAt": "y"}
    checked = assert_session(blob, "s1")
    assert "createdAt" not in checked and "updatedAt" not in checked
    assert checked == realistic_session("s1")


def _with(**changes):  # type: ignore[no-untyped-def]
    blob = session_blob("s1", runs=[run_blob()])
    for path, value in changes.items():
        target = blob
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return blob


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        ([], "expected an object, got a list"),
        (_with(v=3), "v is 3, expected 4"),
        (_with(v=KeyError), "v is missing, expected 4"),
        (_with(id="s2"), 'id is "s2", expected "s1"'),
        (_with(version=-1), "version is -1, expected a whole number"),
        (_with(version=1.5), "version is 1.5, expected a whole number"),
        (_with(data=[]), "data is a list, expected an object"),
        (_with(metadata=None), "metadata is null, expected an object"),
        (_with(runs={}), "runs is an object, expected a list"),
        (_with(claims={"k": {"at": 1}}), "claims is not a map of { at }"),
        (_with(inputs=["m1", 2]), "inputs is not a list of ids"),
        (_with(history="h"), 'history is "h", expected a list'),
        (_with(lastUserAt=5), "lastUserAt is not text"),
        (_with(runs__0__status="done"), 'runs[0].status is "done"'),
        (_with(runs__0__stepId=3), "runs[0].stepId is 3, expected text or null"),
        (_with(runs__0__hop=-1), "runs[0].hop is -1, expected a whole number"),
        (_with(runs__0__outcomes=None), "runs[0].outcomes is null, expected a list"),
        (_with(runs__0__trigger={"kind": "message"}), "runs[0].trigger needs kind and key"),
        (_with(runs__0__flowId=None), "runs[0].flowId is null, expected text"),
        (_with(runs__0__visits=[]), "runs[0].visits is a list, expected an object"),
        (_with(runs__0__waiting="soon"), 'runs[0].waiting is "soon", expected an object'),
    ],
)
def test_assert_session_names_what_is_wrong(blob, why) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidSessionError) as caught:
        assert_session(blob, "s1")
    assert str(caught.value) == (
        f'[InvalidSessionError] stored session "s1" is unreadable: {why}. '
        "Repair or delete the row; it is never replaced by a fresh conversation."
    )


def test_migrating_a_3x_session_keeps_data_and_claims_what_already_happened() -> None:
    legacy = {
        "data": {"nome": "Ana"},
        "currentFlow": {"id": "qualificacao", "enteredAt": "2026-09-20T09:00:00Z"},
        "currentStep": {"id": "pergunta"},
        "flowHistory": [
            {"flowId": "boas-vindas", "completed": True, "exitedAt": T0_MS},
            {"flowId": "abandonado", "completed": False},
        ],
        "signals": {"triggers": {"promo-signal": {"lastTriggeredAt": T0}}},
        "metadata": {"seenAt": datetime(2026, 9, 20, 10, tzinfo=UTC), "tags": ["a"]},
        "pendingDirective": {"dropped": True},
    }
    before = copy.deepcopy(legacy)

    session = migrate_session(legacy, "s1", flow_id_of=lambda key: key.removesuffix("-signal"))

    assert legacy == before
    assert session["version"] == 0
    assert session["data"] == {"nome": "Ana"}
    assert session["metadata"] == {"seenAt": T0, "tags": ["a"]}
    assert session["claims"] == {
        "boas-vindas:s1:": {"at": T0},
        "promo:s1:": {"at": T0},
        "qualificacao:s1:": {"at": "2026-09-20T09:00:00.000Z"},
    }
    [run] = session["runs"]
    assert run == {
        "id": "qualificacao#legacy",
        "flowId": "qualificacao",
        "anchor": "s1",
        "dedupeKey": "qualificacao:s1:",
        "stepId": "pergunta",
        "status": "asking",
        "trigger": {"kind": "message", "key": "legacy"},
        "hop": 0,
        "startedAt": "2026-09-20T09:00:00.000Z",
        "asked": {},
        "visits": {},
        "outcomes": [],
    }
    assert assert_session(session, "s1") == session


def test_a_3x_flow_entered_before_its_first_step_migrates_as_running() -> None:
    session = migrate_session(
        {"data": {}, "currentFlow": "bv"}, "s1", now=datetime(2026, 9, 20, 10, tzinfo=UTC)
    )
    assert [(r["id"], r["status"], r["stepId"], r["startedAt"]) for r in session["runs"]] == [
        ("bv#legacy", "running", None, T0)
    ]


def test_a_v4_blob_passes_through_migration_unchanged() -> None:
    blob = realistic_session("s1")
    assert migrate_session(blob, "s1") == blob
    with pytest.raises(InvalidSessionError, match="v is 3"):
        migrate_session({**blob, "v": 3}, "s1")


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        ("text", 'expected an object, got "text"'),
        ({"currentFlow": "x"}, "data is missing, expected an object; not a 3.x session either"),
        ({"data": {}, "currentFlow": 7}, "currentFlow is 7, expected { id } or text"),
        ({"data": {}, "flowHistory": [{"completed": True}]}, "flowHistory[0] is not a flow entry"),
        (
            {"data": {}, "signals": {"triggers": {"x": 1}}},
            "signals.triggers.x is not a trigger state",
        ),
    ],
)
def test_an_unrecognisable_blob_never_migrates_to_a_fresh_session(blob, why) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidSessionError, match=re.escape(f"unreadable: {why}")):
        migrate_session(blob, "s1")


def test_the_largest_integers_round_trip_exactly() -> None:
    from warlock_sessions.engine.session import decode_session, encode_session

    session = session_blob("s1", data={"big": 2**64 - 1, "small": -(2**63), "float": 1.5e300})
    assert decode_session(encode_session(session, 1), "s1")["data"] == session["data"]


def test_a_row_written_before_integers_were_bounded_reads_back_exact() -> None:
    """orjson reads an integer beyond 64 bits as a float: such a row is read again exactly."""
    import json

    from warlock_sessions.engine.session import decode_session

    text = json.dumps({**session_blob("s1"), "data": {"id": 2**70 + 1}, "version": 1})
    assert decode_session(text, "s1")["data"] == {"id": 2**70 + 1}


def test_an_action_detail_that_is_not_json_is_kept_as_text() -> None:
    from warlock_sessions.engine import Agent
    from warlock_sessions.engine.session import encode_session
    from warlock_sessions.providers import RuleModel
    from warlock_sessions.testing import Dialogue

    agent = Agent(
        [{"id": "f", "on": [{"message": []}], "steps": [{"id": "d", "do": "pay"}]}],
        actions={"pay": lambda params, ctx: {"ok": True, "detail": Decimal("9.90")}},
        name="f",
        model=RuleModel(),
    )
    dialogue = Dialogue(agent)
    dialogue.say("hi")
    line = next(line for line in dialogue.last.outcomes if line["kind"] == "do")  # type: ignore[union-attr]
    assert line["detail"] == "9.90"
    encode_session(dialogue.session, 2)  # type: ignore[arg-type]


# -- json_text: the walk's judgement, at the encoder's speed ---------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(),  # NaN and both infinities among them
    st.text(),  # NUL and lone surrogates among them
    st.uuids(),
    st.sampled_from(
        [
            _Colour.RED,
            _Level.HIGH,
            _Size.LARGE,
            Decimal("1.5"),
            b"raw",
            datetime(2026, 12, 7, tzinfo=UTC),
        ]
    ),
)


_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
        st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2),
    ),
    max_leaves=12,
)


def _wrapped(value: object, levels: int) -> object:
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


@given(_VALUES, st.integers(min_value=0, max_value=4))
def test_json_text_refuses_exactly_what_the_walk_refuses(value: object, extra: int) -> None:
    """``json_text`` reads its checks off orjson's output; the walk is the rule. Values near
    the depth limit are made by wrapping, so both sides of it are tried."""
    import json

    from warlock_sessions.engine.session import NotJsonError, json_problem, json_text

    for checked in (value, _wrapped(value, 6 + extra)):
        problem = json_problem(checked, depth=8)
        if problem is None:
            assert json.loads(json_text(checked, depth=8)) == json.loads(json.dumps(checked))
        else:
            with pytest.raises(NotJsonError) as refused:
                json_text(checked, depth=8)
            assert (refused.value.path, refused.value.why) == problem


@pytest.mark.parametrize("levels", [99, 100, 101])
def test_json_text_takes_values_exactly_as_deep_as_the_limit(levels: int) -> None:
    from warlock_sessions.engine.session import MAX_JSON_DEPTH, NotJsonError, json_text

    for innermost in ([], {}, [1], {"a": None}):
        value = _wrapped(innermost, levels - 1)
        if levels <= MAX_JSON_DEPTH:
            assert json_text(value).count("[") + json_text(value).count("{") == levels
        else:
            with pytest.raises(NotJsonError, match=f"nests deeper than {MAX_JSON_DEPTH}"):
                json_text(value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": ["x\x00"]}, (".a[0]", "contains a NUL character")),
        ({"a": float("nan")}, (".a", "is nan, which JSON cannot represent")),
        ([float("-inf")], ("[0]", "is -inf, which JSON cannot represent")),
        (
            {"c": _Colour.RED},
            (".c", "is a _Colour (<_Colour.RED: 'red'>), which is not a JSON value"),
        ),
        ({1: "a"}, ("", "has the non-text key 1")),
        (
            {"l": [_Level.HIGH]},
            (".l[0]", "is a _Level (<_Level.HIGH: 3>), which is not a JSON value"),
        ),
        (
            {"s": _Size.LARGE},
            (".s", "is a _Size (<_Size.LARGE: 'large'>), which is not a JSON value"),
        ),
        (
            {"n": 2**64},
            (".n", "is 18446744073709551616, an integer beyond 64 bits, which JSON readers round"),
        ),
        ({"a": "\udc00"}, (".a", "contains a lone surrogate, which is not text")),
    ],
)
def test_json_text_names_what_it_refuses(value: object, problem: tuple[str, str]) -> None:
    from warlock_sessions.engine.session import NotJsonError, json_text

    with pytest.raises(NotJsonError) as refused:
        json_text(value)
    assert (refused.value.path, refused.value.why) == problem


def test_json_text_writes_tuples_and_a_spelled_out_nul_as_json_does() -> None:
    from warlock_sessions.engine.session import json_text

    assert json_text({"t": (1, "\\u0000"), "é": 1.5}) == '{"t":[1,"\\\\u0000"],"é":1.5}'
