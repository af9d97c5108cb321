"""The SnapshotStore contract every backend implements (docs/snapshots.md).

A snapshot is a JSON object keyed by its ``runId``: the state of one workflow, supervisor or
agent run, saved after every step so the run can resume after a crash. One live snapshot per
key: ``save`` overwrites. ``load``, ``save``, ``delete`` and ``list`` apply the contract's checks
once, here; a backend implements ``_read``, ``_write``, ``_remove`` and ``_keys`` over checked
values and JSON text, so every store copies on save and on load.

A store that can also save **conditionally** (``versioned = True``: the Django and memory
stores) keeps an integer version per key: ``save(snapshot, expected_version=v)`` writes only
when the stored version is ``v`` (0: none is stored) and otherwise raises
``SnapshotConflictError``, so two processes resuming one run cannot both write.
"""

from __future__ import annotations

import builtins
import json
from abc import abstractmethod
from typing import Any

from ..backends.keyed import KeyedStore, check_key
from ..conf import Expected, expect
from ..encryption import SEALED, is_sealed, open_json, open_text, seal_text, sealing, snapshot_place
from ..engine.session import NotJsonError, json_text
from ..errors import ConditionalSaveUnsupportedError, SnapshotConflictError, SnapshotCorruptError

# The snapshot stores' errors live in errors.py; importable from here as before.
from ..errors import InvalidSnapshotError as InvalidSnapshotError
from ..errors import SnapshotError as SnapshotError
from ..redaction import redact_value


def encode_snapshot(snapshot: object) -> tuple[str, str]:
    """The snapshot's key and its JSON text (its text redacted when ``REDACT`` is set), or
    ``InvalidSnapshotError`` naming what is off."""
    if not isinstance(snapshot, dict):
        raise InvalidSnapshotError(f"a snapshot is a JSON object, not {type(snapshot).__name__}")
    key = check_key(snapshot.get("runId"))
    kept: dict[str, Any] = redact_value(snapshot)
    try:
        text = json_text(kept)
    except NotJsonError as problem:
        raise InvalidSnapshotError(f"snapshot {key!r}: {problem}") from None
    if not sealing():
        return key, text
    # What stores, retention and erasure select rows by stays in the clear; every other key
    # is there as a null marker (a "pending" turn is found by its key), its value sealed.
    clear = {name: kept[name] for name in CLEAR_KEYS if name in kept}
    markers = {name: None for name in kept if name not in clear}
    sealed = {**markers, **clear, SEALED: seal_text(text, *snapshot_place(key))}
    return key, json.dumps(sealed, ensure_ascii=False, separators=(",", ":"))


def decode_snapshot(stored: str | bytes | object, key: str) -> dict[str, Any]:
    """The stored snapshot as a fresh object (a backend that decodes JSON itself, like a
    ``JSONField``, hands over a fresh object already)."""
    try:
        value = json.loads(stored) if isinstance(stored, str | bytes) else stored
    except ValueError as error:
        raise SnapshotCorruptError(key, f"is not JSON ({error})") from None
    if not isinstance(value, dict):
        raise SnapshotCorruptError(key, f"is a {type(value).__name__}, not an object")
    return opened_snapshot(value, key)


#: What a sealed snapshot keeps in the clear: what stores, retention, erasure and the admin's
#: lists select by.
CLEAR_KEYS = ("runId", "type", "status", "sessionId")


def opened_snapshot(stored: dict[str, Any], key: str) -> dict[str, Any]:
    """A stored snapshot as it was saved, opened if it was sealed (``ENCRYPTION_KEYS``)."""
    if is_sealed(stored.get(SEALED)):
        opened: dict[str, Any] = json.loads(open_text(stored[SEALED], *snapshot_place(key)))
        return opened
    plain: dict[str, Any] = open_json(stored, *snapshot_place(key))
    return plain


class SnapshotStore(KeyedStore):
    """Where run snapshots live. Subclasses implement the four hooks; see the module doc."""

    kind = "snapshot"
    #: Whether ``save`` takes ``expected_version`` and ``load_versioned`` works.
    versioned = False

    def load(self, run_id: str) -> dict[str, Any] | None:
        """A fresh copy of the stored snapshot, or ``None``."""
        key = check_key(run_id)
        stored = self._read(key)
        return None if stored is None else decode_snapshot(stored[0], key)

    def load_versioned(self, run_id: str) -> tuple[dict[str, Any], int] | None:
        """The snapshot and its version, for a later conditional ``save``."""
        self._require_versions()
        key = check_key(run_id)
        stored = self._read(key)
        if stored is None:
            return None
        return decode_snapshot(stored[0], key), stored[1]

    def save(self, snapshot: dict[str, Any], *, expected_version: int | None = None) -> None:
        """Store a copy of ``snapshot`` under its ``runId``. Without ``expected_version`` the
        save overwrites; with it, the stored version must be exactly that (0: none stored),
        and the snapshot is then stored as ``expected_version + 1``."""
        key, text = encode_snapshot(snapshot)
        if expected_version is not None:
            self._require_versions()
            if type(expected_version) is not int or expected_version < 0:
                raise ValueError(
                    f"expected_version must be a whole number >= 0, not {expected_version!r}"
                )
        self._write(key, text, expected_version)

    def delete(self, run_id: str) -> bool:
        """Remove the snapshot: whether there was one (none is fine)."""
        return self._remove(check_key(run_id))

    def list(self, prefix: str | None = None) -> builtins.list[str]:
        """Every stored key starting with ``prefix`` (exact and case-sensitive), sorted."""
        start = self.check_prefix(prefix)
        return sorted(key for key in self._keys(start) if key.startswith(start))

    def _require_versions(self) -> None:
        if not self.versioned:
            raise ConditionalSaveUnsupportedError(
                f"{type(self).__name__} keeps no versions: conditional saves need the Django "
                "or memory snapshot store"
            )

    @staticmethod
    def conflict(key: str, expected: int, actual: int | None) -> SnapshotConflictError:
        return SnapshotConflictError(key, expected, actual)

    @abstractmethod
    def _read(self, key: str) -> tuple[str | bytes | object, int] | None:
        """The stored JSON text (or an object freshly decoded from it) and version (0 where
        none is kept), or ``None``."""

    @abstractmethod
    def _write(self, key: str, text: str, expected: int | None) -> None:
        """Store ``text``; with ``expected``, only if the stored version is exactly that
        (else raise ``conflict(...)``, writing nothing)."""

    @abstractmethod
    def _remove(self, key: str) -> bool:
        """Remove the key: whether it was there."""

    @abstractmethod
    def _keys(self, prefix: str) -> builtins.list[str]:
        """Keys that may start with ``prefix`` (the base filters exactly, so a backend may
        return more, e.g. when its own matching is case-insensitive)."""


expect("SNAPSHOT_STORE", Expected(SnapshotStore, "a SnapshotStore class", "warlock_sessions.E021"))
