"""``manage.py warlock_recount_quotas``: set each owner's quota counters to the rows there are."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import router

from ...models import Conversation, OwnerTally, SessionOwner
from ...models.quotas import recount
from ...tenancy import for_every_tenant


class Command(BaseCommand):
    help = (
        "Count each owner's sessions and conversations again and set their quota counters "
        "(MAX_SESSIONS_PER_OWNER, MAX_CONVERSATIONS_PER_OWNER) to match, while the app runs: "
        "after rows were written or deleted outside Django (raw SQL, a restore). Prints how "
        "many counters it corrected."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database", default=None, help="database alias (default: the counters')"
        )

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"] or router.db_for_write(OwnerTally) or "default"
        rows = {
            model.counted_as or "": model._base_manager.all()
            for model in (SessionOwner, Conversation)
        }
        corrected = recount(rows, using)
        self.stdout.write(f"corrected {corrected} quota counter(s)")
