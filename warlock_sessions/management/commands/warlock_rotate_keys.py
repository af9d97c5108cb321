"""``manage.py warlock_rotate_keys``: seal every stored value again with the current key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from ...encryption import keyring
from ...errors import ConfigurationError, EncryptionError
from ...rotation import BATCH, Progress, current_key_in_use, not_rotated, rotate
from ...tenancy import for_every_tenant


class Command(BaseCommand):
    help = (
        "Seal every sealed or plain value the app keeps in the database again with the first "
        "key of ENCRYPTION_KEYS, in batches, while the app runs: after adding a key, before "
        "removing an old one, or to seal a database kept before encryption was turned on."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database", default=None, help="database alias (default: each table's)"
        )
        parser.add_argument("--batch-size", type=int, default=BATCH, help="rows read at a time")
        parser.add_argument(
            "--servers-ready",
            action="store_true",
            help="every server has this ENCRYPTION_KEYS already: needed while nothing in the "
            "database is sealed with the first key yet (docs/privacy.md, rotating a key)",
        )

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be 1 or more")
        if not options["servers_ready"] and not self._servers_seal_with_the_key(options):
            raise CommandError(
                "nothing in the database is sealed with the first key of ENCRYPTION_KEYS yet, "
                "so the servers may not have it: every row sealed with it now would answer "
                "409 encryption-error there. Give every server the new key (first as a second "
                "key, then as the first), then run this again with --servers-ready."
            )
        live = self.stdout.isatty()
        done: Progress | None = None
        unreadable: list[str] = []
        try:
            for progress in rotate(options["database"], options["batch_size"]):
                if done is not None and progress is not done:
                    unreadable += self._finished(done)
                done = progress
                self._show(progress, live)
        except (ConfigurationError, EncryptionError, DatabaseError) as error:
            if live:
                self.stdout.write("")
            raise CommandError(str(error)) from error
        if done is not None:
            unreadable += self._finished(done)
        for why in not_rotated():
            self.stderr.write(f"not sealed again: {why}")
        if unreadable:
            raise CommandError(
                f"{len(unreadable)} value(s) did not open and were left as they are; every other "
                "row is sealed with the first key. Find them with the places above."
            )

    @staticmethod
    def _servers_seal_with_the_key(options: dict[str, Any]) -> bool:
        if keyring() is None:
            return True  # the rotation says what is missing
        try:
            return current_key_in_use(options["database"])
        except (ConfigurationError, DatabaseError) as error:
            raise CommandError(str(error)) from error

    def _show(self, progress: Progress, live: bool) -> None:
        """The progress bar of the table being sealed: on one line on a terminal, a line a
        batch in a log."""
        share = progress.read / progress.total if progress.total else 1.0
        bar = "#" * int(share * 30)
        line = f"{progress.table:>22} [{bar:<30}] {progress.read}/{progress.total}"
        self.stdout.write(f"\r{line}" if live else line, ending="" if live else "\n")
        self.stdout.flush()

    def _finished(self, progress: Progress) -> list[str]:
        """Say what one table's rotation did; the places of its values that did not open."""
        if self.stdout.isatty():
            self.stdout.write("")
        kept = progress.read - progress.resealed - progress.moved - len(progress.unreadable)
        parts = [f"sealed {progress.resealed} of {progress.read}", f"{kept} had no change to make"]
        if progress.moved:
            parts.append(f"{progress.moved} changed meanwhile (sealed by the app)")
        if progress.unreadable:
            parts.append(f"{len(progress.unreadable)} do not open (see stderr)")
        self.stdout.write(f"{progress.table}: {'; '.join(parts)}")
        for place in progress.unreadable:
            self.stderr.write(f"does not open: {place}")
        return progress.unreadable
