"""What every part of the settings shares: the setting's name, its defaults, the error that
names a wrong setting, what a component setting holds, and importing what a setting names."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..errors import ConfigurationError

SETTING_NAME = "WARLOCK_SESSIONS"
T = TypeVar("T")

DEFAULTS: dict[str, Any] = {
    # Every component (STORE, SNAPSHOT_STORE, CHECKPOINT_STORE, CACHE_STORE, CONVERSATION_LOCK) is
    # {"CLASS": import string, "OPTIONS": {keyword arguments it is built with}}, or just the
    # import string; <NAME>_OPTIONS is the older place of the same options.
    # The session Store.
    "STORE": "warlock_sessions.stores.DjangoStore",
    "STORE_OPTIONS": {},
    # name -> import string of an Agent (or of a function returning one), or
    # {"AGENT": "<import string>", "MODEL": "<a name in MODELS>"}.
    "AGENTS": {},
    # The agent used when a caller names none (the only one, when there is just one).
    "DEFAULT_AGENT": None,
    # name -> {"CLASS": import string (default OpenAICompatibleModel), "BASE_URL", "MODEL",
    # "API_KEY" or "API_KEY_ENV" (an environment variable), "OPTIONS": {more keyword arguments}}.
    "MODELS": {},
    # How often the host reloads and replays a turn that lost the version race before giving up
    # (each after a short random pause that grows with every loss).
    "MAX_CONFLICT_RETRIES": 10,
    # Turns that cannot block (their model says ``blocking = False`` and the agent calls no code of
    # its own) are run by Host.ahandle on the event loop itself, with up to this many PostgreSQL
    # connections per loop and database; 0 runs every turn in a worker thread.
    "LOOP_CONNECTIONS": 4,
    # Import string of deliver(message: OutboundMessage) -> None, raising on failure, that sends a
    # message to its channel (WhatsApp, e-mail…). None: the event log and websocket deliver it.
    "DELIVER": None,
    "MAX_DELIVERY_ATTEMPTS": 8,
    # The worker: how long a claimed wake or message is leased, how often a failing wake is
    # retried before it is marked failed, and how long an idle worker sleeps.
    "LEASE_SECONDS": 60,
    "MAX_WAKE_ATTEMPTS": 5,
    "POLL_INTERVAL": 1.0,
    # Whether the worker claims due work one bucket at a time (models.WORK_BUCKETS), each claim
    # reading one shard of a distributed PostgreSQL (Citus: docs/scaling.md), instead of in one
    # statement over every bucket, which is cheaper on one database.
    "CLAIM_BY_BUCKET": False,
    # Who may do what over HTTP and websockets (a permissions.SessionPolicy), and the largest
    # request body.
    "PERMISSION": "warlock_sessions.permissions.OwnerOrStaff",
    "MAX_BODY_BYTES": 256 * 1024,
    # Websockets one client (a user, or an anonymous visitor's Django session) may hold open in
    # one server process; more are closed with code 4429.
    "MAX_SOCKETS_PER_CLIENT": 20,
    # Where workflow, supervisor and agent runs keep their snapshots (a SnapshotStore), used
    # when a run is given no store. None: runs skip their snapshot writes and cannot resume.
    "SNAPSHOT_STORE": None,
    "SNAPSHOT_STORE_OPTIONS": {},
    # Where orchestrators keep their per-session checkpoints (a CheckpointStore), the same way.
    "CHECKPOINT_STORE": None,
    "CHECKPOINT_STORE_OPTIONS": {},
    # Where the semantic cache keeps answers (a CacheStore), used by caches given no store.
    "CACHE_STORE": None,
    "CACHE_STORE_OPTIONS": {},
    # Import strings of Orchestrator instances: warlock_worker resumes their sessions' turns a
    # crash cut short when it starts.
    "ORCHESTRATORS": [],
    # Import string of the agent /api/conversations/ and ws/conversations/ talk to (a
    # ToolAgent, or anything with execute/stream/resume; or a function returning one). None:
    # those endpoints answer 503 no-conversation-agent.
    "CONVERSATION_AGENT": None,
    # The SessionLock those endpoints take per conversation, built once, e.g.
    # "warlock_sessions.locks.DatabaseLock" when more than one server process serves them.
    # None: one in-process lock per database, shared by every request of this process (the row
    # store's version check still refuses a lost race).
    "CONVERSATION_LOCK": None,
    "CONVERSATION_LOCK_OPTIONS": {},
    # Seconds a conversation turn waits for its conversation's lock (another turn of it runs)
    # before it is refused: 409 conversation-busy over HTTP, an error frame on a socket.
    "LOCK_TIMEOUT": 10.0,
    # The most sessions and conversations (forks included) one owner (a user, or an anonymous
    # visitor) may have; more are refused with 403 quota-exceeded. None: no limit.
    "MAX_SESSIONS_PER_OWNER": 1000,
    "MAX_CONVERSATIONS_PER_OWNER": 1000,
    # The most new anonymous visitors (identities that own sessions and conversations) one
    # client address is given in an hour, counted in Django's cache as DRF's throttles count
    # (the address through REST_FRAMEWORK["NUM_PROXIES"]); more are refused with 429
    # throttled. Without it, a client that drops its cookie escapes the quotas above.
    # None: no limit.
    "MAX_NEW_VISITORS_PER_ADDRESS": 100,
    # Messages of the row store's conversations each process keeps as it last saw them, so
    # a send reads only what changed; 0: none (every send reads the whole history).
    "CONVERSATION_CACHE_MESSAGES": 20_000,
    # A database alias (a read replica) the API's session list and the admin's lists and
    # search read from. One session's reads and every write stay on its own database (no
    # stale version to conflict with). None: lists read where the router says.
    "READ_REPLICA": None,
    # How long an agent's ended sessions and their log live, where it differs from what
    # warlock_prune is told for all: {"booking": {"sessions": "30d", "events": "7d",
    # "keep_events": 20}}; an age or "never". Conversations record no agent: --conversations.
    "RETENTION": {},
    # Personal data taken out of text before it is stored or logged: names of the built-in
    # recognisers (REDACT_RECOGNISERS) and import strings of functions str -> str, or one
    # such function. None: text is stored as it was said.
    "REDACT": None,
    # Whether message text (what was said, the model's prompt and reply) goes into the
    # OpenTelemetry spans, redacted as stored text is. Off: spans carry ids, counts and times.
    "TRACE_TEXT": False,
    # Keys that seal what people said at rest (docs/privacy.md#encryption-at-rest):
    # {key id: base64 of 32 random bytes}, the first entry sealing, every one opening. None:
    # nothing is sealed. ENCRYPTION_ACCEPT_PLAINTEXT reads rows kept before it was set, while
    # warlock_rotate_keys seals them.
    "ENCRYPTION_KEYS": None,
    "ENCRYPTION_ACCEPT_PLAINTEXT": False,
    # Tenants kept apart (docs/privacy.md#tenants): the import string of a function
    # (request) -> tenant name, tenancy.EVERY_TENANT for every tenant, or None for none
    # (refused). None: one tenant, no tenant column read.
    "TENANT_RESOLVER": None,
}


class SettingError(ConfigurationError, ImproperlyConfigured):
    """A ``WARLOCK_SESSIONS`` setting is wrong: raised when it is read, and reported by the
    system check of the same rule as ``check_id``."""

    def __init__(self, setting: str, why: str, *, check_id: str, hint: str = "") -> None:
        self.setting = setting
        self.why = why
        self.check_id = check_id
        self.hint = hint
        where = f"{SETTING_NAME}['{setting}']" if setting else f"settings.{SETTING_NAME}"
        super().__init__(f"{where} {why}")


class SettingImportError(SettingError, ImportError):
    """An import string in a setting does not import."""


@dataclass(frozen=True)
class Expected:
    """What a setting naming a class (or, with ``instance``, objects) must name: a subclass of
    ``base`` (not abstract, with ``concrete``). Said by the package that defines ``base``, a
    layer above this one (``expect``), so these settings import none of those packages; the
    system checks import them all, so every rule is applied at start-up."""

    base: type
    what: str
    check_id: str
    instance: bool = False
    concrete: bool = False
    hint: str = ""

    def holds(self, found: Any) -> bool:
        if self.instance:
            return isinstance(found, self.base)
        return (
            inspect.isclass(found)
            and issubclass(found, self.base)
            and not (self.concrete and inspect.isabstract(found))
        )


@dataclass(frozen=True)
class Component:
    """A component setting's value once read: the class and the keyword arguments it is built
    with (already checked against the class's signature)."""

    cls: type
    options: Mapping[str, Any]

    def build(self) -> Any:
        return self.cls(**self.options)


#: Setting name -> what it must name, from the packages that define the bases.
_EXPECTED: dict[str, Expected] = {}
#: What the packages built from the settings forget when they change.
_ON_CHANGE: list[Callable[[], None]] = []


def _as_expected(name: str, found: Any, value: Any) -> Any:
    """``found`` if it is what ``name`` must name (as far as its package has said), else the
    ``SettingError`` of that rule."""
    expected = _EXPECTED.get(name)
    if expected is not None and not expected.holds(found):
        raise SettingError(
            name,
            f"= {value!r} is not {expected.what}",
            check_id=expected.check_id,
            hint=expected.hint,
        )
    return found


def imported(value: Any, setting: str, check_id: str) -> Any:
    """``value`` itself, or what it names when it is an import string."""
    return import_from_string(value, setting, check_id) if isinstance(value, str) else value


def import_from_string(path: str, setting: str, check_id: str = "warlock_sessions.E001") -> Any:
    try:
        return import_string(path)
    except ImportError as error:
        raise SettingImportError(
            setting,
            f"= {path!r} cannot be imported. {type(error).__name__}: {error}.",
            check_id=check_id,
        ) from error


def configured_settings() -> dict[str, Any]:
    """The project's ``WARLOCK_SESSIONS`` dict (empty when unset)."""
    configured = getattr(settings, SETTING_NAME, {}) or {}
    if not isinstance(configured, dict):
        raise SettingError(
            "",
            f"must be a dict, not {type(configured).__name__}",
            check_id="warlock_sessions.E005",
        )
    return configured
