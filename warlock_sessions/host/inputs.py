"""The record of applied inputs: how an input with an id of its own is named there, and
whether it was applied before (the host's exactly-once guard beyond the blob's window)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..models import AppliedInput


def applied_key(turn_input: Mapping[str, Any]) -> str | None:
    """How the record of applied inputs names ``turn_input`` (a digest of its kind and id, so
    no two inputs share it and its length is bounded); ``None`` for an input without an id of
    its own (a message sent without ``id``) and for wakes (a wake row fires once)."""
    identity = input_identity(turn_input)
    if identity is None:
        return None
    return hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode()).hexdigest()


def input_identity(turn_input: Mapping[str, Any]) -> list[str] | None:
    kind = next(iter(turn_input))
    value = turn_input[kind]
    if kind == "message":
        return [kind, value["id"]] if value.get("id") else None
    if kind == "event":
        return [kind, value["name"], value["key"]]
    if kind == "start":
        return [kind, value["flow"], value["key"]]
    if kind == "handover":
        return [kind, value["action"], value["key"]]
    return None


def was_applied(session_id: str, turn_input: Mapping[str, Any], using: str) -> bool:
    """Whether the record of applied inputs has ``turn_input`` for the session."""
    key = applied_key(turn_input)
    return key is not None and (
        AppliedInput.objects.using(using).filter(session_id=session_id, input_key=key).exists()
    )


def forget_applied(session_id: str, using: str) -> None:
    AppliedInput.objects.using(using).filter(session_id=session_id).delete()
