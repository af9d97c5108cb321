"""What the snapshot and checkpoint stores are both built on (``KeyedStore``): keys checked once,
as every backend can keep them; prefixes checked alike; ``delete`` answering whether there was
anything; a schema to run and resources given back while idle."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from ..engine.session import json_problem
from ..errors import InvalidSnapshotError

#: Longest key every backend accepts (the Django columns' length).
MAX_KEY_LENGTH = 255


def check_key(key: object, what: str = "runId", kind: str = "snapshot") -> str:
    """``key`` if a ``kind`` (a snapshot, a checkpoint) may be stored under it."""
    if not isinstance(key, str) or not key:
        raise InvalidSnapshotError(f"a {kind}'s {what} must be non-empty text, not {key!r:.60}")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidSnapshotError(
            f"a {kind}'s {what} is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}"
        )
    problem = json_problem(key)
    if problem is not None:
        raise InvalidSnapshotError(f"a {kind}'s {what} {problem[1]}")
    return key


class KeyedStore(ABC):
    """The template's shared part; each family adds its own operations over checked keys."""

    #: What the store keeps, as its errors name it.
    kind: ClassVar[str]

    def check_key(self, key: object, what: str) -> str:
        return check_key(key, what, self.kind)

    def check_prefix(self, prefix: object) -> str:
        """A ``list`` prefix: text (``None`` lists every key)."""
        if prefix is None:
            return ""
        if not isinstance(prefix, str):
            raise InvalidSnapshotError(f"a {self.kind} prefix is text, not {prefix!r:.60}")
        return prefix

    def idle(self) -> None:
        """The store is not used for a while (a model call, a lock wait): give back what it
        holds of shared resources. Nothing, unless a backend holds some."""
        return None

    def schema(self) -> str:
        """The DDL to run before using the store (``""`` when it needs none)."""
        return ""
