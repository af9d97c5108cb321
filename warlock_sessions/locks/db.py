"""DatabaseLock: a ``SessionLockRow`` per held key, on any Django database."""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connections, router, transaction
from django.utils import timezone

from ..backends.connections import give_back_connection
from ..models import SessionLockRow
from .base import LeasedLock


class DatabaseLock(LeasedLock):
    """A row ``(key, token, expires_at)`` in ``warlock_session_locks``: taken by inserting it,
    or by taking over a row whose lease ran out; renewed and released only by the token that
    holds it (a stale holder's release deletes nothing). Runs in autocommit: a lock row
    inside a transaction would be invisible to the other processes until it commits."""

    def __init__(
        self, using: str | None = None, *, ttl: float = 30.0, timeout: float | None = None
    ) -> None:
        super().__init__(ttl=ttl, timeout=timeout)
        self.using: str = using or router.db_for_write(SessionLockRow) or "default"

    def _try_acquire(self, key: str, token: str) -> bool:
        if connections[self.using].in_atomic_block:
            raise ImproperlyConfigured(
                f"DatabaseLock on {self.using!r} inside a transaction: the other processes "
                "would not see the lock until it commits; use it outside transaction.atomic() "
                "or on a database alias of its own"
            )
        now = timezone.now()
        expires = now + timedelta(seconds=self.ttl)
        try:
            with transaction.atomic(using=self.using):
                SessionLockRow.objects.using(self.using).create(
                    key=key, token=token, expires_at=expires
                )
            return True
        except IntegrityError:
            taken = SessionLockRow.objects.using(self.using).filter(key=key, expires_at__lt=now)
            if taken.update(token=token, expires_at=expires) == 1:
                return True
        # Waiting: the pooled connection goes back between two tries, for the holder to use.
        give_back_connection(self.using)
        return False

    def _renew(self, key: str, token: str) -> bool:
        # In the renewing thread, on a connection given back after each renewal: it is idle
        # for a third of the lease in between, and the thread ends without Django's tidying.
        try:
            expires = timezone.now() + timedelta(seconds=self.ttl)
            rows = SessionLockRow.objects.using(self.using).filter(key=key, token=token)
            return rows.update(expires_at=expires) == 1
        finally:
            connections[self.using].close()

    def _release(self, key: str, token: str) -> None:
        SessionLockRow.objects.using(self.using).filter(key=key, token=token).delete()
