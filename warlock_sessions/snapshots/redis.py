"""RedisSnapshotStore: one Redis string per snapshot (the ``redis`` extra)."""

from __future__ import annotations

from typing import Any

from ..backends.redis import RedisConnected, fails_closed, glob_escape
from .base import SnapshotStore


class RedisSnapshotStore(RedisConnected, SnapshotStore):
    """Each snapshot is the JSON string at ``prefix + key`` (default
    ``warlock:supervisor:snapshot:``), set with ``PX`` when ``ttl`` (seconds, a float) is given.
    ``list`` walks ``SCAN MATCH``, never ``KEYS``, so it never blocks the server."""

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = "warlock:supervisor:snapshot:",
        ttl: float | None = None,
    ) -> None:
        super().__init__(client, url=url, prefix=prefix, ttl=ttl)

    @fails_closed
    def _read(self, key: str) -> tuple[bytes, int] | None:
        value = self.client.get(self.key(key))
        return None if value is None else (value, 0)

    @fails_closed
    def _write(self, key: str, text: str, expected: int | None) -> None:
        self.client.set(self.key(key), text, px=self.ttl_ms or None)

    @fails_closed
    def _remove(self, key: str) -> bool:
        return bool(self.client.delete(self.key(key)))

    @fails_closed
    def _keys(self, prefix: str) -> list[str]:
        start = len(self.prefix)
        pattern = glob_escape(self.prefix + prefix) + "*"
        return [
            (name.decode() if isinstance(name, bytes) else name)[start:]
            for name in self.client.scan_iter(match=pattern, count=500)
        ]
