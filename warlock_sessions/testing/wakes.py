"""Sessions with runs parked on due wakes, to exercise or load-test a worker (needs Django)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..models import Wake
from ..stores.db import DjangoStore
from .blobs import run_blob, session_blob


def seed_due_wakes(
    store: DjangoStore, *, sessions: int, flows: int, agent: str, prefix: str = "s"
) -> list[Wake]:
    """Save ``sessions`` sessions, each with one run of flows ``f0``…``f<flows-1>`` waiting at
    step ``w``, and one due ``Wake`` per run (key ``f<n>#k:w:<session>``). The agent's flows
    need a timer step ``w`` for the runs to move when woken."""
    due = datetime.now(UTC) - timedelta(seconds=1)
    wakes = []
    for index in range(sessions):
        session_id = f"{prefix}{index}"
        runs = []
        for flow in range(flows):
            run = run_blob(
                f"f{flow}", trigger_key="k", session_id=session_id, status="waiting", step_id="w"
            )
            run["waiting"]["key"] = key = f"f{flow}#k:w:{index}"
            runs.append(run)
            wakes.append(Wake(key=key, session_id=session_id, agent=agent, due_at=due))
        store.save(session_blob(session_id, runs=runs), 0)
    return Wake.objects.using(store.using).bulk_create(wakes)
