"""The session Store contract that every backend implements, and the checks they share.

Two methods, one rule (docs/stores.md): ``load(id)`` returns the checked session or ``None``;
``save(session, expected_version)`` is one atomic check-and-write that inserts when
``expected_version`` is 0 (an existing row is a conflict) and otherwise writes only when the
stored version is exactly ``expected_version``. A failed check raises
:class:`~warlock_sessions.errors.SessionConflictError` and writes nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..conf import Expected, expect
from ..encryption import open_text, seal_text, session_place
from ..engine.session import (
    MAX_SESSION_ID_LENGTH,
    Session,
    decode_session,
    encode_session,
    text_problem,
)
from ..errors import SessionConflictError


def check_session_id(session_id: object) -> str:
    """Refuse an id no backend can key a session by, with a message that says why."""
    if not isinstance(session_id, str):
        raise TypeError(f"a session id is text, not {type(session_id).__name__}")
    if not session_id:
        raise ValueError("a session id cannot be empty")
    problem = text_problem(session_id)
    if problem:
        raise ValueError(f"session id {session_id!r:.80} {problem}")
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise ValueError(
            f"session id is {len(session_id)} characters long; the limit is {MAX_SESSION_ID_LENGTH}"
        )
    return session_id


def check_expected_version(expected_version: object) -> int:
    if type(expected_version) is not int or expected_version < 0:
        raise ValueError(
            f"expected_version must be a whole number >= 0 (0 inserts), not {expected_version!r}"
        )
    return expected_version


def session_id_of(session: object) -> str:
    if not isinstance(session, dict):
        raise TypeError(f"a session is a dict, not {type(session).__name__}")
    return check_session_id(session.get("id"))


def check_stored_version(session_id: str, expected: int, actual: int | None) -> None:
    """The save rule for stores that read the stored version under their own lock.

    Expected 0 means "no row yet"; any other number must be the stored version exactly.
    """
    if actual != (expected or None):
        raise SessionConflictError(session_id, expected, actual)


def saved_copy(session: Session, version: int) -> Session:
    """What ``save`` returns: the caller's session with the stored version, argument untouched.

    The copy is shallow; the store never mutates either object.
    """
    return {**session, "version": version}


class Store(ABC):
    """A versioned session store.

    ``load``, ``save`` and ``delete`` apply the contract's checks once, here: the id, the
    expected version, the blob's encoding (``encode_session``), and the copy ``save`` returns.
    A backend implements three small hooks over checked values; ``_write`` must check the
    stored version and write in one atomic step (``check_stored_version`` states the rule).
    """

    #: Whether the store keeps a session's version beside its blob, so a sealed blob
    #: (``ENCRYPTION_KEYS``) is bound to its version as well as its id.
    binds_version = True

    def load(self, session_id: str) -> Session | None:
        """The stored session (checked with ``assert_session``), or ``None``. Never migrates."""
        session_id = check_session_id(session_id)
        stored = self._read(session_id)
        if stored is None:
            return None
        text, version = stored
        return self.decoded(text, session_id, version)

    @staticmethod
    def decoded(text: str | bytes, session_id: str, version: int | None) -> Session:
        """A stored blob as a checked session, opened first if it was sealed."""
        if isinstance(text, bytes):
            text = text.decode()
        where = session_place(session_id, version)
        return decode_session(open_text(text, *where), session_id, version)

    def save(self, session: Session, expected_version: int) -> Session:
        """Store ``session`` as version ``expected_version + 1`` if the check holds.

        Raises ``SessionConflictError`` (nothing written) when it does not, and
        ``InvalidSessionError`` when ``session`` is not a storable v4 blob.
        """
        expected, text = self.checked(session, expected_version)
        self._write(session, expected, text)
        return saved_copy(session, expected + 1)

    def checked(self, session: Session, expected_version: int) -> tuple[int, str]:
        """The checks every save makes: the id, the expected version, and the blob encoded as
        it will be stored (``InvalidSessionError`` if it cannot be), sealed with
        ``ENCRYPTION_KEYS``."""
        session_id = session_id_of(session)
        expected = check_expected_version(expected_version)
        text = encode_session(session, expected + 1)
        version = expected + 1 if self.binds_version else None
        return expected, seal_text(text, *session_place(session_id, version))

    def delete(self, session_id: str) -> bool:
        """Remove the session; ``True`` if there was one."""
        return self._remove(check_session_id(session_id))

    @abstractmethod
    def _read(self, session_id: str) -> tuple[str | bytes, int | None] | None:
        """The stored JSON text and its version (``None`` when the text carries it), or
        ``None`` when there is no such session."""

    @abstractmethod
    def _write(self, session: Session, expected: int, text: str) -> None:
        """Store ``text`` (``session`` encoded, its id checked) as version ``expected + 1`` if
        the stored version is ``expected`` (0: none is stored), atomically; else raise
        ``SessionConflictError`` and write nothing."""

    @abstractmethod
    def _remove(self, session_id: str) -> bool:
        """Remove the session; ``True`` if there was one."""


expect("STORE", Expected(Store, "a warlock_sessions Store class", "warlock_sessions.E002"))
