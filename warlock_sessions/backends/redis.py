"""What every Redis class shares: the optional client imported on first use, errors turned into
``ServiceUnavailableError``, and one way to be given a server, a key prefix and a TTL."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ServiceUnavailableError
from .outages import REDIS_ERRORS

Method = TypeVar("Method", bound=Callable[..., Any])
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def glob_escape(text: str) -> str:
    """``text`` matched literally in a Redis ``MATCH`` pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


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


def redis_client(client: Any, url: str | None, who: str) -> Any:
    """The client every Redis class is given: ``client``, or one made from ``url``; exactly
    one of them (none guesses a server)."""
    if (client is None) == (url is None):
        raise ValueError(f"{who} needs exactly one of client= or url=")
    if client is not None and not all(
        callable(getattr(client, method, None)) for method in ("execute_command", "register_script")
    ):
        # Refused now rather than at the first call (a run would report success while every
        # snapshot save failed).
        raise ValueError(f"{who} needs a redis.Redis client, not {type(client).__name__}")
    return client if client is not None else redis_module().Redis.from_url(url)


class RedisConnected:
    """What every Redis class (``RedisStore``, ``RedisSnapshotStore``, ``RedisCheckpointStore``,
    ``RedisLock``) is built on: a client (exactly one of ``client`` or ``url``), a key prefix
    written before each key as it is (``key``), and an optional TTL in seconds, a float."""

    def __init__(
        self, client: Any = None, *, url: str | None = None, prefix: str, ttl: float | None = None
    ) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise ValueError(f"ttl is a number of seconds > 0, not {ttl!r}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl is a number of seconds > 0, not {ttl!r}")
        self.client = redis_client(client, url, type(self).__name__)
        self.prefix = prefix
        #: The TTL as Redis' PX takes it (0: none).
        self.ttl_ms = max(1, round(ttl * 1000)) if ttl is not None else 0

    def key(self, name: str) -> str:
        return self.prefix + name
