"""RedisCacheStore: cached answers in Redis (the ``redis`` extra), no module needed."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from ..backends.redis import RedisConnected, fails_closed, glob_escape
from .base import CacheStore, Entry, decoded, hashed

_EXPIRY = struct.Struct("<d")  # an index value starts with the entry's expiry (0: never)
_ANY_HASH = "?" * 32  # one hashed segment, in a MATCH pattern


class RedisCacheStore(RedisConnected, CacheStore):
    """Each answer is the JSON string at ``prefix + <scope>:<namespace>:<key>`` (each part
    hashed), which Redis itself expires at the entry's ``expiresAt`` (``PXAT``). A hash per
    scope and namespace (``…:index``) holds every entry's expiry and vector: a similarity
    lookup reads that one hash, ranks it exactly, and reads the best entries, so its cost is
    its scope's size, whatever else the server holds. ``prune`` drops the index fields of
    expired entries."""

    def __init__(
        self, client: Any = None, *, url: str | None = None, prefix: str = "warlock:cache:"
    ) -> None:
        super().__init__(client, url=url, prefix=prefix)

    def _folder(self, namespace: str, scope: str) -> str:
        return self.key(f"{hashed(scope)}:{hashed(namespace)}:")

    @fails_closed
    def _get(self, namespace: str, scope: str, key: str) -> Entry | None:
        return decoded(self.client.get(self._folder(namespace, scope) + hashed(key)))

    @fails_closed
    def _put(self, entry: Entry) -> None:
        folder = self._folder(entry["namespace"], entry["scope"])
        name = hashed(entry["key"])
        expires = entry["expiresAt"]
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
        vector = np.asarray(entry["vector"] or [], dtype=np.float32).tobytes()
        pipe = self.client.pipeline(transaction=True)
        pipe.set(folder + name, text, pxat=None if expires is None else int(expires * 1000))
        pipe.hset(folder + "index", name, _EXPIRY.pack(expires or 0.0) + vector)
        pipe.execute()

    @fails_closed
    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        folder = self._folder(namespace, scope)
        names, vectors = [], []
        size = _EXPIRY.size + 4 * len(vector)  # a vector of another length is not comparable
        for name, value in self.client.hgetall(folder + "index").items():
            (expires,) = _EXPIRY.unpack_from(value)
            if len(value) == size and (not expires or expires > at):
                names.append(name.decode() if isinstance(name, bytes) else name)
                vectors.append(np.frombuffer(value, dtype=np.float32, offset=_EXPIRY.size))
        if not names:
            return []
        scores = np.vstack(vectors) @ np.asarray(vector, dtype=np.float32)
        order = [int(index) for index in np.argsort(-scores)]
        found: list[tuple[float, Entry]] = []
        while order and len(found) < top_k:  # an entry may be gone before its index field
            batch, order = order[: top_k * 2], order[top_k * 2 :]
            values = self.client.mget([folder + names[index] for index in batch])
            for index, value in zip(batch, values, strict=True):
                entry = decoded(value)
                if entry is not None and len(found) < top_k:
                    found.append((float(scores[index]), entry))
        return found

    def _matching(self, pattern: str) -> int:
        count = 0
        for name in self.client.scan_iter(match=pattern, count=500):
            text = name.decode() if isinstance(name, bytes) else name
            if text.endswith(":index"):
                self.client.delete(name)
            else:
                count += int(self.client.delete(name))
        return count

    @fails_closed
    def _remove_scope(self, scope: str) -> int:
        return self._matching(glob_escape(self.key(hashed(scope))) + f":{_ANY_HASH}:*")

    @fails_closed
    def _remove_namespace(self, namespace: str) -> int:
        # The scope segment is exactly 32 characters: a store whose prefix extends this
        # one's is never matched.
        return self._matching(glob_escape(self.prefix) + f"{_ANY_HASH}:{hashed(namespace)}:*")

    @fails_closed
    def _remove_expired(self, at: float) -> int:
        """Redis has removed the expired entries; their index fields go here."""
        count = 0
        pattern = glob_escape(self.prefix) + f"{_ANY_HASH}:{_ANY_HASH}:index"
        for index in self.client.scan_iter(match=pattern, count=500):
            stale = [
                name
                for name, value in self.client.hgetall(index).items()
                if (expires := _EXPIRY.unpack_from(value)[0]) and expires <= at
            ]
            if stale:
                count += int(self.client.hdel(index, *stale))
        return count
