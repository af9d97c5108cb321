"""The histories this process last saw of the row store's conversations, so a send reads the
conversation's header and only the message rows added since (none, when this process wrote
the last turn) instead of the whole history.

An entry is good for one *stamp* of the header: its version, which every write moves, and the
moment the conversation was created (a conversation deleted and made again starts at version
1 again). It also keeps the id of its last row: rows are written once and never updated, and
their ids are never reused, so if the row at that position still has that id, every row
before it is unchanged and only the rows after it are new. The cache holds at most
``CONVERSATION_CACHE_MESSAGES`` messages in all, the least recently used conversations going
first; the message objects are shared with the records ``load`` returns, which is why nothing
on the send path changes a message it did not make (docs/conversations.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..conf import warlock_settings

Stamp = tuple[int, str]  # (version, createdAt)
Key = tuple[str, str]  # (database alias, conversation id)


@dataclass(frozen=True)
class Seen:
    stamp: Stamp
    messages: tuple[dict[str, Any], ...]
    #: The id of the row of the last message, ``None`` when it is not known (the whole
    #: history is read again when the stamp moves).
    last_row: int | None


class SeenHistories:
    def __init__(self) -> None:
        self._entries: OrderedDict[Key, Seen] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: Key) -> Seen | None:
        with self._lock:
            seen = self._entries.get(key)
            if seen is not None:
                self._entries.move_to_end(key)
            return seen

    def put(
        self, key: Key, stamp: Stamp, messages: Sequence[dict[str, Any]], last_row: int | None
    ) -> None:
        limit = warlock_settings.CONVERSATION_CACHE_MESSAGES
        with self._lock:
            self._drop(key)
            if len(messages) > limit:
                return
            self._entries[key] = Seen(stamp, tuple(messages), last_row)
            self._held += len(messages)
            while self._held > limit and self._entries:
                self._drop(next(iter(self._entries)))

    def forget(self, key: Key) -> None:
        with self._lock:
            self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0

    def _drop(self, key: Key) -> None:
        seen = self._entries.pop(key, None)
        if seen is not None:
            self._held -= len(seen.messages)


#: This process's, shared by every row store (a store is made per request).
seen_histories = SeenHistories()
