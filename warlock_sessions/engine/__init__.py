"""The pure turn engine: session blobs, flows, runs, waits and wakes.

Nothing under ``warlock_sessions.engine`` imports Django, so this package works in any Python
process: ``python -c "import warlock_sessions.engine"`` needs no settings.
"""

from .agent import ActionContext, Agent
from .fakes import FakeClock, FakeModel, FakeModelExhausted, MemoryScheduler
from .outcomes import OUTCOME_MESSAGES
from .ports import (
    Deferral,
    IdleRequest,
    Model,
    ProviderError,
    SpeakRequest,
    Spoken,
    TalkRequest,
    Understanding,
    UnderstandRequest,
)
from .predicates import PredicateContext
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
from .turn import SystemClock, TurnResult, pending_wakes, turn

__all__ = [
    "OUTCOME_MESSAGES",
    "RUN_STATUSES",
    "SESSION_FORMAT",
    "ActionContext",
    "Agent",
    "Deferral",
    "FakeClock",
    "FakeModel",
    "FakeModelExhausted",
    "IdleRequest",
    "MemoryScheduler",
    "Model",
    "PredicateContext",
    "ProviderError",
    "Run",
    "Session",
    "SpeakRequest",
    "Spoken",
    "StepOutcome",
    "SystemClock",
    "TalkRequest",
    "TurnResult",
    "UnderstandRequest",
    "Understanding",
    "assert_session",
    "decode_session",
    "encode_session",
    "migrate_session",
    "new_session",
    "pending_wakes",
    "turn",
]
