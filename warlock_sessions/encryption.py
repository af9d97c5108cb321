"""Encryption at rest: what people said, sealed with AES-GCM and bound to where it is kept.

With ``WARLOCK_SESSIONS["ENCRYPTION_KEYS"]`` set (``{key id: base64 of 32 random bytes}``, the
first entry the one that seals), the stores seal the text they keep (:func:`seal_text`) and
JSON values (:func:`seal_json`) with the place they are kept as associated data: a table, the
row's id and its version or sequence number. A sealed value copied to another row, another
session or another version does not open (:class:`SealedValueError`); a value kept in plain
text where a sealed one is required is refused (:class:`PlaintextRefusedError`) unless
``ENCRYPTION_ACCEPT_PLAINTEXT`` is set while ``warlock_rotate_keys`` seals an existing
database. A sealed value is ``wse1.<key id>.<base64 of nonce and ciphertext>``; in a JSON
column it is the object ``{"sealed": "wse1…"}``. A text longer than ``COMPRESS_FROM`` bytes
is compressed before it is sealed (as Rails' encrypted attributes do): its sealed length
says less of its length than the text's own would, but something of how repetitive it is.
"""

from __future__ import annotations

import binascii
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .conf import BuiltFromSettings, warlock_settings
from .errors import PlaintextRefusedError, SealedValueError

#: What a sealed text starts with (the format's version).
PREFIX = "wse1."
#: The key in the JSON object a JSON column holds a sealed value under.
SEALED = "sealed"
NONCE_BYTES = 12
#: The first byte of what is sealed: how the text follows it.
RAW, COMPRESSED = b"r", b"z"
#: Texts longer than this (in UTF-8 bytes) are compressed before they are sealed: below it,
#: compressing costs more time than the bytes it saves.
COMPRESS_FROM = 1024


@dataclass(frozen=True)
class Keyring:
    """The configured keys: ``current`` seals, every one opens what it sealed."""

    current: str
    keys: Mapping[str, Any]
    accept_plaintext: bool

    def seal(self, text: str, where: tuple[str, ...]) -> str:
        return self.seal_bytes(text.encode(), where)

    def seal_bytes(self, plain: bytes, where: tuple[str, ...]) -> str:
        # Compressed first (JSON shrinks tenfold), so the value costs less to seal, send and
        # keep; the flag is sealed with it.
        plain = COMPRESSED + zlib.compress(plain, 1) if len(plain) > COMPRESS_FROM else RAW + plain
        nonce = os.urandom(NONCE_BYTES)
        sealed = self.keys[self.current].encrypt(nonce, plain, _associated(where))
        token = binascii.b2a_base64(nonce + sealed, newline=False).decode()
        return f"{PREFIX}{self.current}.{token}"

    def open(self, stored: str, where: tuple[str, ...]) -> str:
        return self.open_bytes(stored, where).decode()

    def open_bytes(self, stored: str, where: tuple[str, ...]) -> bytes:
        from cryptography.exceptions import InvalidTag

        key_id, _, token = stored[len(PREFIX) :].partition(".")
        key = self.keys.get(key_id)
        if key is None:
            raise SealedValueError(
                where, f"was sealed with key {key_id!r}, which is not configured"
            )
        try:
            raw = binascii.a2b_base64(token, strict_mode=True)
            plain = key.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], _associated(where))
        except (InvalidTag, ValueError, binascii.Error):
            raise SealedValueError(
                where, "does not open here: it was changed, or sealed for another place"
            ) from None
        flag, body = plain[:1], plain[1:]
        return zlib.decompress(body) if flag == COMPRESSED else body


def _associated(where: tuple[str, ...]) -> bytes:
    # A JSON array: ("a", "bc") and ("ab", "c") are different places.
    return orjson.dumps(list(where))


def _configured_keyring() -> Keyring | None:
    return _keyring_of(warlock_settings.ENCRYPTION_KEYS)


#: The configured keys; ``None`` when ``ENCRYPTION_KEYS`` is not set (or Django is not: a
#: store used on its own seals nothing).
keyring = BuiltFromSettings(_configured_keyring)


