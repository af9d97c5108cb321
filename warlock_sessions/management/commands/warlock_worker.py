"""``manage.py warlock_worker``: fire due wakes, deliver the outbox and resume the runs asked
for in the admin, until stopped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...backends.outages import unavailable
from ...host import Shard, Worker
from ...tenancy import for_every_tenant
from ...workflows.orchestrator import drain_configured
from ...workflows.resumes import run_asked_resumes

logger = logging.getLogger("warlock_sessions.worker")


class Command(BaseCommand):
    help = (
        "Fire due wakes (timers, retries, silence reminders), deliver outbox messages and "
        "resume the workflow runs asked for in the admin. "
        "Several workers may run at once. SIGTERM or Ctrl-C finish the wake in hand, then stop."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="make one pass, then exit")
        parser.add_argument(
            "--until-idle", action="store_true", help="exit when a pass finds nothing due"
        )
        parser.add_argument("--batch", type=int, default=100, help="rows claimed per pass (100)")
        parser.add_argument(
            "--poll-interval",
            type=float,
            default=None,
            help="seconds to sleep when idle (WARLOCK_SESSIONS['POLL_INTERVAL'])",
        )
        parser.add_argument(
            "--database", default=None, help="database alias of the wakes and outbox"
        )
        parser.add_argument(
            "--shard",
            metavar="K/N",
            default=None,
            help="claim only the wakes and messages of the sessions in shard K of N, N up to 32 "
            "(0/2 and 1/2 split them between two workers); all of them by default",
        )

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        try:
            shard = Shard.parse(options["shard"]) if options["shard"] else None
        except ValueError as error:
            raise CommandError(f"--shard: {error}") from None
        worker = Worker(
            batch=options["batch"],
            poll_interval=options["poll_interval"],
            using=options["database"],
            before_work=self.drain_orchestrators,
            more_work=[resume_asked_runs],
            shard=shard,
        )
        if options["verbosity"] >= 2:  # each wake fired and message delivered, as it happens
            handler = logging.StreamHandler(self.stdout)
            handler.setFormatter(logging.Formatter("warlock_worker: %(asctime)s %(message)s"))
            worker_log = logging.getLogger("warlock_sessions.worker")
            worker_log.addHandler(handler)
            worker_log.setLevel(logging.INFO)
        if options["verbosity"] >= 1:
            how = "once" if options["once"] or options["until_idle"] else "(Ctrl-C to stop)"
            part = f" of shard {shard}" if shard else ""
            self.stdout.write(f"warlock_worker: firing due wakes{part} {how}")
        done = worker.run(once=options["once"], until_idle=options["until_idle"])
        if options["verbosity"] >= 1:
            self.stdout.write(f"warlock_worker: stopped after {done} wakes and messages")

    def drain_orchestrators(self) -> None:
        """Finish the turns a crashed process left (WARLOCK_SESSIONS["ORCHESTRATORS"]) before
        taking new work. While the database is unavailable the worker tries again before each
        pass; a turn that cannot be finished for another reason is logged, and the worker
        starts anyway."""
        try:
            finished = drain_configured()
        except Exception as error:
            if unavailable(error):
                raise
            logger.exception("could not resume the orchestrators' unfinished turns")
            return
        if finished:
            self.stdout.write(f"resumed {len(finished)} unfinished orchestrator turn(s)")


def resume_asked_runs(limit: int, *, using: str | None, should_stop: Callable[[], bool]) -> int:
    """The resumes asked for in the admin. Their asks live with the snapshots, in the
    snapshot store's database, wherever ``--database`` puts the sessions."""
    return run_asked_resumes(limit, should_stop=should_stop)
