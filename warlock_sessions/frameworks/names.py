"""The names and ids a framework gives (threads, namespaces, channels, apps, users), checked
as the tables keep them: a clear error, never a database's."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError
from ..models import MAX_GRAPH_NAME_LENGTH


def checked_name(value: Any, field: str, *, empty: bool = False) -> str:
    text = str(value)
    if not text and not empty:
        raise InvalidInputError(field, "must not be empty")
    if len(text) > MAX_GRAPH_NAME_LENGTH:
        raise InvalidInputError(field, f"is longer than {MAX_GRAPH_NAME_LENGTH} characters")
    if "\x00" in text:
        raise InvalidInputError(field, "must not hold a NUL character")
    return text
