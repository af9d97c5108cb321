"""The ``WARLOCK_SESSIONS`` settings dict, read the way DRF reads ``REST_FRAMEWORK``.

``from warlock_sessions.conf import warlock_settings`` then ``warlock_settings.STORE``: values
come from the project's dict, else from :data:`DEFAULTS`, and pass their setting's validator
(:data:`VALIDATORS`) on first access: import strings are imported, and a wrong value raises a
:class:`SettingError` (an ``ImproperlyConfigured``) that names the setting. The system checks
(``checks.py``) run the same validators, so ``manage.py check`` reports the same rule, with the
error's ``check_id``, before anything reads the setting. Values are cached and dropped whenever
Django's ``setting_changed`` fires (``override_settings`` in tests).
"""

from __future__ import annotations

import base64
import importlib.util
import inspect
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .errors import ConfigurationError

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


def expect(setting: str, expected: Expected) -> None:
    """``setting`` must name what ``expected`` says (called by the package defining it)."""
    _EXPECTED[setting] = expected
    warlock_settings.forget(setting)  # read before the rule was known: read again


def on_change(forget: Callable[[], None]) -> Callable[[], None]:
    """``forget`` is called whenever ``WARLOCK_SESSIONS`` changes (a default built from it)."""
    _ON_CHANGE.append(forget)
    return forget


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


# -- validators: (setting name, value) -> the value to use, or SettingError --------------------


def _number(minimum: float, *, whole: bool) -> Callable[[str, Any], Any]:
    kind = "a whole number" if whole else "a number"

    def validate(name: str, value: Any) -> Any:
        number = isinstance(value, int) if whole else isinstance(value, int | float)
        if isinstance(value, bool) or not number or not minimum <= value:
            raise SettingError(
                name,
                f"must be {kind} >= {minimum:g}, not {value!r}",
                check_id="warlock_sessions.E017",
            )
        return value

    return validate


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SettingError(
            name, f"must be True or False, not {value!r}", check_id="warlock_sessions.E017"
        )
    return value


