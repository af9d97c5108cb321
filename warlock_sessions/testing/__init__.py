"""Test kit for users' tests and ours: the engine's scripted fakes, blob builders, factories and
pytest fixtures.

``warlock_sessions.testing`` itself is pure Python. The Django factories live in
``warlock_sessions.testing.factories`` (needs factory-boy) and the pytest fixtures in
``warlock_sessions.testing.fixtures`` (add it to ``pytest_plugins``).
"""

from ..engine.fakes import FakeClock, FakeModel, FakeModelExhausted, MemoryScheduler
from .blobs import T0, T0_MS, outcome_line, realistic_session, run_blob, session_blob
from .dialogue import Dialogue, Said

__all__ = [
    "T0",
    "T0_MS",
    "Dialogue",
    "FakeClock",
    "FakeModel",
    "FakeModelExhausted",
    "MemoryScheduler",
    "Said",
    "outcome_line",
    "realistic_session",
    "run_blob",
    "session_blob",
]
