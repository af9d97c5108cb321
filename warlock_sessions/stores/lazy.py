"""Packages of backends imported on first use, and a default built once from the settings:
what the session, snapshot and checkpoint store packages share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def lazy_backends(package: str, backends: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing each backend class from its module when first used,
    so a package's cheap backends work where an optional library (or Django) is missing."""

    def __getattr__(name: str) -> Any:
        if name in backends:
            return getattr(import_module(backends[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


class BuiltOnce(Generic[T]):
    """``build()``'s result, made on first ``get()`` and shared (every store is safe across
    threads) until ``forget()`` (the settings changed)."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._built = False
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if not self._built:
                self._value, self._built = self._build(), True
            return self._value  # type: ignore[return-value]

    def forget(self) -> None:
        with self._lock:
            self._value, self._built = None, False
