"""Moved to ``backends/outages.py`` (the plumbing every backend family shares); this import
path, named in logging configurations, keeps working."""

from ..backends.outages import (  # noqa: F401
    REDIS_ERRORS,
    RETRY_AFTER,
    OutageLog,
    RepeatFilter,
    unavailable,
)
