"""System checks for ``WARLOCK_SESSIONS``, with stable ids ``warlock_sessions.E00x``/``W00x``.

Checks never build a store: building one may open connections or create files. Options are
checked against the store's constructor signature instead.
"""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.utils.module_loading import import_string

from .conf import DEFAULTS, SETTING_NAME
from .stores.base import Store


def _setting(name: str) -> str:
    return f"{SETTING_NAME}['{name}']"


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    configured = getattr(settings, SETTING_NAME, {})
    if not isinstance(configured, dict):
        return [
            Error(
                f"settings.{SETTING_NAME} must be a dict, not {type(configured).__name__}.",
                id="warlock_sessions.E005",
            )
        ]
    messages: list[CheckMessage] = [
        Warning(
            f"{_setting(name)} is not a warlock_sessions setting and is ignored.",
            hint=f"Known settings: {', '.join(sorted(DEFAULTS))}.",
            id="warlock_sessions.W001",
        )
        for name in configured
        if name not in DEFAULTS
    ]
    messages.extend(_check_store(configured))
    return messages


def _check_store(configured: dict[str, Any]) -> list[CheckMessage]:
    path = configured.get("STORE", DEFAULTS["STORE"])
    try:
        store_class = import_string(path) if isinstance(path, str) else path
    except ImportError as error:
        return [
            Error(
                f"{_setting('STORE')} = {path!r} cannot be imported: {error}.",
                hint="Give the dotted path of a Store class, e.g. "
                "'warlock_sessions.stores.DjangoStore'.",
                id="warlock_sessions.E001",
            )
        ]
    if not (inspect.isclass(store_class) and issubclass(store_class, Store)):
        return [
            Error(
                f"{_setting('STORE')} = {path!r} is not a warlock_sessions Store class.",
                id="warlock_sessions.E002",
            )
        ]
    if store_class.__name__ == "RedisStore" and importlib.util.find_spec("redis") is None:
        return [
            Error(
                f"{_setting('STORE')} is RedisStore but the redis client is not installed.",
                hint="pip install 'warlock-sessions[redis]'",
                id="warlock_sessions.E003",
            )
        ]
    options = configured.get("STORE_OPTIONS", DEFAULTS["STORE_OPTIONS"])
    if not isinstance(options, dict):
        return [
            Error(
                f"{_setting('STORE_OPTIONS')} must be a dict of keyword arguments.",
                id="warlock_sessions.E004",
            )
        ]
    try:
        inspect.signature(store_class).bind(**options)
    except TypeError as error:
        return [
            Error(
                f"{_setting('STORE_OPTIONS')} does not fit {store_class.__name__}: {error}.",
                hint=f"{store_class.__name__}{inspect.signature(store_class)}",
                id="warlock_sessions.E004",
            )
        ]
    return []
