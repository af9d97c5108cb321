"""The Store contract (docs/stores.md), run unchanged against every backend."""

from __future__ import annotations

import copy
import enum
import multiprocessing
import threading
import uuid
from datetime import datetime

import pytest
from django.db import connections

from warlock_sessions.engine import assert_session, migrate_session
from warlock_sessions.errors import InvalidSessionError, SessionConflictError
from warlock_sessions.stores import MemoryStore
from warlock_sessions.testing import realistic_session, run_blob, session_blob

from .conftest import StoreFactory


def test_unknown_id_loads_as_none(make_store: StoreFactory) -> None:
    assert make_store().load("nobody") is None


def test_first_save_stores_version_one_and_leaves_the_argument_untouched(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    fresh = session_blob("s1", data={"nome": "Ana"})
    before = copy.deepcopy(fresh)

    saved = store.save(fresh, 0)

    assert saved["version"] == 1
    assert fresh == before
    loaded = store.load("s1")
    assert loaded == {**before, "version": 1}


def test_loaded_blobs_pass_assert_session_and_round_trip(make_store: StoreFactory) -> None:
    store = make_store()
    session = realistic_session("busy")
    store.save(session, 0)

    loaded = store.load("busy")

    assert loaded is not None
    assert assert_session(loaded, "busy") == loaded
    assert loaded == {**session, "version": 1}


def test_versions_advance_by_one_per_save(make_store: StoreFactory) -> None:
    store = make_store()
    session = store.save(session_blob("s1"), 0)
    for expected in range(1, 4):
        session = store.save({**session, "data": {"turn": expected}}, expected)
    assert session["version"] == 4
    loaded = store.load("s1")
    assert loaded is not None
    assert (loaded["version"], loaded["data"]) == (4, {"turn": 3})


def test_a_stale_save_conflicts_with_the_actual_version(make_store: StoreFactory) -> None:
    store = make_store()
    v1 = store.save(session_blob("s1"), 0)
    store.save(v1, 1)

    with pytest.raises(SessionConflictError) as caught:
        store.save({**v1, "data": {"lost": True}}, 1)

    assert (
        caught.value.session_id,
        caught.value.expected_version,
        caught.value.actual_version,
    ) == ("s1", 1, 2)
    loaded = store.load("s1")
    assert loaded is not None and loaded["data"] == {}


def test_an_insert_over_an_existing_row_conflicts_with_actual_one(make_store: StoreFactory) -> None:
    store = make_store()
    store.save(session_blob("s1", data={"first": True}), 0)

    with pytest.raises(SessionConflictError) as caught:
        store.save(session_blob("s1", data={"second": True}), 0)

    assert (caught.value.expected_version, caught.value.actual_version) == (0, 1)
    loaded = store.load("s1")
    assert loaded is not None and loaded["data"] == {"first": True}


def test_a_save_to_a_deleted_row_conflicts_with_actual_none(make_store: StoreFactory) -> None:
    store = make_store()
    store.save(session_blob("s1"), 0)
    assert store.delete("s1") is True
    assert store.delete("s1") is False

    with pytest.raises(SessionConflictError) as caught:
        store.save(session_blob("s1"), 1)

    assert caught.value.actual_version is None
    assert store.load("s1") is None


def test_a_second_store_object_sees_the_same_data(make_store: StoreFactory) -> None:
    make_store().save(session_blob("shared", data={"x": 1}), 0)
    loaded = make_store().load("shared")
    assert loaded is not None and loaded["data"] == {"x": 1}


def test_stored_state_cannot_be_changed_through_returned_objects(make_store: StoreFactory) -> None:
    store = make_store()
    saved = store.save(session_blob("s1", data={"x": 1}), 0)
    saved["data"]["x"] = 2
    loaded = store.load("s1")
    assert loaded is not None
    loaded["data"]["x"] = 3
    again = store.load("s1")
    assert again is not None and again["data"] == {"x": 1}


class Kind(enum.Enum):
    A = "a"


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda s: s.update(v=3), "v is 3, expected 4"),
        (lambda s: s["runs"].append(run_blob(status="sleeping")), 'runs[0].status is "sleeping"'),
        (lambda s: s.update(data={"when": object()}), "data.when is a object"),
        (lambda s: s.update(data={"note": "a\x00b"}), "data.note contains a NUL character"),
        (lambda s: s.update(metadata={"score": float("inf")}), "metadata.score is inf"),
        (lambda s: s.update(data={1: "one"}), "data has the non-text key 1"),
        (lambda s: s.update(data={"at": datetime(2026, 1, 1)}), "data.at is a datetime"),
        (lambda s: s.update(data={"tags": {"a"}}), "data.tags is a set"),
        (lambda s: s.update(data={"id": uuid.UUID(int=1)}), "data.id is a UUID"),
        (lambda s: s.update(data={"kind": Kind.A}), "data.kind is a Kind"),
        (
            lambda s: s.update(data={"n": [1, 2**64]}),
            "data.n[1] is 18446744073709551616, an integer",
        ),
        (
            lambda s: s.update(data={"n": -(2**63) - 1}),
            "data.n is -9223372036854775809, an integer",
        ),
        (lambda s: s.update(data={"x": float("nan")}), "data.x is nan"),
        (lambda s: s.update(data={"s": "\ud800"}), "data.s contains a lone surrogate"),
    ],
    ids=[
        "v3",
        "bad-status",
        "object",
        "nul",
        "infinity",
        "int-key",
        "datetime",
        "set",
        "uuid",
        "enum",
        "big-int",
        "small-int",
        "nan",
        "surrogate",
    ],
)
def test_an_unstorable_blob_is_refused_and_nothing_is_written(
    make_store: StoreFactory, mutate, why
) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    session = session_blob("s1")
    mutate(session)

    with pytest.raises(InvalidSessionError) as caught:
        store.save(session, 0)

    assert why in str(caught.value)
    assert caught.value.session_id == "s1"
    assert store.load("s1") is None


