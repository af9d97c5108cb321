"""The exception family of warlock_sessions.

Every error the package raises on purpose is a :class:`WarlockError`, so a host can catch the
family at one place; each subclass is named after what went wrong and carries the values a
caller needs to act on it (ids, versions), not only a sentence. Under ``WarlockError``, a few
middle bases say what a caller can do about it:

* :class:`ConflictError` — someone else changed it first: reload, and send it again;
* :class:`InvalidDataError` — what was given or stored cannot be used: fix it;
* :class:`ConfigurationError` — the project is set up wrong: fix the settings or code;
* :class:`RunFailedError` — a run (workflow, supervisor, agent) cannot go on;
* :class:`LockError` — a lock was not had, or was lost;
* :class:`ServiceUnavailableError` — a service did not answer: try again later.

What a client is told of an error is said on its class, as DRF's ``APIException`` says it:
``status_code`` (HTTP), ``default_code`` (the JSON ``code``, the same over HTTP and a socket),
``close_code`` (a socket answers it by closing instead of with an ``error`` frame), and
``client_detail()``/``client_fields()``. One handler per transport reads them
(``failures.client_failure``); an error whose ``default_code`` is ``None`` is a bug to a
client: logged, and answered as a server error.

This module imports nothing from Django: the pure engine raises these too. So the three that
are also Django's ``ImproperlyConfigured`` are defined beside Django, and named here all the
same (``from warlock_sessions.errors import SettingError`` works): ``SettingError`` and
``SettingImportError`` (``conf``), ``SnapshotInTransactionError`` (``snapshots.db``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; at run time, __getattr__ below
    from .conf.base import SettingError as SettingError
    from .conf.base import SettingImportError as SettingImportError
    from .snapshots.db import SnapshotInTransactionError as SnapshotInTransactionError

#: The errors defined beside Django, by the module that defines each (see the docstring).
_BESIDE_DJANGO = {
    "SettingError": "warlock_sessions.conf.base",
    "SettingImportError": "warlock_sessions.conf.base",
    "SnapshotInTransactionError": "warlock_sessions.snapshots.db",
}

#: A socket's close code for an id or a scope the client may not use: the same as for one
#: nobody uses, so a close tells nothing of what exists.
UNAUTHORISED_CLOSE = 4403


def __getattr__(name: str) -> Any:
    if name in _BESIDE_DJANGO:
        from importlib import import_module

        return getattr(import_module(_BESIDE_DJANGO[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WarlockError(Exception):
    """Base class of every error raised by warlock_sessions, and what a client is told of it
    (the module's docstring): by default nothing, a bug."""

    status_code: int = 500
    default_code: str | None = None
    close_code: int | None = None
    #: The sentence a client is told instead of the error's own, which is for the log only;
    #: the log's line then starts with ``logged_as``.
    public_detail: str | None = None
    logged_as: str = ""
    log_level: int = logging.ERROR

    def client_detail(self) -> str:
        return self.public_detail or str(self)

    def client_fields(self) -> dict[str, Any]:
        """The JSON fields a client is told beside ``code`` and ``detail``."""
        return {}


class ConflictError(WarlockError):
    """Someone else changed it first (a version moved, a key was taken): nothing was written;
    reload, and send it again."""


class InvalidDataError(WarlockError):
    """What was given, or found stored, cannot be used: nothing was done with it."""


class ConfigurationError(WarlockError):
    """The project is set up wrong (settings, an agent's or flow's definition)."""


class RunFailedError(WarlockError):
    """A run (a workflow, a supervisor, an agent's run) cannot go on, or cannot resume."""


class LockError(WarlockError):
    """A lock could not be had, or was lost while held."""


class SessionConflictError(ConflictError):
    """A conditional save found another version than the one the caller loaded.

    ``actual_version`` is the version found in the store, or ``None`` when the row is gone.
    Nothing was written: reload, replay the same input and save again.
    """

    status_code = 409
    default_code = "session-conflict"
    #: What was written, in the message.
    noun = "session"

    def __init__(self, session_id: str, expected_version: int, actual_version: int | None) -> None:
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version
        found = "no row" if actual_version is None else f"version {actual_version}"
        super().__init__(
            f'{self.noun} "{session_id}" changed under you: expected version {expected_version}, '
            f"found {found}. Reload it and replay the input."
        )

    def client_detail(self) -> str:
        return f"{self} Nothing was applied; send it again."

    def client_fields(self) -> dict[str, Any]:
        return {"expected_version": self.expected_version, "actual_version": self.actual_version}


class ConversationConflictError(SessionConflictError):
    """A conversation's conditional write (a turn, a fork, a truncation, a framework's session
    write) found another version than the one its writer read: nothing was written."""

    default_code = "conversation-conflict"
    noun = "conversation"


class InvalidSessionError(InvalidDataError):
    """A blob is not a readable v4 session, or cannot be stored as JSON.

    The message is the upstream one, so logs read the same in a TypeScript and a Django host.
    """

    status_code = 400
    default_code = "invalid-session"
    # A stored session that cannot be read is the operators' to repair: logged too.
    logged_as = "a session cannot be read"
    log_level = logging.WARNING

    def __init__(self, session_id: str, why: str) -> None:
        self.session_id = session_id
        self.why = why
        super().__init__(
            f'[InvalidSessionError] stored session "{session_id}" is unreadable: {why}. '
            "Repair or delete the row; it is never replaced by a fresh conversation."
        )


class FlowConfigurationError(ConfigurationError):
    """An agent's flow definition is invalid; ``path`` names the offending key."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"{path}: {why}" if path else why)


class InvalidInputError(InvalidDataError, ValueError):
    """An input sent over the wire (HTTP or websocket) is malformed; ``field`` names where."""

    status_code = 400
    default_code = "invalid-input"

    def __init__(self, field: str, why: str) -> None:
        self.field = field
        self.why = why
        super().__init__(f"{field}: {why}")

    def client_fields(self) -> dict[str, Any]:
        return {"field": self.field}


class InputNotAllowedError(WarlockError, PermissionError):
    """An end user sent an input that only server code or staff may send (the trust model);
    ``field`` names it."""

    status_code = 403
    default_code = "input-not-allowed"

    def __init__(self, field: str, why: str) -> None:
        self.field = field
        self.why = why
        super().__init__(f"{field}: {why}")

    def client_fields(self) -> dict[str, Any]:
        return {"field": self.field}


class AgentNotConfiguredError(ConfigurationError, LookupError):
    """No agent (or model) by that name in ``WARLOCK_SESSIONS``: a client that named one is
    told ``invalid-input`` about its ``agent``."""

    status_code = 400
    default_code = "invalid-input"

    def client_fields(self) -> dict[str, Any]:
        return {"field": "agent"}


class NoConversationAgentError(AgentNotConfiguredError):
    """``WARLOCK_SESSIONS["CONVERSATION_AGENT"]`` is not set: the conversation endpoints have
    no agent to talk to (``503 no-conversation-agent``)."""

    status_code = 503
    default_code = "no-conversation-agent"

    def client_fields(self) -> dict[str, Any]:
        return {}


class NoModelError(ConfigurationError, ValueError):
    """A turn needs a model (to understand or to speak) and neither the call nor the agent
    gives one (check ``warlock_sessions.E033`` says so at start-up). A client is told
    ``no-model`` (503) with :attr:`public_detail`; the log says which agent."""

    status_code = 503
    default_code = "no-model"
    public_detail = (
        "The assistant is not set up to answer yet (its agent has no model); nothing was "
        "changed. The site's operators have been told."
    )
    logged_as = "an agent cannot take turns"


class UnnamedAgentError(ConfigurationError, ValueError):
    """A ``Host`` was given an ``Agent`` without a name: the wakes it schedules could not be
    fired with it (the worker finds agents by the name each wake records)."""


class SnapshotError(WarlockError):
    """Base class of the snapshot and checkpoint stores' errors."""


class SnapshotConflictError(SnapshotError, ConflictError):
    """A conditional snapshot save lost: another writer saved the run since it was loaded."""

    def __init__(self, key: str, expected_version: int, actual_version: int | None) -> None:
        self.key = key
        self.expected_version = expected_version
        self.actual_version = actual_version
        stored = "none is stored" if actual_version is None else f"{actual_version} is stored"
        super().__init__(
            f"snapshot {key!r} was written by someone else meanwhile: expected version "
            f"{expected_version}, {stored}"
        )


class InvalidSnapshotError(SnapshotError, InvalidDataError, ValueError):
    """A snapshot no store can keep: not a JSON object, no usable ``runId``, or a value JSON
    (or PostgreSQL's ``jsonb``) cannot hold."""


class SnapshotCorruptError(SnapshotError, InvalidDataError):
    """A stored snapshot cannot be read back (a damaged file, a row written by hand)."""

    def __init__(self, key: str, why: str) -> None:
        self.key = key
        super().__init__(f"the stored snapshot {key!r} {why}")


class ConditionalSaveUnsupportedError(SnapshotError, ConfigurationError, TypeError):
    """``save(..., expected_version=...)`` on a store that keeps no versions."""


class DuplicateCheckpointError(SnapshotError, ConflictError):
    """A checkpoint row for that orchestrator, session and turn is stored already."""

    def __init__(self, name: str, session_id: str, turn_index: int) -> None:
        self.orchestrator_name = name
        self.session_id = session_id
        self.turn_index = turn_index
        super().__init__(
            f"orchestrator {name!r} has a checkpoint of session {session_id!r} turn "
            f"{turn_index} already: checkpoints are append-only"
        )


class ProviderError(WarlockError):
    """Raised by a model provider; the engine records it like a returned ``Deferral``. A
    client is told its ``code`` (503) and a generic sentence: the provider's own text can
    carry keys and internals, so it goes to the log only."""

    status_code = 503
    public_detail = "The assistant could not answer just now; try again shortly."
    logged_as = "model provider failed"
    log_level = logging.WARNING

    def __init__(
        self, code: str, retryable: bool, reset_at_ms: int | None = None, detail: str = ""
    ) -> None:
        self.code = code
        self.default_code = code
        self.retryable = retryable
        self.reset_at_ms = reset_at_ms
        super().__init__(f"{code}: {detail}" if detail else code)

    def client_fields(self) -> dict[str, Any]:
        return {"retryable": self.retryable}


class EmptyStreamError(ProviderError):
    """A stream answered 200 and then nothing at all: no event, no ``[DONE]``.
    llama-cpp-python's server does so for what it cannot stream (tools with
    ``tool_choice: "auto"``, a refusal such as a prompt over the context); the provider asks
    again unstreamed, which says what it is."""

    def __init__(self) -> None:
        super().__init__("provider-unavailable", True, detail="the stream was empty")


class DriftError(RunFailedError):
    """A stored run was saved by another definition than the one asked to resume it.

    Raised before anything runs, writing nothing; ``resume(..., force=True)`` skips the check.
    ``code`` is stable for callers to switch on; ``category`` is ``"drift"``.
    """

    kind = "definition"
    code = "DRIFT"
    category = "drift"

    def __init__(self, run_id: str, saved_signature: str, current_signature: str) -> None:
        self.run_id = run_id
        self.saved_signature = saved_signature
        self.current_signature = current_signature
        super().__init__(
            f'{self.kind} run "{run_id}" was saved with signature {saved_signature}, but the '
            f"{self.kind} now has signature {current_signature}; resume with force=True only "
            "if the change is safe for runs in flight"
        )


class WorkflowDriftError(DriftError):
    """The workflow's steps changed since the run was saved. ``completed_steps`` are the steps
    the run finished (in declaration order) and ``pending_step`` the one it would run next."""

    kind = "workflow"
    code = "WORKFLOW_DRIFT"

    def __init__(
        self,
        run_id: str,
        saved_signature: str,
        current_signature: str,
        *,
        completed_steps: list[str],
        pending_step: str | None,
    ) -> None:
        self.completed_steps = completed_steps
        self.pending_step = pending_step
        super().__init__(run_id, saved_signature, current_signature)


class SupervisorDriftError(DriftError):
    """The supervisor's intents or routing changed since the run was saved."""

    kind = "supervisor"
    code = "SUPERVISOR_DRIFT"


class WorkflowError(RunFailedError):
    """A workflow cannot run or resume: no snapshot store, no snapshot for the run, a step
    routing to a step that does not exist."""


class SupervisorFailedError(RunFailedError):
    """A supervisor cannot run or resume: no snapshot store, no snapshot, an unknown intent."""


class OrchestratorDriftError(DriftError):
    """The orchestrator's intents or routing changed since the session's last turn."""

    kind = "orchestrator"
    code = "ORCHESTRATOR_DRIFT"

    def __init__(self, session_id: str, saved_signature: str, current_signature: str) -> None:
        self.session_id = session_id
        super().__init__(session_id, saved_signature, current_signature)


class SessionLockTimeout(LockError):
    """A session lock could not be acquired in time: another turn is running."""

    status_code = 409
    default_code = "conversation-busy"

    def __init__(self, key: str, timeout: float) -> None:
        self.key = key
        self.timeout = timeout
        super().__init__(f'could not lock "{key}" within {timeout:g} s')

    def client_detail(self) -> str:
        return f"{self}: another turn is running; send it again."


class ResumeInProgressError(LockError):
    """Another caller is resuming the conversation's pending turn (its claim on the pending
    mark has not run out): a second resume would run the agent's model and tools again."""

    status_code = 409
    default_code = "conversation-busy"

    def __init__(self, session_id: str, until: str) -> None:
        self.session_id = session_id
        self.until = until
        super().__init__(
            f'the pending turn of "{session_id}" is being resumed elsewhere (claimed until '
            f"{until}); try again later"
        )


class SessionLockAborted(LockError):
    """Waiting for a session lock was aborted before the lock was acquired."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f'waiting for the lock on "{key}" was aborted')


class SessionNotFoundError(WarlockError):
    """An operation needs a stored conversation and there is none with that id."""

    status_code = 404
    default_code = "conversation-not-found"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f'there is no conversation "{session_id}"')


class SessionExistsError(ConflictError):
    """A create-only operation (a fork's target) met a conversation that exists already."""

    status_code = 409
    default_code = "conversation-exists"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f'conversation "{session_id}" already exists')


class ToolPairError(InvalidDataError):
    """A cut of the history would split a tool call from its tool result."""

    status_code = 400
    default_code = "split-tool-pair"


class SessionTypeError(InvalidDataError):
    """The record at a conversation's key is something else (another shape's snapshot)."""


class AgentDriftError(DriftError):
    """The agent's definition (model, tools, limits) changed since the run was saved."""

    kind = "agent"
    code = "AGENT_DRIFT"
    status_code = 409
    default_code = "agent-drift"


class AgentExecutionError(RunFailedError):
    """A tool-calling agent could not run or resume: no durable store, no snapshot of the run,
    a run id in use, or no final reply within ``max_trips``."""

    status_code = 409
    default_code = "not-resumable"


class AgentFailedError(RunFailedError):
    """A conversation's agent failed on a turn (its error is the cause, for the log): the
    conversation is unchanged, and a client may send it again."""

    status_code = 502
    default_code = "agent-failed"
    public_detail = "The agent failed; the conversation is unchanged. Send it again."
    logged_as = "a conversation turn failed"
    log_level = logging.WARNING


class AgentCancelledError(RunFailedError):
    """The run was cancelled through its ``signal`` (a signal without a reason raises this)."""


class RunCancelledError(RunFailedError):
    """A workflow or supervisor run was cancelled through its ``signal`` (the error of its
    ``cancelled`` result when the signal gave no reason), or a cancelled run was asked to
    resume without ``force``."""

    status_code = 409
    default_code = "run-cancelled"

    def __init__(self, run_id: str, detail: str = "") -> None:
        self.run_id = run_id
        super().__init__(f'run "{run_id}" was cancelled' + (f": {detail}" if detail else ""))


class RunNotRunningError(RunFailedError):
    """Only a running run can be cancelled: this one has settled (``status`` says how), or
    there is no snapshot of it (``status`` is ``None``)."""

    def __init__(self, run_id: str, status: str | None) -> None:
        self.run_id = run_id
        self.status = status
        what = "has no snapshot" if status is None else f"is {status}, not running"
        super().__init__(f'run "{run_id}" {what}: only a running run can be cancelled')


class CacheError(WarlockError):
    """The semantic cache cannot work as it is set up."""


class CacheNotConfiguredError(CacheError, ConfigurationError):
    """A semantic cache was built with no store: pass ``store=`` or set
    ``WARLOCK_SESSIONS["CACHE_STORE"]``."""


class CacheUnsupportedError(CacheError, ConfigurationError):
    """The cache store cannot do what the cache asks of it: a similarity ``threshold`` on a
    store without similarity search."""


class ToolArgumentsError(InvalidDataError, ValueError):
    """The model called a tool with arguments its JSON schema refuses (the agent tells the
    model, which may try again)."""


class AttachmentError(InvalidDataError, ValueError):
    """An attachment cannot be read: no such file, too large, or not a known part shape."""


class ServiceUnavailableError(WarlockError):
    """A service the call needs (the database, Redis, the channel layer) did not answer, or
    has no capacity left right now. Nothing was changed; try again after ``retry_after``
    seconds. The API answers it with ``503 unavailable`` and ``Retry-After``, a socket with an
    ``error`` frame ``unavailable``."""

    status_code = 503
    default_code = "unavailable"
    #: What a client is told of any outage (which service, and why, is for the log).
    public_detail = (
        "The service is temporarily unavailable (its database or channel layer did not answer, "
        "or it is at capacity); nothing was changed. Try again shortly."
    )

    def __init__(self, service: str, why: str, retry_after: float = 2.0) -> None:
        self.service = service
        self.why = why
        self.retry_after = retry_after
        super().__init__(f"{service} is unavailable: {why}")

    def client_fields(self) -> dict[str, Any]:
        return {"retry_after": self.retry_after}


class LeaseLostError(LockError):
    """A lock's lease ran out or was taken over while its holder still worked under it: what
    the holder would write now may overwrite the next holder's work, so it is not written.
    A client is told as of any conversation write that lost (the lock is a conversation's)."""

    status_code = 409
    default_code = "conversation-conflict"

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f'the lock on "{key}" was lost while held (its renewal failed or another holder '
            "took it over); the work it protected was not saved"
        )


