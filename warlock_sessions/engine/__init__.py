"""The pure turn engine: session blobs and (with the turn function) flows, runs and wakes.

Nothing under ``warlock_sessions.engine`` imports Django, so this package works in any Python
process: ``python -c "import warlock_sessions.engine"`` needs no settings.
"""

from .session import (
    RUN_STATUSES,
    SESSION_FORMAT,
    Run,
    Session,
    StepOutcome,
    assert_session,
    decode_session,
    encode_session,
    migrate_session,
    new_session,
)

__all__ = [
    "RUN_STATUSES",
    "SESSION_FORMAT",
    "Run",
    "Session",
    "StepOutcome",
    "assert_session",
    "decode_session",
    "encode_session",
    "migrate_session",
    "new_session",
]
