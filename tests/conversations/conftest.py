"""Where the conversation tests keep conversations: every snapshot store (one record each)
and the row store on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.snapshots.conftest import (
    SNAPSHOT_BACKENDS,
    needs_postgres,
    postgres_db,
    snapshot_factory,
)

CONVERSATION_ROWS = [
    pytest.param("rows-sqlite", id="rows-sqlite", marks=[pytest.mark.django_db(transaction=True)]),
    pytest.param("rows-postgres", id="rows-postgres", marks=[needs_postgres, postgres_db]),
]


def conversation_rows(backend: str) -> Any:
    from warlock_sessions.conversations import DjangoConversationStore

    return DjangoConversationStore(using="postgres" if backend == "rows-postgres" else None)


@pytest.fixture(params=[*SNAPSHOT_BACKENDS, *CONVERSATION_ROWS])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param.startswith("rows-"):
        store = conversation_rows(request.param)
        yield lambda: store
    else:
        yield from snapshot_factory(request.param, tmp_path)
