"""The ``WARLOCK_SESSIONS`` settings dict, read the way DRF reads ``REST_FRAMEWORK``.

``from warlock_sessions.conf import warlock_settings`` then ``warlock_settings.STORE``: values
come from the project's dict, else from :data:`DEFAULTS`; settings named in
:data:`IMPORT_STRINGS` are imported on first access, and a bad import string raises an
``ImportError`` that names the setting. Values are cached and dropped whenever Django's
``setting_changed`` fires (``override_settings`` in tests).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

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
    # The HTTP API: who may do what (a DRF permission class), and the largest request body.
    "PERMISSION": "warlock_sessions.permissions.OwnerOrStaff",
    "MAX_BODY_BYTES": 256 * 1024,
    # Websockets one client (a user, or an anonymous visitor's Django session) may hold open in
    # one server process; more are closed with code 4429.
    "MAX_SOCKETS_PER_CLIENT": 20,
}

#: Settings whose value is an import string (or a list of them) resolved on access.
IMPORT_STRINGS: frozenset[str] = frozenset({"STORE", "DELIVER", "PERMISSION"})

#: Settings that used to exist, with what replaced them; using one is an error, not a no-op.
REMOVED_SETTINGS: dict[str, str] = {}


def perform_import(value: Any, setting: str) -> Any:
    """Import ``value`` if it is an import string (or a list of them); name ``setting`` on error."""
    if isinstance(value, str):
        return import_from_string(value, setting)
    if isinstance(value, list | tuple):
        return [import_from_string(item, setting) for item in value]
    return value


def import_from_string(path: str, setting: str) -> Any:
    try:
        return import_string(path)
    except ImportError as error:
        raise ImportError(
            f"Could not import '{path}' for setting {SETTING_NAME}['{setting}']. "
            f"{type(error).__name__}: {error}."
        ) from error


class WarlockSettings:
    """Lazy, cached access to ``settings.WARLOCK_SESSIONS`` with defaults applied."""

    def __init__(self) -> None:
        self._cached: set[str] = set()
        self._user_settings: dict[str, Any] | None = None

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user_settings is None:
            configured = getattr(settings, SETTING_NAME, {}) or {}
            if not isinstance(configured, dict):
                raise TypeError(
                    f"settings.{SETTING_NAME} must be a dict, not {type(configured).__name__}"
                )
            for name in configured:
                if name in REMOVED_SETTINGS:
                    raise RuntimeError(
                        f"{SETTING_NAME}['{name}'] was removed: {REMOVED_SETTINGS[name]}"
                    )
            self._user_settings = configured
        return self._user_settings

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid {SETTING_NAME} setting: '{name}'")
        value = self.user_settings.get(name, DEFAULTS[name])
        if name in IMPORT_STRINGS:
            value = perform_import(value, name)
        self._cached.add(name)
        setattr(self, name, value)
        return value

    def reload(self) -> None:
        for name in self._cached:
            delattr(self, name)
        self._cached.clear()
        self._user_settings = None


warlock_settings = WarlockSettings()


@receiver(setting_changed)
def _reload_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        warlock_settings.reload()
        from .stores import forget_default_store

        forget_default_store()
