"""RedisCheckpointStore: each session's rows as one JSON document, indexed per orchestrator."""

from __future__ import annotations

import builtins
import json
from typing import Any

from ..backends.redis import RedisConnected, fails_closed, redis_module
from ..errors import InvalidSnapshotError
from .base import CheckpointStore, DuplicateCheckpointError

# Append a row unless its turn is stored: {"rows": [...]} read, checked and written in one
# step, so two writers of one session cannot both add a turn (or lose each other's). The new
# row's JSON is spliced in as text: cjson would turn an empty list in a stored state into {}.
_APPEND = """
local doc = redis.call('GET', KEYS[1])
local turn = tonumber(ARGV[4])
local written
if doc then
  for _, stored in ipairs(cjson.decode(doc)['rows']) do
    if stored['turn_index'] == turn then return 0 end
  end
  written = string.sub(doc, 1, -3) .. ', ' .. ARGV[1] .. ']}'
else
  written = '{"rows": [' .. ARGV[1] .. ']}'
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[1], written, 'PX', ttl)
else
  redis.call('SET', KEYS[1], written)
end
redis.call('SADD', KEYS[2], ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""


class RedisCheckpointStore(RedisConnected, CheckpointStore):
    """Rows at ``{prefix}session:{name}:{sid}`` as ``{"rows": [...]}``; the sessions of an
    orchestrator in the set ``{prefix}index:{name}`` (``SADD``/``SREM``: concurrent saves of
    different sessions never lose each other). With ``ttl`` every write sets ``PX``. An
    orchestrator name may not hold ``:`` (``a:b`` + ``c`` would read as ``a`` + ``b:c``)."""

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = "warlock:orchestrator:",
        ttl: float | None = None,
    ) -> None:
        if isinstance(prefix, str) and not prefix.endswith(":"):
            # This class alone used to put the ':' after its prefix itself: refusing a prefix
            # without one keeps the keys of existing checkpoints where they were.
            raise ValueError(
                f"RedisCheckpointStore's prefix is written before its keys as is, as every Redis "
                f"class's is: pass {prefix + ':'!r} to keep the keys {prefix + ':session:…'!r}"
            )
        super().__init__(client, url=url, prefix=prefix, ttl=ttl)
        self._append = self.client.register_script(_APPEND)

    def _document(self, name: str, session_id: str) -> str:
        if ":" in name:
            raise InvalidSnapshotError(f"an orchestrator name may not hold ':', got {name!r}")
        return self.key(f"session:{name}:{session_id}")

    def _index(self, name: str) -> str:
        return self.key(f"index:{name}")

    def _rows(self, name: str, session_id: str) -> builtins.list[dict[str, Any]]:
        stored = self.client.get(self._document(name, session_id))
        rows: builtins.list[dict[str, Any]] = json.loads(stored)["rows"] if stored else []
        return rows

    @fails_closed
    def _load(self, name: str, session_id: str) -> dict[str, Any] | None:
        rows = self._rows(name, session_id)
        return max(rows, key=lambda row: row["turn_index"]) if rows else None

    @fails_closed
    def _save(self, row: dict[str, Any]) -> None:
        checked = row
        name, session_id = checked["orchestrator_name"], checked["session_id"]
        appended = self._append(
            keys=[self._document(name, session_id), self._index(name)],
            args=[
                json.dumps(checked, ensure_ascii=False),
                self.ttl_ms,
                session_id,
                checked["turn_index"],
            ],
        )
        if not appended:
            raise DuplicateCheckpointError(name, session_id, checked["turn_index"])

    @fails_closed
    def _delete(self, name: str, session_id: str) -> bool:
        deleted = self.client.delete(self._document(name, session_id))
        self.client.srem(self._index(name), session_id)
        return bool(deleted)

    @fails_closed
    def _list(self, name: str, prefix: str | None) -> builtins.list[str]:
        members = self.client.smembers(self._index(name))
        found = (m.decode() if isinstance(m, bytes) else m for m in members)
        return sorted(sid for sid in found if sid.startswith(prefix or ""))

    @fails_closed
    def _prune(self, name: str, session_id: str, keep_before: int) -> None:
        """Rewrite the session's document without the old turns, under ``WATCH``: a turn
        appended meanwhile makes the rewrite start over instead of losing that turn."""
        document = self._document(name, session_id)
        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(document)
                    stored = pipe.get(document)
                    rows = json.loads(stored)["rows"] if stored else []
                    kept = [row for row in rows if row["turn_index"] >= keep_before]
                    pipe.multi()
                    if kept:
                        text = json.dumps({"rows": kept}, ensure_ascii=False)
                        pipe.set(document, text, px=self.ttl_ms or None)
                    else:
                        pipe.delete(document)
                        pipe.srem(self._index(name), session_id)
                    pipe.execute()
                    return
                except redis_module().WatchError:
                    continue