class QuotaExceededError(WarlockError):
    """An owner (a user, or an anonymous visitor) already has as many sessions or
    conversations as ``WARLOCK_SESSIONS["MAX_SESSIONS_PER_OWNER"]`` or
    ``["MAX_CONVERSATIONS_PER_OWNER"]`` allow: nothing new was made for them."""

    status_code = 403
    default_code = "quota-exceeded"

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        super().__init__(
            f"you already have {limit} {what}, the most one person may have here: delete some, "
            "or go on in one you have"
        )

    def client_fields(self) -> dict[str, Any]:
        return {"limit": self.limit}


class NewVisitorsThrottledError(WarlockError):
    """A client address was given as many new anonymous identities this hour as
    ``WARLOCK_SESSIONS["MAX_NEW_VISITORS_PER_ADDRESS"]`` allows (a client that drops its
    cookie to escape its quota): nothing was made. ``wait``: the seconds until one is given
    again (429 ``throttled`` with ``Retry-After``)."""

    status_code = 429
    default_code = "throttled"

    def __init__(self, wait: float | None) -> None:
        self.wait = wait
        super().__init__(
            "too many new visitors from this address: keep your cookies, or try again later"
        )

    def client_fields(self) -> dict[str, Any]:
        return {} if self.wait is None else {"retry_after": self.wait}


