"""RedisLock: ``SET key token NX PX ttl``, renewed and released by compare-and-set scripts."""

from __future__ import annotations

from typing import Any

from ..stores.redis import fails_closed, redis_client
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


class RedisLock(LeasedLock):
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
        super().__init__(ttl=ttl, timeout=timeout)
        self.client = redis_client(client, url, "RedisLock")
        self.prefix = prefix
        self._renew_script = self.client.register_script(_RENEW)
        self._release_script = self.client.register_script(_RELEASE)

    def _ms(self) -> int:
        return max(1, round(self.ttl * 1000))

    @fails_closed
    def _try_acquire(self, key: str, token: str) -> bool:
        return bool(self.client.set(self.prefix + key, token, nx=True, px=self._ms()))

    @fails_closed
    def _renew(self, key: str, token: str) -> bool:
        return bool(self._renew_script(keys=[self.prefix + key], args=[token, self._ms()]))

    @fails_closed
    def _release(self, key: str, token: str) -> None:
        self._release_script(keys=[self.prefix + key], args=[token])
