"""RedisLock: ``SET key token NX PX ttl``, renewed and released by compare-and-set scripts."""

from __future__ import annotations

from typing import Any

from ..backends.redis import RedisConnected, fails_closed
from .base import LeasedLock

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisLock(RedisConnected, LeasedLock):
    """The lock of ``key`` is the string ``prefix + key`` holding the holder's token, expiring
    after ``ttl``; only that token renews or deletes it."""

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = "warlock:lock:",
        ttl: float = 30.0,
        timeout: float | None = None,
    ) -> None:
        RedisConnected.__init__(self, client, url=url, prefix=prefix, ttl=ttl)
        LeasedLock.__init__(self, ttl=ttl, timeout=timeout)
        self._renew_script = self.client.register_script(_RENEW)
        self._release_script = self.client.register_script(_RELEASE)

    @fails_closed
    def _try_acquire(self, key: str, token: str) -> bool:
        return bool(self.client.set(self.key(key), token, nx=True, px=self.ttl_ms))

    @fails_closed
    def _renew(self, key: str, token: str) -> bool:
        return bool(self._renew_script(keys=[self.key(key)], args=[token, self.ttl_ms]))

    @fails_closed
    def _release(self, key: str, token: str) -> None:
        self._release_script(keys=[self.key(key)], args=[token])
