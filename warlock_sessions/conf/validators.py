"""Each setting's one validator, (setting name, value) -> the value to use or a
``SettingError``: used when the setting is read and by the system checks."""

from __future__ import annotations

import base64
import importlib.util
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings

from .base import (
    SETTING_NAME,
    Component,
    SettingError,
    _as_expected,
    configured_settings,
    imported,
)


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
    from ..engine.durations import is_duration

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
    "CLAIM_BY_BUCKET": _flag,
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
