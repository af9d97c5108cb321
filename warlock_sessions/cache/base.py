"""The CacheStore contract every semantic-cache backend implements (docs/cache.md).

An entry is one cached answer: ``{"namespace", "scope", "key", "question", "reply",
"vector", "storedAt", "expiresAt"}``. ``namespace`` and ``scope`` are where it may be read
(a store keeps every (namespace, scope) pair apart, and a read names both), ``key`` the
exact fingerprint of the call it answers, ``vector`` the unit-length embedding of its
question (``None`` when it was stored for exact repeats only), and the two moments are
seconds since the epoch: an entry past ``expiresAt`` is never returned, and nothing a read
does moves it.

``get``, ``put``, ``similar``, ``forget_scope``, ``clear`` and ``prune`` apply the checks
once, here; a backend implements the hooks. ``similar`` ranks **exactly** within the scope:
every live entry of that (namespace, scope) is scored (a dot product of unit vectors), so a
scope's own best match is never lost to entries of other scopes, whose count never changes
its cost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, TypeVar

from ..conf import Expected, expect
from ..encryption import cache_place, open_json, open_text, seal_json, seal_text
from ..errors import CacheUnsupportedError, EncryptionError
from ..redaction import redact, redact_value

logger = logging.getLogger("warlock_sessions.cache")

Entry = dict[str, Any]
#: Entry fields a store must keep, and what each holds.
FIELDS = ("namespace", "scope", "key", "question", "reply", "vector", "storedAt", "expiresAt")


def now() -> float:
    return time.time()


def live(entry: Entry, at: float) -> bool:
    expires = entry.get("expiresAt")
    return expires is None or expires > at


def check_entry(entry: Entry) -> None:
    missing = [name for name in FIELDS if name not in entry]
    if missing:
        raise ValueError(f"a cache entry needs {', '.join(missing)}")
    for name in ("namespace", "scope", "key"):
        if not isinstance(entry[name], str) or not entry[name]:
            raise ValueError(f"a cache entry's {name} is non-empty text, not {entry[name]!r}")
    vector = entry["vector"]
    if vector is not None and not (
        isinstance(vector, list | tuple)
        and vector
        and all(isinstance(v, int | float) and math.isfinite(v) for v in vector)
    ):
        raise ValueError("a cache entry's vector is a list of finite numbers, or None")


def kept_entry(entry: Entry) -> Entry:
    """``entry`` as every store keeps it: its question and reply (the answer and the turn it
    followed) redacted (``REDACT``), then sealed (``ENCRYPTION_KEYS``) and bound to the
    entry's namespace, scope and key; the key (a digest) and the vector are no text."""
    where = cache_place(entry["namespace"], entry["scope"], entry["key"])
    question = entry["question"]
    return {
        **entry,
        "question": None if question is None else seal_text(redact(question), *where),
        "reply": seal_json(redact_value(entry["reply"]), *where),
    }


def opened_entry(entry: Entry) -> Entry | None:
    """What :func:`kept_entry` kept, opened; ``None`` (a miss, logged) for one that does not
    open: a cache costs answers, never a failure."""
    where = cache_place(str(entry.get("namespace")), str(entry.get("scope")), str(entry.get("key")))
    question = entry.get("question")
    try:
        return {
            **entry,
            "question": None if question is None else open_text(question, *where),
            "reply": open_json(entry.get("reply"), *where),
        }
    except EncryptionError:
        logger.warning("a cached answer did not open: %s", "/".join(where[:3]), exc_info=True)
        return None


def hashed(text: str) -> str:
    """A scope, namespace or key as a fixed-length name a file system or Redis key holds
    (the entry itself says what it was: a read checks that)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def decoded(stored: str | bytes | None) -> Entry | None:
    """A stored entry's JSON, or ``None``: a torn or foreign value is a miss, never an
    answer."""
    if stored is None:
        return None
    try:
        entry = json.loads(stored)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def numpy() -> Any:
    """numpy, which ranks vectors (the ``cache`` and ``langgraph`` extras), imported on first
    use."""
    try:
        import numpy
    except ImportError as error:
        raise ImportError(
            "ranking vectors (the semantic cache, WarlockStore's semantic search) needs numpy: "
            "pip install numpy"
        ) from error
    return numpy


Ranked = TypeVar("Ranked")


def rank(
    query: list[float], candidates: Iterable[tuple[Any, Ranked]], top_k: int
) -> list[tuple[float, Ranked]]:
    """The ``top_k`` candidates (``(vector, what it stands for)``) most similar to ``query``,
    best first, with their cosine similarity (vectors are unit length, so a dot product)."""
    # A vector of another length (an embedder that changed) is not comparable: left out.
    pairs = [
        (vector, entry)
        for vector, entry in candidates
        if vector is not None and len(vector) == len(query)
    ]
    if not pairs:
        return []
    np = numpy()
    matrix = np.asarray([vector for vector, _ in pairs], dtype=np.float32)
    scores = matrix @ np.asarray(query, dtype=np.float32)
    best = np.argsort(-scores)[:top_k]
    return [(float(scores[index]), pairs[index][1]) for index in best]


class CacheStore(ABC):
    """Where cached answers live. Subclasses implement the hooks; see the module doc."""

    #: Whether ``similar`` works (every store here; one of your own may say no).
    similarity = True

    def get(self, namespace: str, scope: str, key: str) -> Entry | None:
        """The live entry answering ``key`` in that namespace and scope, or ``None``."""
        entry = self._get(namespace, scope, key)
        if entry is None or not live(entry, now()):
            return None
        # The scope is checked again on the entry itself: a read is authorised by what the
        # entry says, not by where it was found.
        if (entry.get("namespace"), entry.get("scope")) != (namespace, scope):
            return None
        return opened_entry(entry)

    def put(self, entry: Entry) -> None:
        """Store ``entry``, replacing the one of the same namespace, scope and key."""
        check_entry(entry)
        self._put(kept_entry(entry))

    def similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int = 3
    ) -> list[tuple[float, Entry]]:
        """The live entries of that namespace and scope nearest ``vector``, best first."""
        if not self.similarity:
            raise CacheUnsupportedError(f"{type(self).__name__} has no similarity search")
        found = self._similar(namespace, scope, vector, top_k, now())
        opened = [
            (score, opened_entry(entry))
            for score, entry in found
            if (entry.get("namespace"), entry.get("scope")) == (namespace, scope)
        ]
        return [(score, entry) for score, entry in opened if entry is not None]

    def forget_scope(self, scope: str) -> int:
        """Remove every entry of ``scope`` (a conversation deleted): how many."""
        return self._remove_scope(scope)

    def clear(self, namespace: str) -> int:
        """Remove every entry of ``namespace``: how many."""
        return self._remove_namespace(namespace)

    def prune(self) -> int:
        """Remove the expired entries: how many."""
        return self._remove_expired(now())

    @abstractmethod
    def _get(self, namespace: str, scope: str, key: str) -> Entry | None: ...

    @abstractmethod
    def _put(self, entry: Entry) -> None: ...

    @abstractmethod
    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        """Exact ranking of the live entries of (namespace, scope)."""

    @abstractmethod
    def _remove_scope(self, scope: str) -> int: ...

    @abstractmethod
    def _remove_namespace(self, namespace: str) -> int: ...

    @abstractmethod
    def _remove_expired(self, at: float) -> int: ...


expect("CACHE_STORE", Expected(CacheStore, "a CacheStore class", "warlock_sessions.E026"))
