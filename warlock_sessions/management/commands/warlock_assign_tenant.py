"""``manage.py warlock_assign_tenant``: give the rows of no tenant to one (turning tenants on)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import models

from ...host.retention import pages_by_pk
from ...models.quotas import update_counted
from ...tenancy import checked_tenant

BATCH = 1000


def tenanted_models() -> list[type[models.Model]]:
    """Every table of the app whose rows carry a tenant."""
    return [
        model
        for model in apps.get_app_config("warlock_sessions").get_models()
        if not model._meta.proxy and any(field.name == "tenant" for field in model._meta.fields)
    ]


class Command(BaseCommand):
    help = (
        "Give every row that belongs to no tenant (kept before TENANT_RESOLVER was set, or made "
        "outside every tenant's scope) to TENANT, in every table that keeps one, in batches, "
        "while the app runs. Prints how many rows of each table it gave."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="the tenant the rows of no tenant become")
        parser.add_argument(
            "--database", default=None, help="database alias (default: each table's)"
        )
        parser.add_argument("--batch-size", type=int, default=BATCH, help="rows written at a time")
        parser.add_argument("--dry-run", action="store_true", help="count, change nothing")
        parser.add_argument(
            "--force",
            action="store_true",
            help="give them even though some rows are tenants' already (a row of no tenant may "
            "then be another tenant's)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant = checked_tenant(options["tenant"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be 1 or more")
        models_ = tenanted_models()
        using = options["database"]
        if not any(
            model._base_manager.db_manager(using).filter(tenant="").exists() for model in models_
        ):
            self.stdout.write("no row belongs to no tenant: nothing to give")
            return
        if not (options["force"] or options["dry_run"]) and any(
            model._base_manager.db_manager(using).exclude(tenant="").exists() for model in models_
        ):
            raise CommandError(
                "some rows belong to tenants already, so a row of no tenant may be one of "
                "theirs (made outside every scope): give those by hand, or use --force"
            )
        verb = "would give" if options["dry_run"] else "gave"
        for model in models_:
            rows = model._base_manager.db_manager(using).filter(tenant="")
            if options["dry_run"]:
                count = rows.count()
            else:
                count = 0
                keys = rows.values_list("pk", flat=True)
                for page in pages_by_pk(keys, options["batch_size"]):
                    # Only rows still of no tenant: one made meanwhile in a scope keeps its own.
                    given = rows.filter(pk__in=page)
                    if getattr(model, "counted_as", None):  # their quota counts go too
                        changes = {"tenant": tenant}
                        count += update_counted(given, changes, models.QuerySet.update)
                    else:
                        count += given.update(tenant=tenant)
            self.stdout.write(f"{model._meta.verbose_name_plural}: {verb} {count} to {tenant}")
