"""``manage.py demo_workflow [--order N] [--resume RUN_ID]``: run or resume the demo's durable
order workflow (``example_project.demo.workflows``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from example_project.demo.workflows import fulfil_order
from warlock_sessions.workflows.runs import new_run_id


class Command(BaseCommand):
    help = "Run the demo's durable order workflow, or resume a run that was killed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--order", type=int, default=42, help="the order number (42)")
        parser.add_argument("--run-id", default=None, help="the run's id (made up if not given)")
        parser.add_argument("--resume", metavar="RUN_ID", help="resume this run instead")

    def handle(self, *args: Any, **options: Any) -> None:
        fulfil_order.on_event = self._progress
        try:
            if options["resume"]:
                self.stdout.write(f"Resuming run {options['resume']}.")
                result = fulfil_order.resume(options["resume"])
            else:
                run_id = options["run_id"] or new_run_id(fulfil_order.name)
                self.stdout.write(
                    f"Run {run_id}: kill this process during a step, then resume it with\n"
                    f"  manage.py demo_workflow --resume {run_id}\n"
                    "or from the admin's Snapshots page."
                )
                result = fulfil_order.execute({"order": options["order"]}, run_id=run_id)
        finally:
            fulfil_order.on_event = None
        self.stdout.write(f"run {result.run_id}: {result.status} {result.state}")

    def _progress(self, name: str, payload: dict[str, Any]) -> None:
        if name == "workflow.step.started":
            self.stdout.write(f"  {payload['step']}…")
        elif name == "workflow.step.completed":
            self.stdout.write(f"  {payload['step']}: done")