class TenantUnresolvedError(WarlockError, PermissionError):
    """``TENANT_RESOLVER`` named no tenant for this request, so it may read and write none of
    the app's rows (tenants fail closed): the API answers ``403 tenant-unresolved``, a socket
    is closed with 4403."""

    status_code = 403
    default_code = "tenant-unresolved"
    close_code = UNAUTHORISED_CLOSE

    def __init__(self) -> None:
        super().__init__("no tenant is known for this request, so it may use nothing here")


class OfAnotherTenantError(WarlockError, PermissionError):
    """An id or key is kept by a tenant other than the current scope's (``TENANT_RESOLVER``):
    ids are one namespace, so this scope may neither read it nor make one under it. Nothing
    was written; use another id. ``what`` says what it names (``session``, ``snapshot``).
    A client is told, as for any id it may not see, that there is none (404); a socket is
    closed with 4403."""

    status_code = 404
    default_code = "not-found"
    close_code = UNAUTHORISED_CLOSE

    def __init__(self, what: str, key: str) -> None:
        self.what = what
        self.key = key
        super().__init__(f"{what} {key!r} is another tenant's: use another id")

    def client_detail(self) -> str:
        return f'There is no {self.what} "{self.key}".'


class SessionOfAnotherTenantError(OfAnotherTenantError):
    """A session id another tenant keeps. The API answers it as for any id the requester
    may not see (404), a socket closes with 4403."""

    default_code = "session-not-found"

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__("session", session_id)


