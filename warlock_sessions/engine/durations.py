"""Durations as flows write them: a number and one unit, ``30s``, ``5m``, ``24h``, ``1.5d``."""

from __future__ import annotations

import re

from ..errors import FlowConfigurationError

_PATTERN = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def is_duration(value: object) -> bool:
    return isinstance(value, str) and _PATTERN.match(value) is not None


def parse_duration(value: object, where: str = "") -> int:
    """``"5m"`` -> 300000 milliseconds; anything else raises ``FlowConfigurationError``."""
    match = _PATTERN.match(value) if isinstance(value, str) else None
    if match is None:
        raise FlowConfigurationError(
            where, f"{value!r} is not a duration (a number then s, m, h or d, like '30s' or '24h')"
        )
    return round(float(match[1]) * _UNIT_MS[match[2]])
