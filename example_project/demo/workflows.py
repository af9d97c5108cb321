"""The demo's durable workflow: fulfilling an order in three slow steps, snapshotted after
each one in the database, so killing the process mid-run loses nothing. Start one with
``python manage.py demo_workflow``, kill it (Ctrl-C or ``kill -9``) during a step, and resume
it from the admin (Snapshots, "Resume the selected runs") or with
``python manage.py demo_workflow --resume <run id>``."""

from __future__ import annotations

import os
import time
from typing import Any

from warlock_sessions.snapshots import DjangoSnapshotStore
from warlock_sessions.workflows import Step, StepContext, Workflow

#: How long each step takes, so there is time to kill the process mid-run.
STEP_SECONDS = float(os.environ.get("DEMO_STEP_SECONDS", "3"))


def slow(action: str) -> Any:
    def run(ctx: StepContext) -> str:
        time.sleep(STEP_SECONDS)
        return f"{action} order {ctx.input['order']}"

    return run


fulfil_order = Workflow(
    "fulfil-order",
    [
        Step("reserve", run=slow("reserved")),
        Step("pack", run=slow("packed")),
        Step("ship", run=slow("shipped")),
    ],
    store=DjangoSnapshotStore(),
)
