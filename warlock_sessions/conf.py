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

import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .errors import ConfigurationError

SETTING_NAME = "WARLOCK_SESSIONS"

DEFAULTS: dict[str, Any] = {
    # The session Store class (import string) and the keyword arguments it is built with.
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
    # Where workflow, supervisor and agent runs keep their snapshots (a SnapshotStore class,
    # import string, and its keyword arguments), used when a run is given no store. None: runs
    # skip their snapshot writes and cannot resume.
    "SNAPSHOT_STORE": None,
    "SNAPSHOT_STORE_OPTIONS": {},
    # Where orchestrators keep their per-session checkpoints (a CheckpointStore class), the
    # same way.
    "CHECKPOINT_STORE": None,
    "CHECKPOINT_STORE_OPTIONS": {},
    # Import strings of Orchestrator instances: warlock_worker resumes their sessions' turns a
    # crash cut short when it starts.
    "ORCHESTRATORS": [],
    # Import string of the agent /api/conversations/ and ws/conversations/ talk to (a
    # ToolAgent, or anything with execute/stream/resume; or a function returning one). None:
    # those endpoints answer 503 no-conversation-agent.
    "CONVERSATION_AGENT": None,
    # The SessionLock those endpoints take per conversation: a class (import string) built
    # once with no arguments, e.g. "warlock_sessions.locks.DatabaseLock" when more than one
    # server process serves them. None: one in-process lock per database, shared by every
    # request of this process (the row store's version check still refuses a lost race).
    "CONVERSATION_LOCK": None,
    # Seconds a conversation turn waits for its conversation's lock (another turn of it runs)
    # before it is refused: 409 conversation-busy over HTTP, an error frame on a socket.
    "LOCK_TIMEOUT": 10.0,
    # The most sessions and conversations (forks included) one owner (a user, or an anonymous
    # visitor) may have; more are refused with 403 quota-exceeded. None: no limit.
    "MAX_SESSIONS_PER_OWNER": 1000,
    "MAX_CONVERSATIONS_PER_OWNER": 1000,
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


def _optional(validate: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """``validate``, or ``None`` (no limit)."""
    return lambda name, value: None if value is None else validate(name, value)


def _mapping(name: str, value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise SettingError(
            name, f"must be a dict, not {type(value).__name__}", check_id="warlock_sessions.E018"
        )
    return value


def _store(name: str, value: Any) -> Any:
    store_class = _as_expected(name, imported(value, name, "warlock_sessions.E001"), value)
    if store_class.__name__ == "RedisStore" and importlib.util.find_spec("redis") is None:
        raise SettingError(
            name,
            "is RedisStore but the redis client is not installed",
            check_id="warlock_sessions.E003",
            hint="pip install 'warlock-sessions[redis]'",
        )
    return store_class


def _optional_class(import_check: str) -> Callable[[str, Any], Any]:
    """A validator of an optional import string naming what its package expects."""

    def validate(name: str, value: Any) -> Any:
        if value is None:
            return None
        return _as_expected(name, imported(value, name, import_check), value)

    return validate


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


def _store_options(name: str, value: Any) -> Any:
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


def _deliver(name: str, value: Any) -> Any:
    if value is None:
        return None
    deliver = imported(value, name, "warlock_sessions.E010")
    if not callable(deliver):
        raise SettingError(
            name,
            f"= {value!r} is not callable; it should be deliver(message) -> None",
            check_id="warlock_sessions.E014",
        )
    return deliver


def _permission(name: str, value: Any) -> Any:
    return _as_expected(name, imported(value, name, "warlock_sessions.E015"), value)


#: Each setting's one validator, used when it is read and by the system checks.
VALIDATORS: dict[str, Callable[[str, Any], Any]] = {
    "STORE": _store,
    "STORE_OPTIONS": _store_options,
    "SNAPSHOT_STORE": _optional_class("warlock_sessions.E020"),
    "SNAPSHOT_STORE_OPTIONS": _store_options,
    "CHECKPOINT_STORE": _optional_class("warlock_sessions.E020"),
    "CHECKPOINT_STORE_OPTIONS": _store_options,
    "ORCHESTRATORS": _orchestrators,
    "CONVERSATION_AGENT": _conversation_agent,
    "CONVERSATION_LOCK": _optional_class("warlock_sessions.E024"),
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
    "MAX_SOCKETS_PER_CLIENT": _number(1, whole=True),
    "LOCK_TIMEOUT": _number(0, whole=False),
    "MAX_SESSIONS_PER_OWNER": _optional(_number(1, whole=True)),
    "MAX_CONVERSATIONS_PER_OWNER": _optional(_number(1, whole=True)),
}


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

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid {SETTING_NAME} setting: '{name}'")
        value = VALIDATORS[name](name, configured_settings().get(name, DEFAULTS[name]))
        self._cached.add(name)
        setattr(self, name, value)
        return value

    def reload(self) -> None:
        for name in self._cached:
            delattr(self, name)
        self._cached.clear()

    def forget(self, name: str) -> None:
        """Read ``name`` again next time."""
        if name in self._cached:
            self._cached.discard(name)
            delattr(self, name)


warlock_settings = WarlockSettings()


@receiver(setting_changed)
def _reload_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        warlock_settings.reload()
        for forget in _ON_CHANGE:
            forget()
