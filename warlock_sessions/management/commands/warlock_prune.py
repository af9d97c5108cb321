"""``manage.py warlock_prune``: delete what the retention policy no longer keeps, in bounded
batches (``stores.retention``), with ``--dry-run`` and a progress bar."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cache import default_cache_store
from ...conf import warlock_settings
from ...engine.durations import is_duration, parse_duration
from ...host.notify import tell_followers
from ...host.retention import DEFAULT_BATCH, DEFAULT_PAUSE, Retention, prune
from ...tenancy import for_every_tenant

BAR_WIDTH = 30


def _age(text: str) -> timedelta | None:
    if text == "never":
        return None
    if not is_duration(text):
        raise CommandError(f"{text!r} is not an age: a number then s, m, h or d ('30d'), or never")
    return timedelta(milliseconds=parse_duration(text))


def prune_cache() -> dict[str, int]:
    """The semantic cache's expired answers, and (in the database) those of conversations
    that are gone, from ``WARLOCK_SESSIONS["CACHE_STORE"]``."""
    store = default_cache_store()
    if store is None:
        return {}
    from ...cache.db import DjangoCacheStore

    removed = store.prune()
    if isinstance(store, DjangoCacheStore):
        removed += store.forget_gone_conversations()
    return {"cached answers": removed}


class Command(BaseCommand):
    help = (
        "Delete ended sessions, old log entries (keeping each session's last ones), delivered "
        "outbox rows, fired wakes, idle conversations (LangGraph threads and ADK sessions "
        "too), finished runs' snapshots, expired cached answers and expired LangGraph memory "
        "items, in short "
        "batches. Ages are like 90d, 12h; 'never' keeps "
        "that kind for ever."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = Retention()
        parser.add_argument(
            "--sessions", default="90d", help="ended sessions not updated for this long (90d)"
        )
        parser.add_argument("--events", default="30d", help="log entries older than this (30d)")
        parser.add_argument(
            "--keep-events",
            type=int,
            default=defaults.keep_events,
            help=f"keep each session's last N log entries, however old ({defaults.keep_events})",
        )
        parser.add_argument("--outbox", default="7d", help="delivered outbox rows older (7d)")
        parser.add_argument("--wakes", default="7d", help="fired wakes older than this (7d)")
        parser.add_argument(
            "--conversations",
            default="90d",
            help="conversations with no pending turn, LangGraph threads and ADK sessions, not "
            "written for this long (90d)",
        )
        parser.add_argument(
            "--snapshots", default="30d", help="snapshots of finished runs older than this (30d)"
        )
        parser.add_argument(
            "--batch", type=int, default=DEFAULT_BATCH, help=f"rows per delete ({DEFAULT_BATCH})"
        )
        parser.add_argument(
            "--pause",
            type=float,
            default=DEFAULT_PAUSE,
            help=f"seconds to rest after each batch, beyond as long as it took ({DEFAULT_PAUSE})",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")

    _drawing: str | None = None  # the kind of row whose bar is on the line now

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1 or options["keep_events"] < 0 or options["pause"] < 0:
            raise CommandError("--batch must be at least 1, --keep-events and --pause at least 0")
        retention = Retention(
            sessions=_age(options["sessions"]),
            events=_age(options["events"]),
            keep_events=options["keep_events"],
            outbox=_age(options["outbox"]),
            wakes=_age(options["wakes"]),
            conversations=_age(options["conversations"]),
            snapshots=_age(options["snapshots"]),
        )
        # Agents whose sessions and log live otherwise (WARLOCK_SESSIONS["RETENTION"]).
        retention = replace(
            retention,
            agents={
                agent: retention.for_agent(entry)
                for agent, entry in warlock_settings.RETENTION.items()
            },
        )
        counts = prune(
            retention,
            batch=options["batch"],
            dry_run=options["dry_run"],
            progress=None if options["dry_run"] else self._progress,
            pause=options["pause"],
            forgotten=tell_followers,
        )
        if not options["dry_run"]:
            counts.update(prune_cache())
        verb = "would delete" if options["dry_run"] else "deleted"
        for what, count in counts.items():
            self.stdout.write(f"{what}: {verb} {count}")

    def _progress(self, what: str, done: int, total: int) -> None:
        """One bar per kind of row, on its own line (a bar left short, because rows went
        while it ran, is ended before the next one starts), in the terminal's own colour."""
        if self._drawing not in (None, what):
            self.stderr.write("", style_func=_plain)
        self._drawing = what if done < total else None
        filled = BAR_WIDTH * min(done, total) // max(total, 1)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        end = "\n" if done >= total else ""
        self.stderr.write(f"\r{what:8} [{bar}] {done}/{total}", ending=end, style_func=_plain)
        self.stderr.flush()


def _plain(text: str) -> str:
    return text
