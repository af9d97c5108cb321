"""Dates as the session blob writes them: ISO-8601 text exactly as JavaScript's toISOString.

A TypeScript host and a Django host can share one store only if both render the same instant
as the same text (``2026-09-20T10:00:00.000Z``: UTC, milliseconds, ``Z``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_ISO_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}")


def iso_from_ms(epoch_ms: int) -> str:
    """Integer epoch milliseconds as toISOString text: years before 1000 are padded to four
    digits, as JavaScript pads them (``strftime("%Y")`` does not on Linux)."""
    seconds, millis = divmod(epoch_ms, 1000)
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{millis:03d}Z"
    )


def ms_from_iso(text: str) -> int:
    """ISO-8601 text (with ``Z`` or an offset; naive means UTC) as epoch milliseconds."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def datetime_from_iso(text: str) -> datetime:
    """ISO-8601 text (as ``ms_from_iso`` reads it) as an aware UTC datetime, to milliseconds."""
    return datetime.fromtimestamp(ms_from_iso(text) / 1000, tz=UTC)


def iso_from_datetime(moment: datetime) -> str:
    """A datetime (naive means UTC) as toISOString text."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso_from_ms(round(moment.timestamp() * 1000))


def to_iso(value: object) -> str | None:
    """A datetime, ISO text or epoch-milliseconds number as ISO text; anything else is None.

    Used where old data may hold dates in any of those forms (3.x migration).
    """
    if isinstance(value, datetime):
        return iso_from_datetime(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return iso_from_ms(round(value))
    if isinstance(value, str) and _ISO_PREFIX.match(value):
        try:
            return iso_from_ms(ms_from_iso(value))
        except ValueError:
            return None
    return None
