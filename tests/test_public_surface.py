"""The public surface, pinned: every package's ``__all__`` is exactly what is listed here, and
every name in it (and every error of the contract that something raises) imports. Changing
the surface means changing this file, on purpose."""

from __future__ import annotations

import importlib

import pytest

from warlock_sessions import errors

PUBLIC = {
    "warlock_sessions.engine": {
        "ActionContext", "Agent", "Deferral", "FakeClock", "FakeModel", "FakeModelExhausted",
        "IdleRequest", "MemoryScheduler", "Model", "OUTCOME_MESSAGES", "PredicateContext",
        "ProviderError", "RUN_STATUSES", "Run", "SESSION_FORMAT", "Session", "SpeakRequest",
        "Spoken", "StepOutcome", "SystemClock", "TalkRequest", "TurnResult", "UnderstandRequest",
        "Understanding", "assert_session", "decode_session", "encode_session", "migrate_session",
        "new_session", "pending_wakes", "turn",
    },
    "warlock_sessions.stores": {
        "DjangoStore", "FileStore", "MemoryStore", "RedisStore", "SqliteStore", "Store",
        "default_store",
    },
    "warlock_sessions.providers": {
        "ChatModel", "ChatReply", "Embedder", "OfflineChatModel", "OfflineEmbedder",
        "OpenAICompatibleEmbedder", "OpenAICompatibleModel", "RuleModel", "ToolSchema",
    },
    "warlock_sessions.cache": {
        "CacheCall", "CacheStats", "CacheStore", "DjangoCacheStore", "FileCacheStore",
        "MemoryCacheStore", "PgVectorCacheStore", "RedisCacheStore", "SemanticCache",
        "default_cache_store", "semantic_cache",
    },
    "warlock_sessions.host": {
        "Host", "HostedTurn", "Shard", "Worker", "deliver_due_messages", "group_name",
        "run_due_wakes",
    },
    "warlock_sessions.snapshots": {
        "ConditionalSaveUnsupportedError", "DjangoSnapshotStore", "FileSnapshotStore",
        "InvalidSnapshotError", "MemorySnapshotStore", "PostgresSnapshotStore",
        "RedisSnapshotStore", "SnapshotCorruptError", "SnapshotStore", "SqliteSnapshotStore",
        "default_snapshot_store",
        # the contract's path of the checkpoint stores too (CONTRACT §2)
        "CheckpointStore", "DjangoCheckpointStore", "MemoryCheckpointStore",
        "PostgresCheckpointStore", "RedisCheckpointStore",
    },
    "warlock_sessions.checkpoints": {
        "CheckpointStore", "DjangoCheckpointStore", "DuplicateCheckpointError",
        "MemoryCheckpointStore", "PostgresCheckpointStore", "RedisCheckpointStore",
        "default_checkpoint_store",
    },
    "warlock_sessions.workflows": {
        "END", "SUPERVISOR_END", "Intent", "Orchestrator", "OrchestratorTurn", "Retry",
        "RunnableAgent", "Step", "StepContext",
        "Supervisor", "SupervisorContext", "SupervisorResult", "Workflow", "WorkflowResult",
        "agent_signature", "cancel_saved", "fnv1a32", "supervisor_signature",
        "workflow_signature",
    },
    "warlock_sessions.conversations": {
        "AgentResult", "AgentStream", "Compaction", "ConversationAgent", "ConversationSession",
        "ConversationStore", "DjangoConversationStore", "EventStream", "RecordConversationStore",
        "Tool", "ToolAgent", "session", "split_tool_pair", "tool",
    },
    "warlock_sessions.locks": {
        "AbortSignal", "DatabaseLock", "InProcessLock", "Lease", "LeasedLock", "NoLock",
        "PostgresAdvisoryLock", "RedisLock", "SessionLock", "check_lease",
    },
    "warlock_sessions.testing": {
        "Dialogue", "FakeClock", "FakeModel", "FakeModelExhausted", "MemoryScheduler", "Said",
        "T0", "T0_MS", "outcome_line", "realistic_session", "run_blob", "session_blob",
    },
}  # fmt: skip

