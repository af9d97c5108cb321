"""RedisStore: one Redis hash per session, saved by an atomic check-and-set Lua script."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..engine.session import Session
from ..errors import ServiceUnavailableError, SessionConflictError
from .base import Store
from .outages import REDIS_ERRORS

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


Method = TypeVar("Method", bound=Callable[..., Any])


def fails_closed(method: Method) -> Method:
    """``method`` of a Redis backend, raising ``ServiceUnavailableError`` (503 unavailable over
    HTTP, an ``unavailable`` frame on a socket) when the server does not answer: nothing is
    read, written or locked then, and the caller is told so in one kind of error."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except REDIS_ERRORS as error:
            raise ServiceUnavailableError("Redis", str(error) or type(error).__name__) from error

    return call  # type: ignore[return-value]


def redis_module() -> Any:
    try:
        import redis
    except ImportError as error:  # the optional extra is missing
        raise ImportError(
            "the Redis stores need the redis client: pip install 'warlock-sessions[redis]'"
        ) from error
    return redis


class RedisStore(Store):
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
        if ttl is not None and ttl <= 0:
            raise ValueError(f"ttl must be a positive number of seconds, not {ttl!r}")
        self.client = redis_client(client, url, "RedisStore")
        self.prefix = prefix
        self.ttl_ms = round(ttl * 1000) if ttl else 0
        self._save_script = self.client.register_script(_SAVE_SCRIPT)

    def _key(self, session_id: str) -> str:
        return self.prefix + session_id

    @fails_closed
    def _read(self, session_id: str) -> tuple[bytes | str, int] | None:
        version, blob = self.client.hmget(self._key(session_id), ["version", "blob"])
        if blob is None or version is None:
            return None
        return blob, int(version)

    @fails_closed
    def _write(self, session: Session, expected: int, text: str) -> None:
        session_id = session["id"]
        found = int(
            self._save_script(keys=[self._key(session_id)], args=[expected, text, self.ttl_ms])
        )
        if found != _WRITTEN:
            raise SessionConflictError(session_id, expected, None if found == _GONE else found)

    @fails_closed
    def _remove(self, session_id: str) -> bool:
        return bool(self.client.delete(self._key(session_id)))


def redis_client(client: Any, url: str | None, who: str) -> Any:
    """The client every Redis class is given: ``client``, or one made from ``url``; exactly
    one of them (none guesses a server)."""
    if (client is None) == (url is None):
        raise ValueError(f"{who} needs exactly one of client= or url=")
    return client if client is not None else redis_module().Redis.from_url(url)


class RedisConnected:
    """What the Redis snapshot and checkpoint stores share: a client (``client`` or ``url``,
    as every Redis class takes it), a key prefix and an optional TTL in seconds (a float, as
    ``RedisStore``'s and ``RedisLock``'s)."""

    def __init__(
        self, client: Any = None, *, url: str | None = None, prefix: str, ttl: float | None = None
    ) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise ValueError(f"ttl is a number of seconds > 0, not {ttl!r}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl is a number of seconds > 0, not {ttl!r}")
        self.client = redis_client(client, url, type(self).__name__)
        self.prefix = prefix
        self.ttl = ttl
        #: The TTL as Redis' PX takes it (0: none).
        self.ttl_ms = max(1, round(ttl * 1000)) if ttl is not None else 0
