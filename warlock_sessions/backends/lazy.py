"""Packages of backends imported on first use, so a script imports a backend without the
optional libraries of the others (every backend package's ``__getattr__``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_backends(package: str, backends: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing each backend class from its module when first used,
    so a package's cheap backends work where an optional library (or Django) is missing."""

    def __getattr__(name: str) -> Any:
        if name in backends:
            return getattr(import_module(backends[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
