"""One mapping from an error to what a client sees: said on the error's class (``errors``), read
by one handler per transport (``failures.client_failure``). ``errors`` is the one list of the
package's errors: every one defined anywhere is named there."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
from django.db import OperationalError

import warlock_sessions
from warlock_sessions import errors
from warlock_sessions.failures import client_failure


def every_error_class() -> set[type[errors.WarlockError]]:
    found: set[type[errors.WarlockError]] = set()
    for module in pkgutil.walk_packages(warlock_sessions.__path__, "warlock_sessions."):
        if ".migrations" in module.name or module.name.startswith("warlock_sessions.testing"):
            continue
        try:
            imported = importlib.import_module(module.name)
        except ImportError:  # an extra not installed here (a framework's)
            continue
        for _, value in inspect.getmembers(imported, inspect.isclass):
            if issubclass(value, errors.WarlockError) and value.__module__ == module.name:
                found.add(value)
    return found


def test_every_error_of_the_package_is_named_in_errors() -> None:
    classes = every_error_class()
    assert len(classes) > 50
    for kind in classes:
        assert getattr(errors, kind.__name__) is kind, f"{kind.__module__}.{kind.__name__}"


def test_the_four_that_lived_elsewhere_are_named_in_errors() -> None:
    from warlock_sessions.conf import SettingError, SettingImportError
    from warlock_sessions.engine import ProviderError
    from warlock_sessions.snapshots.db import SnapshotInTransactionError

    assert errors.SettingError is SettingError
    assert errors.SettingImportError is SettingImportError
    assert errors.SnapshotInTransactionError is SnapshotInTransactionError
    assert errors.ProviderError is ProviderError
    with pytest.raises(AttributeError):
        errors.NoSuchError  # noqa: B018


@pytest.mark.parametrize(
    "kind",
    sorted(
        (kind for kind in every_error_class() if kind.default_code is not None),
        key=repr,
    ),
    ids=lambda kind: str(getattr(kind, "__name__", kind)),
)
def test_an_error_a_client_is_told_of_has_a_stable_code_and_a_status(
    kind: type[errors.WarlockError],
) -> None:
    assert kind.default_code is not None and re.fullmatch(r"[a-z]+(-[a-z]+)*", kind.default_code)
    assert 400 <= kind.status_code < 600
    assert kind.close_code in (None, errors.UNAUTHORISED_CLOSE)


#: What clients are told, pinned (docs/api.md): an error, then its status, code and fields.
TOLD = [
    (errors.InvalidInputError("message.text", "expected text"), 400, "invalid-input",
     {"field": "message.text"}),
    (errors.InputNotAllowedError("event", "server code only"), 403, "input-not-allowed",
     {"field": "event"}),
    (errors.AgentNotConfiguredError("no agent 'x'"), 400, "invalid-input", {"field": "agent"}),
    (errors.NoConversationAgentError("not set"), 503, "no-conversation-agent", {}),
    (errors.QuotaExceededError("sessions", 5), 403, "quota-exceeded", {"limit": 5}),
    (errors.SessionConflictError("s", 1, 2), 409, "session-conflict",
     {"expected_version": 1, "actual_version": 2}),
    (errors.ConversationConflictError("c", 1, None), 409, "conversation-conflict",
     {"expected_version": 1, "actual_version": None}),
    (errors.LeaseLostError("c"), 409, "conversation-conflict", {}),
    (errors.SessionLockTimeout("c", 5), 409, "conversation-busy", {}),
    (errors.ResumeInProgressError("c", "later"), 409, "conversation-busy", {}),
    (errors.SessionNotFoundError("c"), 404, "conversation-not-found", {}),
    (errors.SessionExistsError("c"), 409, "conversation-exists", {}),
    (errors.ToolPairError("cut"), 400, "split-tool-pair", {}),
    (errors.AgentDriftError("r", "a", "b"), 409, "agent-drift", {}),
    (errors.AgentExecutionError("no snapshot"), 409, "not-resumable", {}),
    (errors.RunCancelledError("r"), 409, "run-cancelled", {}),
    (errors.InvalidSessionError("s", "no runs"), 400, "invalid-session", {}),
    (errors.NewVisitorsThrottledError(30.0), 429, "throttled", {"retry_after": 30.0}),
    (errors.TenantUnresolvedError(), 403, "tenant-unresolved", {}),
    (errors.SessionOfAnotherTenantError("s"), 404, "session-not-found", {}),
    (errors.OfAnotherTenantError("snapshot", "k"), 404, "not-found", {}),
    (errors.ProviderError("provider-unavailable", True, detail="key sk-123 refused"), 503,
     "provider-unavailable", {"retryable": True}),
    (errors.NoModelError("agent 'x' has no model"), 503, "no-model", {}),
    (errors.SealedValueError(("t", "1"), "does not open"), 409, "encryption-error", {}),
    (errors.ServiceUnavailableError("redis", "refused", 3.0), 503, "unavailable",
     {"retry_after": 3.0}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("error", "status", "code", "fields"), TOLD, ids=[type(row[0]).__name__ for row in TOLD]
)
def test_what_a_client_is_told(
    error: errors.WarlockError, status: int, code: str, fields: dict[str, object]
) -> None:
    failure = client_failure(error)
    assert failure is not None
    assert (failure.status, failure.code, failure.fields) == (status, code, fields)


def test_what_is_for_the_log_only_is_not_told() -> None:
    provider = client_failure(errors.ProviderError("provider-unavailable", True, detail="sk-123"))
    sealed = client_failure(errors.SealedValueError(("warlock_sessions", "s1"), "does not open"))
    assert provider is not None and "sk-123" not in provider.detail
    assert sealed is not None and "s1" not in sealed.detail


def test_an_outage_is_unavailable_and_a_bug_is_not_told() -> None:
    outage = client_failure(OperationalError("server closed the connection unexpectedly"))
    assert outage is not None and (outage.status, outage.code, outage.outage) == (
        503,
        "unavailable",
        True,
    )
    assert client_failure(ValueError("a bug")) is None
    assert client_failure(errors.FlowConfigurationError("flows.x", "bad")) is None


def test_a_socket_closes_for_an_id_of_another_tenant_and_tells_the_rest() -> None:
    assert client_failure(errors.SessionOfAnotherTenantError("s")).close_code == 4403  # type: ignore[union-attr]
    assert client_failure(errors.TenantUnresolvedError()).close_code == 4403  # type: ignore[union-attr]
    assert client_failure(errors.QuotaExceededError("sessions", 5)).close_code is None  # type: ignore[union-attr]
