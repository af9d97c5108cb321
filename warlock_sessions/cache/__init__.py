"""The semantic cache (docs/cache.md): answers to chat-model calls reused only where they are
safe, in a store of your choice. ``semantic_cache(...)`` builds one; ``ToolAgent(cache=...)``
uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..conf import warlock_settings
from .base import CacheStore
from .file import FileCacheStore
from .memory import MemoryCacheStore
from .semantic import CacheCall, CacheStats, SemanticCache, semantic_cache

if TYPE_CHECKING:
    from .db import DjangoCacheStore
    from .pgvector import PgVectorCacheStore
    from .redis import RedisCacheStore

__all__ = [
    "CacheCall",
    "CacheStats",
    "CacheStore",
    "DjangoCacheStore",
    "FileCacheStore",
    "MemoryCacheStore",
    "PgVectorCacheStore",
    "RedisCacheStore",
    "SemanticCache",
    "default_cache_store",
    "semantic_cache",
]


def default_cache_store() -> CacheStore | None:
    """The store of ``WARLOCK_SESSIONS["CACHE_STORE"]``, built once, or ``None``."""
    store: CacheStore | None = warlock_settings.built("CACHE_STORE")
    return store


def kept_in_database(store: CacheStore | None) -> bool:
    """Whether ``store`` keeps its answers in this app's tables (``DjangoCacheStore``, and
    ``PgVectorCacheStore``, which is one)."""
    if store is None:
        return False
    # Imported only with a store in hand: the module needs the [cache] extra's numpy.
    from .db import DjangoCacheStore

    return isinstance(store, DjangoCacheStore)


def __getattr__(name: str) -> Any:
    # Imported on first use: the model needs Django's app registry, Redis its extra.
    if name == "DjangoCacheStore":
        from .db import DjangoCacheStore

        return DjangoCacheStore
    if name == "PgVectorCacheStore":
        from .pgvector import PgVectorCacheStore

        return PgVectorCacheStore
    if name == "RedisCacheStore":
        from .redis import RedisCacheStore

        return RedisCacheStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
