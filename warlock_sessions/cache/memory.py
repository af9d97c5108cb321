"""MemoryCacheStore: this process's cached answers, optionally bounded (least recently used
first out)."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable

from .base import CacheStore, Entry, live, rank

Slot = tuple[str, str, str]  # (namespace, scope, key)


class MemoryCacheStore(CacheStore):
    """``MemoryCacheStore(max_entries=None)``: with ``max_entries``, the least recently used
    entry goes when one more is stored (a hit makes an entry recent; it never extends its
    life). Entries are copied in and out."""

    def __init__(self, max_entries: int | None = None) -> None:
        if max_entries is not None and (type(max_entries) is not int or max_entries < 1):
            raise ValueError(f"max_entries is a whole number above 0, not {max_entries!r}")
        self.max_entries = max_entries
        self._entries: OrderedDict[Slot, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, namespace: str, scope: str, key: str) -> Entry | None:
        with self._lock:
            entry = self._entries.get((namespace, scope, key))
            if entry is None:
                return None
            self._entries.move_to_end((namespace, scope, key))
            return copy.deepcopy(entry)

    def _put(self, entry: Entry) -> None:
        slot = (entry["namespace"], entry["scope"], entry["key"])
        with self._lock:
            self._entries.pop(slot, None)
            self._entries[slot] = copy.deepcopy(entry)
            while self.max_entries is not None and len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def _similar(
        self, namespace: str, scope: str, vector: list[float], top_k: int, at: float
    ) -> list[tuple[float, Entry]]:
        with self._lock:
            candidates = [
                (entry["vector"], entry)
                for (ns, sc, _), entry in self._entries.items()
                if ns == namespace and sc == scope and live(entry, at)
            ]
            # Not made recent here: a candidate the checks refuse is no use.
            return [
                (score, copy.deepcopy(entry)) for score, entry in rank(vector, candidates, top_k)
            ]

    def _remove(self, keep: Callable[[Slot, Entry], bool]) -> int:
        with self._lock:
            gone = [slot for slot, entry in self._entries.items() if not keep(slot, entry)]
            for slot in gone:
                del self._entries[slot]
            return len(gone)

    def _remove_scope(self, scope: str) -> int:
        return self._remove(lambda slot, entry: slot[1] != scope)

    def _remove_namespace(self, namespace: str) -> int:
        return self._remove(lambda slot, entry: slot[0] != namespace)

    def _remove_expired(self, at: float) -> int:
        return self._remove(lambda slot, entry: live(entry, at))