class EncryptionError(InvalidDataError):
    """A value kept sealed (``ENCRYPTION_KEYS``) cannot be read where it was found: nothing
    was read from it, and it was not replaced. ``where`` is the place it was looked for: a
    table, the row's id, and its version or sequence number."""

    status_code = 409
    default_code = "encryption-error"
    #: What a client is told (the log says which value and why).
    public_detail = (
        "What is stored here cannot be read with this server's ENCRYPTION_KEYS; nothing was "
        "changed. It is logged for the operators."
    )
    logged_as = "a stored value could not be read"

    def __init__(self, where: tuple[str, ...], why: str) -> None:
        self.where = where
        self.why = why
        super().__init__(f"the value at {'/'.join(where)} {why}")


class SealedValueError(EncryptionError):
    """A sealed value does not open: it was changed, copied from another row, sealed with a
    key that is not configured, or is read without ``ENCRYPTION_KEYS``."""


class PlaintextRefusedError(EncryptionError):
    """A plain value was found where ``ENCRYPTION_KEYS`` requires a sealed one (fails closed).
    A database kept before encryption was turned on: set ``ENCRYPTION_ACCEPT_PLAINTEXT`` and
    run ``manage.py warlock_rotate_keys``, which seals every row."""

    def __init__(self, where: tuple[str, ...]) -> None:
        super().__init__(
            where,
            "is not sealed, and ENCRYPTION_KEYS requires it to be: a row kept before encryption "
            "was turned on? Set ENCRYPTION_ACCEPT_PLAINTEXT = True on every server, run "
            "manage.py warlock_rotate_keys (it seals every row), then remove the setting",
        )
