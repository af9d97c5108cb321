"""``manage.py warlock_migrate_sessions``: lift stored 3.x session blobs to the v4 format."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...encryption import open_text, session_place
from ...engine import migrate_session
from ...errors import EncryptionError, InvalidSessionError, SessionConflictError
from ...models import Session
from ...stores.db import DjangoStore
from ...tenancy import for_every_tenant


class Command(BaseCommand):
    help = (
        "Rewrite stored 3.x session blobs as v4 sessions (runs, claims and data kept), each with "
        "the version check. Rows already in v4 are left alone; unreadable rows are reported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--flow-map",
            action="append",
            default=[],
            metavar="OLD=NEW",
            help="a 3.x flow or signal id that a v4 flow with another id took over (repeatable)",
        )
        parser.add_argument("--dry-run", action="store_true", help="report, change nothing")
        parser.add_argument("--database", default=None, help="database alias of the sessions")

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        flow_map = {}
        for pair in options["flow_map"]:
            old, sep, new = pair.partition("=")
            if not sep or not old or not new:
                raise CommandError(f"--flow-map takes OLD=NEW, not {pair!r}")
            flow_map[old] = new
        store = DjangoStore(using=options["database"])
        migrated = skipped = failed = 0
        rows = (
            Session.objects.using(store.using).order_by("id").values_list("id", "version", "blob")
        )
        for session_id, version, stored in rows.iterator():
            try:
                blob = json.loads(open_text(stored, *session_place(session_id, version)))
            except (ValueError, EncryptionError):
                blob = None
            if isinstance(blob, dict) and "v" in blob:
                skipped += 1
                continue
            try:
                session = migrate_session(blob, session_id, lambda key: flow_map.get(key, key))
                if not options["dry_run"]:
                    store.save(session, version)
            except (InvalidSessionError, SessionConflictError) as error:
                failed += 1
                self.stderr.write(f"{session_id}: {error}")
                continue
            migrated += 1
        verb = "would migrate" if options["dry_run"] else "migrated"
        self.stdout.write(f"{verb} {migrated} session(s); {skipped} already v4; {failed} failed")
        if failed:
            raise CommandError(f"{failed} session(s) could not be migrated (see above)")
