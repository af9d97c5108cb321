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

import threading
from collections.abc import Callable
from typing import Any, Generic

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from .base import (
    _EXPECTED,
    _ON_CHANGE,
    DEFAULTS,
    SETTING_NAME,
    Component,
    Expected,
    SettingError,
    SettingImportError,
    T,
    configured_settings,
    import_from_string,
    imported,
)
from .validators import REDACT_RECOGNISERS, VALIDATORS


def expect(setting: str, expected: Expected) -> None:
    """``setting`` must name what ``expected`` says (called by the package defining it)."""
    _EXPECTED[setting] = expected
    warlock_settings.forget(setting)  # read before the rule was known: read again


def on_change(forget: Callable[[], None]) -> Callable[[], None]:
    """``forget`` is called whenever ``WARLOCK_SESSIONS`` changes (a default built from it)."""
    _ON_CHANGE.append(forget)
    return forget


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


__all__ = [
    "DEFAULTS",
    "REDACT_RECOGNISERS",
    "SETTING_NAME",
    "VALIDATORS",
    "BuiltFromSettings",
    "Component",
    "Expected",
    "SettingError",
    "SettingImportError",
    "WarlockSettings",
    "configured_settings",
    "django_configured",
    "expect",
    "import_from_string",
    "imported",
    "on_change",
    "warlock_settings",
]