def _keyring_of(keys: Mapping[str, bytes] | None) -> Keyring | None:
    if not keys:
        return None
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return Keyring(
        current=next(iter(keys)),
        keys={key_id: AESGCM(secret) for key_id, secret in keys.items()},
        accept_plaintext=bool(warlock_settings.ENCRYPTION_ACCEPT_PLAINTEXT),
    )


def sealing() -> bool:
    """Whether values are sealed as they are written."""
    return keyring() is not None


def is_sealed(stored: object) -> bool:
    return isinstance(stored, str) and stored.startswith(PREFIX)


def sealed_key(stored: object) -> str | None:
    """The id of the key a stored value (text, or a JSON column's value) was sealed with;
    ``None`` for a plain one."""
    if isinstance(stored, Mapping) and set(stored) == {SEALED}:
        stored = stored[SEALED]
    if not is_sealed(stored):
        return None
    assert isinstance(stored, str)
    return stored[len(PREFIX) :].partition(".")[0]


def seal_text(text: str, *where: str) -> str:
    """``text`` as it is kept at ``where``: sealed when there are keys, else itself."""
    ring = keyring()
    return text if ring is None else ring.seal(text, where)


def open_text(stored: str, *where: str) -> str:
    """What ``seal_text`` kept at ``where``, opened."""
    ring = keyring()
    if is_sealed(stored):
        if ring is None:
            raise SealedValueError(where, "is sealed and ENCRYPTION_KEYS is not set")
        return ring.open(stored, where)
    if ring is not None and not ring.accept_plaintext:
        raise PlaintextRefusedError(where)
    return stored


def seal_json(value: Any, *where: str) -> Any:
    """A JSON value as a JSON column keeps it at ``where``: ``{"sealed": …}`` when there are
    keys, else the value itself."""
    ring = keyring()
    if ring is None:
        return value
    # The standard library's text, as the JSON columns write it: exact for every number.
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return {SEALED: ring.seal(text, where)}


def open_json(stored: Any, *where: str) -> Any:
    """What ``seal_json`` kept at ``where``, opened."""
    if isinstance(stored, Mapping) and set(stored) == {SEALED} and is_sealed(stored[SEALED]):
        return json.loads(open_text(stored[SEALED], *where))
    ring = keyring()
    if ring is not None and not ring.accept_plaintext:
        raise PlaintextRefusedError(where)
    return stored


#: What the serialisation type of a value ``seal_bytes`` sealed is marked with, in the column
#: beside it (as LangGraph's own ``EncryptedSerializer`` marks its type).
SEALED_KIND = "+wse1"


def seal_bytes(data: bytes, *where: str) -> bytes | None:
    """``data`` sealed for ``where`` (the sealed text's ASCII), or ``None`` when there are no
    keys (keep ``data`` as it is, marked plain by its column: bytes cannot say it)."""
    ring = keyring()
    return None if ring is None else ring.seal_bytes(data, where).encode()


def open_bytes(stored: bytes, sealed: bool, *where: str) -> bytes:
    """What ``seal_bytes`` kept at ``where`` (``sealed``: its column says it was), opened."""
    ring = keyring()
    if sealed:
        if ring is None:
            raise SealedValueError(where, "is sealed and ENCRYPTION_KEYS is not set")
        return ring.open_bytes(stored.decode(), where)
    if ring is not None and not ring.accept_plaintext:
        raise PlaintextRefusedError(where)
    return stored


def seal_typed(kind: str, data: bytes, *where: str) -> tuple[str, bytes]:
    """A serialised value (its serialisation type and bytes) as kept at ``where``: sealed,
    its type marked so (:data:`SEALED_KIND`), when there are keys; else as it is."""
    sealed = seal_bytes(data, *where)
    return (kind, data) if sealed is None else (kind + SEALED_KIND, sealed)


def open_typed(kind: str, data: Any, *where: str) -> tuple[str, bytes]:
    """What ``seal_typed`` kept at ``where``: the value's own type and bytes, opened."""
    sealed = kind.endswith(SEALED_KIND)
    return kind.removesuffix(SEALED_KIND), open_bytes(bytes(data), sealed, *where)


