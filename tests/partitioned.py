"""The hot tables hash-partitioned by their distribution column, in plain PostgreSQL: the key
rule Citus enforces (every primary and unique key contains the distribution column), checked
by PostgreSQL itself when the tables are made, and partitions to count in query plans.

``make test`` runs the store, host, conversation and worker tests once more with
``WARLOCK_TEST_PARTITIONED=1``: the test database's tables are then made anew as
``PARTITION BY HASH`` right after its migrations (tests/conftest.py)."""

from __future__ import annotations

import os
import re
from typing import Any

#: Each distributed table and the column its rows are spread by (docs/scaling.md).
HOT_TABLES = {
    "warlock_sessions_session": "id",
    "warlock_sessions_sessionevent": "session_id",
    "warlock_sessions_wake": "bucket",
    "warlock_sessions_outboundmessage": "bucket",
    "warlock_sessions_appliedinput": "session_id",
    "warlock_sessions_sessionowner": "session_id",
    "warlock_owner_tallies": "key",
    "warlock_checkpoints": "session_id",
    "warlock_conversations": "id",
    "warlock_conversation_messages": "conversation_id",
    "warlock_cache_entries": "scope",
    "warlock_cache_scopes": "scope",
    "warlock_snapshots": "key",
    "warlock_session_locks": "key",
}
#: Each one's primary key on PostgreSQL (migrations 0020 and 0024): its distribution column,
#: alone when that is the row's own key.
PRIMARY_KEYS = {
    table: [column] if column in ("id", "key") else [column, "id"]
    for table, column in HOT_TABLES.items()
}
PARTITIONS = 4
PARTITION = re.compile(r"^(?P<table>.+)_p(?P<number>\d+)$")


def partitioned() -> bool:
    return os.environ.get("WARLOCK_TEST_PARTITIONED") == "1"


def partition_hot_tables(connection: Any) -> None:
    """Make each hot table anew, hash-partitioned, with its columns, defaults, identity,
    indexes, keys and foreign keys, from it and to it (creating a unique key without the
    partition column is an error here, as it is on Citus)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
            "FROM pg_constraint WHERE contype = 'f' "
            "AND (conrelid::regclass::text = ANY(%s) OR confrelid::regclass::text = ANY(%s))",
            [list(HOT_TABLES)] * 2,
        )
        foreign_keys = cursor.fetchall()
        for table, name, _ in foreign_keys:
            cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
        for table, column in HOT_TABLES.items():
            cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_plain"')
            cursor.execute(
                f'CREATE TABLE "{table}" (LIKE "{table}_plain" INCLUDING ALL) '
                f'PARTITION BY HASH ("{column}")'
            )
            for number in range(PARTITIONS):
                cursor.execute(
                    f'CREATE TABLE "{table}_p{number}" PARTITION OF "{table}" '
                    f"FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {number})"
                )
            cursor.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}_plain"')
            cursor.execute(f'DROP TABLE "{table}_plain"')
        for table, name, definition in foreign_keys:
            cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')


def partitions_scanned(plan: Any) -> dict[str, set[str]]:
    """The partitions of each hot table a plan (``EXPLAIN (FORMAT JSON)``) reads."""
    found: dict[str, set[str]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            relation = node.get("Relation Name")
            match = PARTITION.match(relation) if isinstance(relation, str) else None
            if match and match["table"] in HOT_TABLES:
                found.setdefault(match["table"], set()).add(relation)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return found
