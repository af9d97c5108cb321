"""The agents and models named in ``WARLOCK_SESSIONS``, built once and rebuilt when settings change.

``get_agent("support")`` imports the configured Agent (or calls the configured factory) and, when
its entry names a model, gives it that model. ``get_model("openai")`` builds a provider from
``MODELS``; its API key comes from ``API_KEY``, else the environment variable ``API_KEY_ENV``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from typing import Any

from .conf import SETTING_NAME, import_from_string, on_change, warlock_settings
from .engine import Agent
from .errors import AgentNotConfiguredError

DEFAULT_MODEL_CLASS = "warlock_sessions.providers.OpenAICompatibleModel"


def _configured(setting: str, name: str) -> Any:
    """Entry ``name`` of ``WARLOCK_SESSIONS[setting]``, or an error listing the ones there are."""
    entries = getattr(warlock_settings, setting)
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none"
        kind = setting.lower().rstrip("s")
        raise AgentNotConfiguredError(
            f"no {kind} {name!r} in {SETTING_NAME}['{setting}'] (configured: {known})"
        )
    return entries[name]


def agent_entry(name: str) -> tuple[str, str | None]:
    """The import string and model name configured for agent ``name``."""
    entry = _configured("AGENTS", name)
    if isinstance(entry, Mapping):
        return entry["AGENT"], entry.get("MODEL")
    return entry, None


def default_agent_name() -> str:
    configured: str | None = warlock_settings.DEFAULT_AGENT
    if configured:
        return configured
    agents: dict[str, Any] = warlock_settings.AGENTS
    if len(agents) == 1:
        return next(iter(agents))
    raise AgentNotConfiguredError(
        f"set {SETTING_NAME}['DEFAULT_AGENT']: {len(agents)} agents are configured, so which "
        "one to use cannot be guessed"
    )


@cache
def get_agent(name: str | None = None) -> Agent:
    """The configured agent ``name`` (or the default one), built once."""
    name = default_agent_name() if name is None else name
    path, model_name = agent_entry(name)
    target = import_from_string(path, f"AGENTS']['{name}", "warlock_sessions.E006")
    agent = target() if callable(target) and not isinstance(target, Agent) else target
    if not isinstance(agent, Agent):
        raise TypeError(
            f"{SETTING_NAME}['AGENTS']['{name}'] = {path!r} is not an Agent "
            f"(or a function returning one), it is {type(agent).__name__}"
        )
    if model_name:
        agent.model = get_model(model_name)
    return agent


def unready(agent: Agent) -> str | None:
    """What keeps a configured agent from taking turns, as the checks, ``warlock_flows check``
    and a failed turn say it; ``None`` when nothing does."""
    if agent.model is None:
        return (
            "it has no model, and a message it has to understand (a field to collect, an "
            "intent) or a reply it speaks needs one: build the Agent with model= (e.g. "
            "warlock_sessions.providers.RuleModel()), or name one of WARLOCK_SESSIONS['MODELS'] "
            "in its entry's 'MODEL'"
        )
    return None


def model_options(name: str) -> tuple[Any, dict[str, Any]]:
    """The class and keyword arguments of model ``name``, without building it."""
    entry = _configured("MODELS", name)
    model_class = import_from_string(
        entry.get("CLASS", DEFAULT_MODEL_CLASS),
        f"MODELS']['{name}']['CLASS",
        "warlock_sessions.E007",
    )
    options = dict(entry.get("OPTIONS") or {})
    for key, argument in (("BASE_URL", "base_url"), ("MODEL", "model")):
        if key in entry:
            options[argument] = entry[key]
    api_key = entry.get("API_KEY") or (
        os.environ.get(entry["API_KEY_ENV"]) if entry.get("API_KEY_ENV") else None
    )
    if api_key:
        options["api_key"] = api_key
    return model_class, options


@cache
def get_model(name: str) -> Any:
    model_class, options = model_options(name)
    return model_class(**options)


@on_change
def _forget_built() -> None:
    get_agent.cache_clear()
    get_model.cache_clear()