@pytest.mark.parametrize(
    ("session_id", "expected_version", "error"),
    [
        ("", 0, ValueError),
        ("s\x00", 0, ValueError),
        ("s1", -1, ValueError),
        ("s1", True, ValueError),
        ("x" * 256, 0, ValueError),
    ],
    ids=["empty-id", "nul-id", "negative-version", "bool-version", "long-id"],
)
def test_bad_arguments_get_a_specific_error(
    make_store: StoreFactory, session_id, expected_version, error
) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    with pytest.raises(error):
        store.save(session_blob(session_id), expected_version)


def test_ids_with_path_and_sql_characters_are_plain_keys(make_store: StoreFactory) -> None:
    store = make_store()
    awkward = ["../../etc/passwd", "a/b\\c", "100%", "it's; DROP TABLE x;--", "ação 😀", "..", "."]
    for session_id in awkward:
        store.save(session_blob(session_id, data={"id": session_id}), 0)
    for session_id in awkward:
        loaded = store.load(session_id)
        assert loaded is not None and loaded["data"] == {"id": session_id}


def test_a_migrated_3x_blob_saves_at_version_zero_and_loads_back(make_store: StoreFactory) -> None:
    legacy = {
        "data": {"nome": "Ana"},
        "currentFlow": {"id": "qualificacao", "enteredAt": "2026-09-20T10:00:00.000Z"},
        "currentStep": {"id": "pergunta"},
        "flowHistory": [{"flowId": "boas-vindas", "completed": True, "exitedAt": 1789898400000}],
    }
    session = migrate_session(legacy, "s1")
    assert session["version"] == 0

    make_store().save(session, 0)

    loaded = make_store().load("s1")
    assert loaded is not None
    assert [(run["id"], run["status"]) for run in loaded["runs"]] == [
        ("qualificacao#legacy", "asking")
    ]
    assert set(loaded["claims"]) == {"qualificacao:s1:", "boas-vindas:s1:"}


def _save_racer(make_store: StoreFactory, barrier, results, index: int) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    session = {**session_blob("race"), "version": 1, "data": {"writer": index}}
    barrier.wait()
    try:
        store.save(session, 1)
    except SessionConflictError as error:
        results.put(("conflict", error.actual_version))
    else:
        results.put(("won", index))


def test_five_concurrent_saves_of_one_version_have_exactly_one_winner(
    make_store: StoreFactory,
) -> None:
    racers = 5
    make_store().save(session_blob("race"), 0)
    if isinstance(make_store(), MemoryStore):
        # An in-process store is shared by threads, not processes.
        import queue

        barrier, results = threading.Barrier(racers), queue.Queue()
        workers = [
            threading.Thread(target=_save_racer, args=(make_store, barrier, results, i))
            for i in range(racers)
        ]
    else:
        context = multiprocessing.get_context("fork")
        barrier, results = context.Barrier(racers), context.Queue()
        connections.close_all()  # never share a database connection with forked children
        workers = [
            context.Process(target=_save_racer, args=(make_store, barrier, results, i))
            for i in range(racers)
        ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in range(racers)]
    for worker in workers:
        worker.join(timeout=60)

    winners = [who for kind, who in outcomes if kind == "won"]
    assert len(winners) == 1, outcomes
    assert sorted(outcomes)[:-1] == [("conflict", 2)] * (racers - 1)
    loaded = make_store().load("race")
    assert loaded is not None
    assert (loaded["version"], loaded["data"]) == (2, {"writer": winners[0]})