def _optional(validate: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """``validate``, or ``None`` (no limit)."""
    return lambda name, value: None if value is None else validate(name, value)


def _mapping(name: str, value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise SettingError(
            name, f"must be a dict, not {type(value).__name__}", check_id="warlock_sessions.E018"
        )
    return value


def _component(import_check: str, *, optional: bool) -> Callable[[str, Any], Any]:
    """A validator of a component: ``{"CLASS": …, "OPTIONS": {…}}`` or the class alone, whose
    options are then ``<name>_OPTIONS`` (their older place); ``None`` when ``optional``."""

    def validate(name: str, value: Any) -> Component | None:
        _options_dict(f"{name}_OPTIONS", configured_settings().get(f"{name}_OPTIONS", {}))
        if value is None and optional:
            return None
        class_path, options = _class_and_options(name, value)
        found = _as_expected(name, imported(class_path, name, import_check), class_path)
        _options_dict(f"{name}']['OPTIONS", options)
        _check_installed(name, found)
        _options_fit(name, found, options)
        return Component(found, dict(options))

    return validate


def _class_and_options(name: str, value: Any) -> tuple[Any, Any]:
    aliased = configured_settings().get(f"{name}_OPTIONS")
    if not isinstance(value, Mapping):
        return value, {} if aliased is None else aliased
    unknown = sorted(set(value) - {"CLASS", "OPTIONS"})
    if unknown or "CLASS" not in value:
        raise SettingError(
            name,
            f"must be {{'CLASS': import string, 'OPTIONS': {{…}}}}, not a dict with "
            f"{', '.join(map(repr, unknown or sorted(value))) or 'nothing'}",
            check_id="warlock_sessions.E004",
        )
    if aliased is not None and "OPTIONS" in value:
        raise SettingError(
            name,
            f"has OPTIONS and {SETTING_NAME}['{name}_OPTIONS'] is set too",
            check_id="warlock_sessions.E004",
            hint=f"Keep the options in one place: {name}['OPTIONS'].",
        )
    return value["CLASS"], value.get("OPTIONS", {} if aliased is None else aliased)


def _check_installed(name: str, found: type) -> None:
    if found.__name__.startswith("Redis") and importlib.util.find_spec("redis") is None:
        raise SettingError(
            name,
            f"is {found.__name__} but the redis client is not installed",
            check_id="warlock_sessions.E003",
            hint="pip install 'warlock-sessions[redis]'",
        )


def _options_fit(name: str, found: type, options: Mapping[str, Any]) -> None:
    """The options against the class's constructor, without building it (that could open
    connections or create files)."""
    try:
        signature = inspect.signature(found)
        signature.bind(**options)
    except TypeError as error:
        raise SettingError(
            name,
            f"'s options do not fit {found.__name__}: {error}",
            check_id="warlock_sessions.E012",
            hint=f"{found.__name__}{signature}",
        ) from error


def _orchestrators(name: str, value: Any) -> Any:
    if not isinstance(value, list | tuple):
        raise SettingError(
            name, "must be a list of import strings", check_id="warlock_sessions.E022"
        )
    return [
        _as_expected(name, imported(path, name, "warlock_sessions.E022"), path) for path in value
    ]


def _conversation_agent(name: str, value: Any) -> Any:
    if value is None:
        return None
    found = imported(value, name, "warlock_sessions.E023")
    if not (hasattr(found, "execute") and hasattr(found, "stream")) and not callable(found):
        raise SettingError(
            name,
            f"= {value!r} is neither a conversation agent (execute, stream, resume) nor a "
            "function returning one",
            check_id="warlock_sessions.E023",
        )
    return found


def _options_dict(name: str, value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise SettingError(
            name, "must be a dict of keyword arguments", check_id="warlock_sessions.E004"
        )
    return value


def _entries(shape: str, ok: Callable[[Any], bool]) -> Callable[[str, Any], Any]:
    """A validator of a dict whose every entry ``ok`` accepts; ``shape`` says what one is."""

    def validate(name: str, value: Any) -> Any:
        _mapping(name, value)
        for key, entry in value.items():
            if not ok(entry):
                raise SettingError(
                    f"{name}']['{key}", f"must be {shape}", check_id="warlock_sessions.E019"
                )
        return value

    return validate


def _is_agent_entry(entry: Any) -> bool:
    return isinstance(entry, str) or (
        isinstance(entry, Mapping) and isinstance(entry.get("AGENT"), str)
    )


def _agent_name(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, str):
        raise SettingError(
            name, f"must name an agent in AGENTS, not {value!r}", check_id="warlock_sessions.E019"
        )
    return value


def _database_alias(name: str, value: Any) -> Any:
    if value is not None and value not in settings.DATABASES:
        raise SettingError(
            name,
            f"= {value!r} is not a database alias of DATABASES "
            f"({', '.join(map(repr, settings.DATABASES))})",
            check_id="warlock_sessions.E028",
        )
    return value


#: What a RETENTION entry may say of an agent's rows.
RETENTION_KEYS = frozenset({"sessions", "events", "keep_events"})


def _retention(name: str, value: Any) -> Any:
    """``{agent: {"sessions"?: age, "events"?: age, "keep_events"?: n}}``, ages like "30d"
    or "never"."""
    from .engine.durations import is_duration

    _mapping(name, value)
    for agent, entry in value.items():
        where = f"{name}']['{agent}"
        if not isinstance(entry, Mapping) or not set(entry) <= RETENTION_KEYS:
            raise SettingError(
                where,
                f"must be a dict of {', '.join(sorted(RETENTION_KEYS))}",
                check_id="warlock_sessions.E027",
            )
        for key in ("sessions", "events"):
            age = entry.get(key, "never")
            if age != "never" and not is_duration(age):
                raise SettingError(
                    f"{where}']['{key}",
                    f"must be an age like '30d' or 'never', not {age!r}",
                    check_id="warlock_sessions.E027",
                )
        keep = entry.get("keep_events", 0)
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise SettingError(
                f"{where}']['keep_events",
                f"must be a whole number >= 0, not {keep!r}",
                check_id="warlock_sessions.E027",
            )
    return value


#: The built-in recognisers REDACT may name (``redaction.RECOGNISERS``), in the order they run.
REDACT_RECOGNISERS = ("card", "email", "iban", "us_ssn", "br_cpf", "uk_nino", "phone")


def _takes_one_text(function: Any) -> bool:
    try:
        inspect.signature(function).bind("")
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): taken on trust
        return True
    return True


def _redact(name: str, value: Any) -> list[Any] | None:
    """A list of recogniser names and functions ``str -> str`` (imported), or ``None``."""
    if value is None:
        return None
    entries = [value] if isinstance(value, str) or callable(value) else value
    if not isinstance(entries, list | tuple):
        raise SettingError(
            name,
            "must be a list of recognisers (their names, or import strings of functions "
            f"str -> str) or one function, not {type(value).__name__}",
            check_id="warlock_sessions.E029",
        )
    steps: list[Any] = []
    for entry in entries:
        if entry in REDACT_RECOGNISERS:
            steps.append(entry)
            continue
        if isinstance(entry, str) and "." not in entry:
            raise SettingError(
                name,
                f"names {entry!r}, neither a recogniser ({', '.join(REDACT_RECOGNISERS)}) "
                "nor an import string",
                check_id="warlock_sessions.E029",
            )
        found = imported(entry, name, "warlock_sessions.E029")
        if not callable(found) or not _takes_one_text(found):
            raise SettingError(
                name, f"= {entry!r} is not a function str -> str", check_id="warlock_sessions.E029"
            )
        steps.append(found)
    return steps


def _encryption_keys(name: str, value: Any) -> dict[str, bytes] | None:
    """``{key id: base64 text of 16, 24 or 32 bytes}``, as ``{key id: bytes}``; ``None``."""
    if value is None or value == {}:
        return None

    def wrong(why: str, hint: str = "") -> SettingError:
        return SettingError(name, why, check_id="warlock_sessions.E030", hint=hint)

    if not isinstance(value, Mapping) or not value:
        raise wrong(
            "must be a dict {key id: base64 of 32 random bytes}, the first entry sealing",
            hint="python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())'",
        )
    if importlib.util.find_spec("cryptography") is None:
        raise wrong(
            "is set but cryptography is not installed", "pip install 'warlock-sessions[encryption]'"
        )
    keys: dict[str, bytes] = {}
    for key_id, encoded in value.items():
        if not isinstance(key_id, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", key_id):
            raise wrong(f"has the key id {key_id!r}: ids are 1 to 32 letters, digits, - or _")
        try:  # a key read from a file or a secret often ends with a line break
            secret = base64.b64decode(encoded.strip(), validate=True)
        except (AttributeError, TypeError, ValueError):
            secret = b""
        if len(secret) not in (16, 24, 32):
            raise wrong(f"['{key_id}'] is not the base64 text of 16, 24 or 32 bytes")
        keys[key_id] = secret
    return keys


def _function(signature: str, *, import_check: str, call_check: str) -> Callable[[str, Any], Any]:
    """A validator of a function setting (an import string, or the function itself), or
    ``None``; ``signature`` is how it is called, for the message."""

    def validate(name: str, value: Any) -> Any:
        if value is None:
            return None
        function = imported(value, name, import_check)
        if not callable(function):
            raise SettingError(
                name,
                f"= {value!r} is not callable; it should be {signature}",
                check_id=call_check,
            )
        return function

    return validate


_deliver = _function(
    "deliver(message) -> None",
    import_check="warlock_sessions.E010",
    call_check="warlock_sessions.E014",
)
_tenant_resolver = _function(
    "resolver(request) -> tenant name",
    import_check="warlock_sessions.E031",
    call_check="warlock_sessions.E031",
)


def _permission(name: str, value: Any) -> Any:
    return _as_expected(name, imported(value, name, "warlock_sessions.E015"), value)


#: Each setting's one validator, used when it is read and by the system checks.
VALIDATORS: dict[str, Callable[[str, Any], Any]] = {
    "STORE": _component("warlock_sessions.E001", optional=False),
    "STORE_OPTIONS": _options_dict,
    "SNAPSHOT_STORE": _component("warlock_sessions.E020", optional=True),
    "SNAPSHOT_STORE_OPTIONS": _options_dict,
    "CHECKPOINT_STORE": _component("warlock_sessions.E020", optional=True),
    "CHECKPOINT_STORE_OPTIONS": _options_dict,
    "CACHE_STORE": _component("warlock_sessions.E025", optional=True),
    "CACHE_STORE_OPTIONS": _options_dict,
    "ORCHESTRATORS": _orchestrators,
    "CONVERSATION_AGENT": _conversation_agent,
    "CONVERSATION_LOCK": _component("warlock_sessions.E024", optional=True),
    "CONVERSATION_LOCK_OPTIONS": _options_dict,
    "AGENTS": _entries(
        "an import string or {'AGENT': import string, 'MODEL': name}", _is_agent_entry
    ),
    "DEFAULT_AGENT": _agent_name,
    "MODELS": _entries(
        "a dict with BASE_URL, MODEL, API_KEY or API_KEY_ENV, CLASS, OPTIONS",
        lambda entry: isinstance(entry, Mapping),
    ),
    "MAX_CONFLICT_RETRIES": _number(0, whole=True),
    "LOOP_CONNECTIONS": _number(0, whole=True),
    "DELIVER": _deliver,
    "MAX_DELIVERY_ATTEMPTS": _number(1, whole=True),
    "LEASE_SECONDS": _number(1, whole=False),
    "MAX_WAKE_ATTEMPTS": _number(1, whole=True),
    "POLL_INTERVAL": _number(0.01, whole=False),
    "PERMISSION": _permission,
    "MAX_BODY_BYTES": _number(1, whole=True),
    "READ_REPLICA": _database_alias,
    "RETENTION": _retention,
    "REDACT": _redact,
    "TRACE_TEXT": _flag,
    "ENCRYPTION_KEYS": _encryption_keys,
    "ENCRYPTION_ACCEPT_PLAINTEXT": _flag,
    "TENANT_RESOLVER": _tenant_resolver,
    "MAX_SOCKETS_PER_CLIENT": _number(1, whole=True),
    "LOCK_TIMEOUT": _number(0, whole=False),
    "MAX_SESSIONS_PER_OWNER": _optional(_number(1, whole=True)),
    "MAX_CONVERSATIONS_PER_OWNER": _optional(_number(1, whole=True)),
    "MAX_NEW_VISITORS_PER_ADDRESS": _optional(_number(1, whole=True)),
    "CONVERSATION_CACHE_MESSAGES": _number(0, whole=True),
}


def django_configured() -> bool:
    """Whether Django's settings are there to read (a store may be used without them)."""
    return bool(settings.configured)


class BuiltFromSettings(Generic[T]):
    """A value ``build`` makes from the settings: made on first use, read without a lock
    after that (a hot path asks for it many times a turn), made again after they change.
    ``None`` while Django is not configured (a store used on its own), and not kept then."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._built: list[T] = []
        self._lock = threading.Lock()
        on_change(self._built.clear)

    def __call__(self) -> T | None:
        if self._built:
            return self._built[0]
        if not django_configured():
            return None
        with self._lock:
            if not self._built:
                self._built.append(self._build())
            return self._built[0]


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


class WarlockSettings:
    """Lazy, cached, validated access to ``settings.WARLOCK_SESSIONS`` with defaults applied."""

    def __init__(self) -> None:
        self._cached: set[str] = set()
        self._built: dict[str, Any] = {}
        self._building = threading.RLock()  # a component's constructor may read another

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid {SETTING_NAME} setting: '{name}'")
        value = VALIDATORS[name](name, configured_settings().get(name, DEFAULTS[name]))
        self._cached.add(name)
        setattr(self, name, value)
        return value

    def built(self, name: str, build: Callable[[Any], T] | None = None) -> T:
        """What ``name``'s value builds (``Component.build``, else ``build(value)``), built once
        and shared until the settings change: the one cache of defaults built from them."""
        with self._building:
            if name not in self._built:
                value = getattr(self, name)
                if build is not None:
                    self._built[name] = build(value)
                else:
                    self._built[name] = value.build() if isinstance(value, Component) else value
            built: T = self._built[name]
            return built

    def reload(self) -> None:
        for name in self._cached:
            delattr(self, name)
        self._cached.clear()
        with self._building:
            self._built.clear()

    def forget(self, name: str) -> None:
        """Read ``name`` again next time."""
        if name in self._cached:
            self._cached.discard(name)
            delattr(self, name)
        with self._building:
            self._built.pop(name, None)


warlock_settings = WarlockSettings()


@receiver(setting_changed)
def _reload_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        warlock_settings.reload()
        for forget in _ON_CHANGE:
            forget()
