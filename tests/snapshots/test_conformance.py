"""The SnapshotStore contract (docs/snapshots.md), run unchanged against every backend."""

from __future__ import annotations

import pytest

from warlock_sessions.errors import SnapshotConflictError
from warlock_sessions.snapshots import ConditionalSaveUnsupportedError, InvalidSnapshotError

from .conftest import SnapshotFactory


def test_a_snapshot_round_trips_as_a_copy(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    assert store.load("x") is None
    assert store.delete("x") is False  # nothing there: fine, and said

    snapshot = {"runId": "r", "a": [1, "é", None], "nested": {"deep": [True, 1.5]}}
    store.save(snapshot)
    snapshot["a"].append("changed after the save")
    loaded = store.load("r")
    assert loaded == {"runId": "r", "a": [1, "é", None], "nested": {"deep": [True, 1.5]}}

    assert loaded is not None
    loaded["a"].clear()
    assert make_snapshots().load("r") == {
        "runId": "r",
        "a": [1, "é", None],
        "nested": {"deep": [True, 1.5]},
    }


def test_the_second_save_wins_and_delete_removes(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    store.save({"runId": "r", "step": 1})
    store.save({"runId": "r", "step": 2})
    assert store.load("r") == {"runId": "r", "step": 2}
    assert store.list() == ["r"]
    assert store.delete("r") is True
    assert store.load("r") is None and store.list() == []
    assert store.delete("r") is False
    with pytest.raises(InvalidSnapshotError, match="a snapshot prefix is text"):
        store.list(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        {"a": 1},
        {"runId": ""},
        {"runId": 5},
        {"runId": None},
        {"runId": "x" * 256},
        {"runId": "nul\x00"},
        {"runId": "r", "value": float("nan")},
        {"runId": "r", "text": "a\x00b"},
        {"runId": "r", "when": object()},
        ["runId", "r"],
    ],
)
def test_what_no_store_can_keep_is_refused_before_writing(
    make_snapshots: SnapshotFactory, bad: object
) -> None:
    store = make_snapshots()
    with pytest.raises(InvalidSnapshotError):
        store.save(bad)  # type: ignore[arg-type]
    assert store.list() == []


def test_bad_keys_are_refused_when_reading_too(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    for bad in ("", 5, None):
        with pytest.raises(ValueError):
            store.load(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            store.delete(bad)  # type: ignore[arg-type]


def test_list_filters_by_an_exact_case_sensitive_prefix(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    for key in ("sess-1.v1.0", "sess-1.v1.1", "sess-2.v1.0"):
        store.save({"runId": key})
    assert store.list("sess-1.") == ["sess-1.v1.0", "sess-1.v1.1"]
    assert len(store.list()) == 3

    for key in ("sess_1.x", "sessA1.x", "100%.x", "100a.x", "User-1", "user-2", "a*b", "a[1]"):
        store.save({"runId": key})
    assert store.list("sess_") == ["sess_1.x"]
    assert store.list("100%") == ["100%.x"]
    assert store.list("user-") == ["user-2"]
    assert store.list("a*") == ["a*b"]
    assert store.list("a[") == ["a[1]"]


def test_keys_are_kept_exactly(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    keys = ["../x", "..", ".", "/etc/passwd", "a/b", "a\\b", "%2e%2e%2f", "é", "'*()!~", "sp ace"]
    for key in keys:
        store.save({"runId": key, "key": key})
    assert store.list() == sorted(keys)
    for key in keys:
        assert store.load(key) == {"runId": key, "key": key}


def test_a_conditional_save_refuses_a_stale_writer(make_snapshots: SnapshotFactory) -> None:
    store = make_snapshots()
    if not store.versioned:
        with pytest.raises(ConditionalSaveUnsupportedError):
            store.save({"runId": "r"}, expected_version=0)
        return
    store.save({"runId": "r", "step": 1}, expected_version=0)
    loaded = store.load_versioned("r")
    assert loaded == ({"runId": "r", "step": 1}, 1)

    store.save({"runId": "r", "step": 2}, expected_version=1)
    with pytest.raises(SnapshotConflictError) as lost:
        make_snapshots().save({"runId": "r", "step": "stale"}, expected_version=1)
    assert (lost.value.key, lost.value.expected_version, lost.value.actual_version) == ("r", 1, 2)
    with pytest.raises(SnapshotConflictError) as inserted:
        store.save({"runId": "r", "step": "again"}, expected_version=0)
    assert inserted.value.actual_version == 2
    with pytest.raises(SnapshotConflictError) as missing:
        store.save({"runId": "gone"}, expected_version=3)
    assert missing.value.actual_version is None
    assert store.load("r") == {"runId": "r", "step": 2}

    store.save({"runId": "r", "step": 3})  # a plain save still overwrites, and counts
    assert store.load_versioned("r") == ({"runId": "r", "step": 3}, 3)