CONTRACT_ERRORS = [
    "SessionConflictError", "InvalidSessionError", "FlowConfigurationError",
    "SessionNotFoundError", "SessionExistsError", "ToolPairError", "WorkflowDriftError",
    "SupervisorDriftError", "AgentDriftError", "SessionLockAborted", "SessionLockTimeout",
    "SnapshotConflictError", "AgentExecutionError", "AgentCancelledError", "ToolArgumentsError",
    "AttachmentError",
]  # fmt: skip


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_every_all_is_pinned_and_imports(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == PUBLIC[module_name]
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_the_test_fakes_are_the_engines_own() -> None:
    from warlock_sessions import engine, testing

    assert (testing.FakeModel, testing.FakeClock) == (engine.FakeModel, engine.FakeClock)


@pytest.mark.parametrize("name", CONTRACT_ERRORS)
def test_every_contract_error_is_a_warlock_error(name: str) -> None:
    assert issubclass(getattr(errors, name), errors.WarlockError)


#: The middle bases of the error family, and what each holds (errors.py's docstring).
FAMILY = {
    "ConflictError": [
        "SessionConflictError", "SnapshotConflictError", "SessionExistsError",
        "DuplicateCheckpointError",
    ],
    "InvalidDataError": [
        "InvalidSessionError", "InvalidInputError", "InvalidSnapshotError",
        "SnapshotCorruptError", "SessionTypeError", "ToolPairError", "ToolArgumentsError",
        "AttachmentError",
    ],
    "ConfigurationError": [
        "FlowConfigurationError", "AgentNotConfiguredError", "NoModelError",
        "UnnamedAgentError", "ConditionalSaveUnsupportedError", "CacheNotConfiguredError",
        "CacheUnsupportedError",
    ],
    "RunFailedError": [
        "WorkflowError", "SupervisorFailedError", "AgentExecutionError", "AgentCancelledError",
        "RunCancelledError", "RunNotRunningError",
        "DriftError", "WorkflowDriftError", "SupervisorDriftError", "AgentDriftError",
        "OrchestratorDriftError",
    ],
    "LockError": [
        "SessionLockTimeout", "SessionLockAborted", "LeaseLostError", "ResumeInProgressError",
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("base", "name"), [(base, name) for base, names in FAMILY.items() for name in names]
)
def test_each_error_sits_under_its_middle_base(base: str, name: str) -> None:
    assert issubclass(getattr(errors, name), getattr(errors, base))


def test_errors_that_moved_to_errors_py_still_import_from_where_they_were() -> None:
    from warlock_sessions.checkpoints import base as checkpoints
    from warlock_sessions.conf import SettingError
    from warlock_sessions.snapshots import base as snapshots
    from warlock_sessions.snapshots.db import SnapshotInTransactionError

    for name in ("InvalidSnapshotError", "SnapshotCorruptError", "ConditionalSaveUnsupportedError"):
        assert getattr(snapshots, name) is getattr(errors, name)
    assert checkpoints.DuplicateCheckpointError is errors.DuplicateCheckpointError
    assert issubclass(SettingError, errors.ConfigurationError)
    assert issubclass(SnapshotInTransactionError, errors.ConfigurationError)


#: Modules that moved, and names their old paths still give (the new module's own objects).
MOVED = {
    ("warlock_sessions.api.views", "warlock_sessions.api.sessions"): ["SessionViewSet"],
    ("warlock_sessions.realtime.consumers", "warlock_sessions.realtime.sessions"): [
        "SessionConsumer"
    ],
    ("warlock_sessions.stores.outages", "warlock_sessions.backends.outages"): [
        "OutageLog", "RepeatFilter", "RETRY_AFTER", "unavailable"
    ],
    ("warlock_sessions.stores.retention", "warlock_sessions.host.retention"): [
        "Retention", "prune"
    ],
    ("warlock_sessions.stores.postgresql.base", "warlock_sessions.backends.postgresql.base"): [
        "DatabaseWrapper"
    ],
}  # fmt: skip


@pytest.mark.parametrize("paths", sorted(MOVED), ids=lambda paths: paths[0])
def test_every_old_import_path_still_gives_the_moved_names(paths: tuple[str, str]) -> None:
    old, new = (importlib.import_module(path) for path in paths)
    for name in MOVED[paths]:
        assert getattr(old, name) is getattr(new, name), name
