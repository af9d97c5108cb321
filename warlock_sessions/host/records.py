"""A committed turn's records (``stores.records.TurnRecords``), built from its result."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..conf import warlock_settings
from ..engine import TurnResult
from ..stores.records import TurnRecords
from .events import turn_events
from .inputs import applied_key


def turn_records(
    *,
    session_id: str,
    agent_name: str,
    result: TurnResult,
    version: int,
    turn_input: Mapping[str, Any],
    now: datetime,
) -> TurnRecords:
    scheduled = {entry["key"] for entry in result.schedule}
    # One statement may not touch a row twice: a fired silence wake is often the very key the
    # new silence wake replaces, and a rescheduled key is upserted rather than retired.
    fired = turn_input.get("wake") if turn_input.get("wake") not in scheduled else None
    replaced = sorted(
        {entry["replaces"] for entry in result.schedule if entry.get("replaces")}.union(
            result.retired
        ).difference(scheduled, {fired})
    )
    return TurnRecords(
        session_id=session_id,
        agent=agent_name,
        now=now,
        fired=fired,
        replaced=replaced,
        applied=applied_key(turn_input),
        messages=result.messages,
        schedule=result.schedule,
        events=turn_events(result, version, turn_input),
        delivered=warlock_settings.DELIVER is None,
    )
