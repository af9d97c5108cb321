"""RedisStore: one Redis hash per session, saved by an atomic check-and-set Lua script."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.redis import RedisConnected, fails_closed
from ..engine.session import Session
from ..errors import SessionConflictError
from .base import Store

if TYPE_CHECKING:
    import redis

# Returns -1 when written, -2 when an update found no row, else the version that was found.
_SAVE_SCRIPT = """
local found = redis.call('HGET', KEYS[1], 'version')
local expected = tonumber(ARGV[1])
if expected == 0 then
  if found then return tonumber(found) end
elseif not found then
  return -2
elseif tonumber(found) ~= expected then
  return tonumber(found)
end
redis.call('HSET', KEYS[1], 'version', expected + 1, 'blob', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return -1
"""
_WRITTEN, _GONE = -1, -2


class RedisStore(RedisConnected, Store):
    """Each session is the hash ``<prefix><id>`` with fields ``version`` and ``blob`` (JSON text).

    Pass a ``redis.Redis`` client or a ``url``. The version check and the write run in one Lua
    script, so they are atomic against every other client of the server. With ``ttl`` (seconds)
    every save pushes the key's expiry out; an expired session loads as ``None``.
    """

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        url: str | None = None,
        prefix: str = "warlock:session:",
        ttl: float | None = None,
    ) -> None:
        super().__init__(client, url=url, prefix=prefix, ttl=ttl)
        self._save_script = self.client.register_script(_SAVE_SCRIPT)

    @fails_closed
    def _read(self, session_id: str) -> tuple[bytes | str, int] | None:
        version, blob = self.client.hmget(self.key(session_id), ["version", "blob"])
        if blob is None or version is None:
            return None
        return blob, int(version)

    @fails_closed
    def _write(self, session: Session, expected: int, text: str) -> None:
        session_id = session["id"]
        found = int(
            self._save_script(keys=[self.key(session_id)], args=[expected, text, self.ttl_ms])
        )
        if found != _WRITTEN:
            raise SessionConflictError(session_id, expected, None if found == _GONE else found)

    @fails_closed
    def _remove(self, session_id: str) -> bool:
        return bool(self.client.delete(self.key(session_id)))