def resealed_bytes(stored: bytes, sealed: bool, *where: str) -> bytes | None:
    """``resealed_text`` for what ``seal_bytes`` keeps: ``None`` when it is sealed with the
    current key already (once opened with it)."""
    ring = keyring()
    if ring is None:
        return None
    if sealed:
        text = stored.decode()
        opened = ring.open_bytes(text, where)
        return None if sealed_key(text) == ring.current else ring.seal_bytes(opened, where).encode()
    return ring.seal_bytes(stored, where).encode()


def resealed_text(stored: str, *where: str) -> str | None:
    """``stored`` sealed with the current key (a plain value is sealed, whatever
    ``ENCRYPTION_ACCEPT_PLAINTEXT`` says), or ``None`` when it is already: once it has been
    opened with that key (a wrong key under the current id raises, rather than passing
    every value as done)."""
    ring = keyring()
    if ring is None:
        return None
    if sealed_key(stored) == ring.current:
        ring.open(stored, where)
        return None
    return ring.seal(ring.open(stored, where) if is_sealed(stored) else stored, where)


def resealed_json(stored: Any, *where: str) -> Any:
    """``resealed_text`` for a JSON column's value: ``None`` when it is sealed already."""
    ring = keyring()
    if ring is None:
        return None
    if sealed_key(stored) is not None:
        return _only_if_changed(resealed_text(stored[SEALED], *where))
    return seal_json(stored, *where)


def _only_if_changed(sealed: str | None) -> Any:
    return None if sealed is None else {SEALED: sealed}


# -- where each kind of value is kept: what its sealed form is bound to --------------------


def session_place(session_id: str, version: int | None) -> tuple[str, ...]:
    """Where a session's blob is kept: its id and version (``None``: a store that keeps the
    version inside the blob, whose sealed blob is bound to the id alone)."""
    return ("session", session_id) if version is None else ("session", session_id, str(version))


def cache_place(namespace: str, scope: str, key: str) -> tuple[str, ...]:
    """Where a cached answer's question and reply are kept: its namespace, scope and key."""
    return ("cache", namespace, scope, key)


def event_place(session_id: str, seq: int) -> tuple[str, ...]:
    """Where a log entry's payload is kept: what a sealed one is bound to."""
    return ("event", session_id, str(seq))


def outbox_place(session_id: str, key: str, column: str = "text") -> tuple[str, ...]:
    """Where an outbox message's text (or payload) is kept: what a sealed one is bound to."""
    return (f"outbox.{column}", session_id, key)


def message_place(conversation_id: str, position: int) -> tuple[str, ...]:
    """Where a conversation's message is kept: what a sealed one is bound to."""
    return ("conversation.message", conversation_id, str(position))


def pending_place(conversation_id: str) -> tuple[str, ...]:
    """Where a conversation's pending turn is kept."""
    return ("conversation.pending", conversation_id)


def graph_place(what: str, thread_id: str, namespace: str, *parts: str) -> tuple[str, ...]:
    """Where a LangGraph thread's checkpoint, channel value or pending write is kept (``what``
    says which; ``parts``: its checkpoint, channel and version, or task and index)."""
    return (f"graph.{what}", thread_id, namespace, *parts)


def snapshot_place(key: str) -> tuple[str, ...]:
    """Where a snapshot is kept: what a sealed one is bound to (its key)."""
    return ("snapshot", key)


def state_place(row: dict[str, Any]) -> tuple[str, ...]:
    """Where an orchestrator checkpoint's state is kept: its orchestrator, session and turn."""
    return ("checkpoint", row["orchestrator_name"], row["session_id"], str(row["turn_index"]))


def agent_state_place(scope: str, app_name: str, user_id: str, session_id: str) -> tuple[str, ...]:
    """Where an ADK state row is kept: its scope and the app, user and session it belongs to."""
    return ("agent.state", scope, app_name, user_id, session_id)


def memory_place(namespace: str, key: str) -> tuple[str, ...]:
    """Where a LangGraph memory item's value is kept: its namespace and key."""
    return ("memory", namespace, key)
