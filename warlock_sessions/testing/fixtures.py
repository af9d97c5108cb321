"""pytest fixtures for users' tests: ``pytest_plugins = ["warlock_sessions.testing.fixtures"]``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..engine.session import Session
from ..stores.memory import MemoryStore
from .blobs import realistic_session, session_blob
from .dialogue import Dialogue


@pytest.fixture
def memory_store() -> MemoryStore:
    """An empty in-process store."""
    return MemoryStore()


@pytest.fixture
def django_store(db: None):  # type: ignore[no-untyped-def]
    """A ``DjangoStore`` on the test database (uses pytest-django's ``db`` fixture)."""
    from ..stores.db import DjangoStore

    return DjangoStore()


@pytest.fixture
def dialogue() -> Callable[..., Dialogue]:
    """Makes a ``Dialogue``: ``dialogue(agent, store=..., clock=..., model=...)``."""
    return Dialogue


@pytest.fixture
def fresh_session() -> Session:
    """A valid, empty v4 session with id ``s1`` at version 0."""
    return session_blob("s1")


@pytest.fixture
def busy_session() -> Session:
    """A ~20 KB session as a busy conversation leaves it (three runs, full outcome logs)."""
    return realistic_session("s1")
