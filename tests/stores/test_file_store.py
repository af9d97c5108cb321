"""FileStore: names that stay inside the directory, private modes, crash-safe writes."""

from __future__ import annotations

import json
import os
import stat

import pytest

from warlock_sessions.errors import InvalidSessionError
from warlock_sessions.stores import FileStore
from warlock_sessions.testing import session_blob


def mode(path) -> int:  # type: ignore[no-untyped-def]
    return stat.S_IMODE(os.stat(path).st_mode)


def test_every_id_maps_to_one_file_inside_the_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = FileStore(tmp_path / "s")
    for session_id in ["../escape", "/abs", "a\\b", "..", "%2F", "é"]:
        store.save(session_blob(session_id), 0)
    names = sorted(p.name for p in (tmp_path / "s").iterdir() if p.suffix == ".json")
    assert names == sorted(
        ["..%2Fescape.json", "%2Fabs.json", "a%5Cb.json", "...json", "%252F.json", "%C3%A9.json"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_new_directories_and_files_are_private(tmp_path) -> None:  # type: ignore[no-untyped-def]
    os.umask(0o022)
    store = FileStore(tmp_path / "a" / "b")
    store.save(session_blob("s1"), 0)
    assert mode(tmp_path / "a") == 0o700
    assert mode(tmp_path / "a" / "b") == 0o700
    assert mode(tmp_path / "a" / "b" / "s1.json") == 0o600
    assert not [p for p in (tmp_path / "a" / "b").iterdir() if p.suffix == ".tmp"]


def test_an_existing_directory_is_never_chmodded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    os.chmod(tmp_path, 0o755)
    FileStore(tmp_path).save(session_blob("s1"), 0)
    assert mode(tmp_path) == 0o755


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dir_mode": 0o777}, "lets group or others write"),
        ({"file_mode": 0o400}, "must give the owner"),
        ({"file_mode": True}, "must be an int"),
        ({"dir_mode": 0o1777}, "must be an int between"),
    ],
)
def test_unsafe_modes_are_refused(tmp_path, kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        FileStore(tmp_path, **kwargs)


def test_an_id_too_long_for_a_file_name_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="file name over 220 bytes"):
        FileStore(tmp_path).save(session_blob("é" * 100), 0)


def test_a_corrupt_file_is_an_invalid_session(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "s1.json").write_text("{truncated")
    with pytest.raises(InvalidSessionError, match="not JSON"):
        FileStore(tmp_path).load("s1")


def test_a_symlinked_session_file_is_not_followed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({**session_blob("s1"), "version": 1}))
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "s1.json").symlink_to(target)
    with pytest.raises(InvalidSessionError, match="cannot be opened"):
        FileStore(tmp_path / "store").load("s1")
