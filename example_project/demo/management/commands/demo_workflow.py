"""``manage.py demo_workflow [--order N] [--resume RUN_ID]``: run or resume the demo's durable
order workflow (``example_project.demo.workflows``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from example_project.demo.workflows import fulfil_order


class Command(BaseCommand):
    help = "Run the demo's durable order workflow, or resume a run that was killed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--order", type=int, default=42, help="the order number (42)")
        parser.add_argument("--run-id", default=None, help="the run's id (made up if not given)")
        parser.add_argument("--resume", metavar="RUN_ID", help="resume this run instead")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["resume"]:
            result = fulfil_order.resume(options["resume"])
        else:
            run_id = options["run_id"]
            self.stdout.write("Kill this process during a step, then resume the run.")
            result = fulfil_order.execute({"order": options["order"]}, run_id=run_id)
        self.stdout.write(f"run {result.run_id}: {result.status} {result.state}")
