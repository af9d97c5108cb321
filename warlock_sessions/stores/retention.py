"""Moved to ``host/retention.py`` (what the host keeps, and for how long); this import path keeps
working. It is the one import upward the layers contract allows (pyproject.toml)."""

from ..host.retention import (  # noqa: F401
    DEFAULT_BATCH,
    DEFAULT_PAUSE,
    Retention,
    prune,
)
