"""Moved to ``backends/postgresql/base.py``; Django loads this module for the old ``ENGINE``."""

from ...backends.postgresql.base import DatabaseWrapper  # noqa: F401
