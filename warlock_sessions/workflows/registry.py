"""The workflow and supervisor definitions of this process, by name: what the admin's resume
action, the API and the worker's boot drain resume a saved run with. A definition registers
itself when it is built; a later one of the same name replaces it (the latest code wins)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

_definitions: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


def register(kind: str, definition: Any) -> None:
    with _lock:
        _definitions[(kind, definition.name)] = definition


def definition_of(snapshot: Mapping[str, Any]) -> Any:
    """The registered workflow or supervisor that saved ``snapshot`` (by its name), or
    ``None``."""
    kinds = (
        ("orchestrator", "orchestratorName"),
        ("workflow", "workflowName"),
        ("supervisor", "supervisorName"),
    )
    for kind, key in kinds:
        name = snapshot.get(key)
        if isinstance(name, str):
            with _lock:
                return _definitions.get((kind, name))
    return None


def drift_of(snapshot: object) -> str:
    """``current`` (the registered definition saved it), ``drifted`` (it changed since) or
    ``unknown`` (no definition of that name is registered here, or not a snapshot)."""
    if not isinstance(snapshot, Mapping):
        return "unknown"
    definition = definition_of(snapshot)
    if definition is None:
        return "unknown"
    saved = snapshot.get("signature")
    # An orchestrator's turns are its inner supervisor's runs, signed by it.
    signer = getattr(definition, "supervisor", definition)
    return "current" if saved in signer.accepted_signatures else "drifted"
