"""How many sessions and conversations each owner has: one counter row per owner, kind and
tenant, so a quota (``MAX_SESSIONS_PER_OWNER``, ``MAX_CONVERSATIONS_PER_OWNER``) is decided on
one row. Counting the owner's rows instead read every shard of a distributed database, and
counted then inserted it let 12 requests at once through a quota of 5.

The counter moves with the rows, in their transaction: up when they are inserted
(``Owned.save``, ``OwnedQuerySet.bulk_create``), after which a claim checks its owner's limit
(:func:`check_quota`; the counter's lock, held to the end of the transaction, makes that exact
however many claims race), back down when they are deleted (``OwnedQuerySet.delete`` and
``Owned.delete``: a queryset's and an instance's deletes, still by the rows' own filter, so a
session's owner row is deleted on its shard), and over to the account when a visitor's rows
are adopted at login (:func:`move_tallies`). A user's rows deleted with the user (a cascade)
leave the user's counter behind, unread: no account gets a deleted one's id again."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, models, transaction
from django.db.models import F
from django.utils.translation import gettext_lazy as _

from ..errors import QuotaExceededError

if TYPE_CHECKING:
    from . import Owned


class OwnerTally(models.Model):
    """How many rows of one kind an owner has in one tenant. ``key`` (:func:`tally_key`) is a
    digest, so no counter names its owner, and the one column it is spread by."""

    key = models.CharField(_("key"), max_length=96, primary_key=True)
    count = models.PositiveIntegerField(_("count"), default=0)

    class Meta:
        db_table = "warlock_owner_tallies"
        verbose_name = _("owner tally")
        verbose_name_plural = _("owner tallies")

    def __str__(self) -> str:
        return f"{self.key}: {self.count}"


def tally_key(kind: str, user_id: Any, anonymous_key: str, tenant: str) -> str | None:
    """The counter of an owner (a user's id, else a visitor's key) for ``kind`` in
    ``tenant``; ``None`` for a row nobody owns (server code's), which no quota counts."""
    if user_id is None and not anonymous_key:
        return None
    who = f"user:{user_id}" if user_id is not None else f"visitor:{anonymous_key}"
    digest = hashlib.sha256(f"{tenant}\0{who}".encode()).hexdigest()[:64]
    return f"{kind}:{digest}"


def key_of(row: Owned) -> str | None:
    """The counter ``row`` counts in."""
    return tally_key(row.counted_as or "", row.user_id, row.anonymous_key, row.tenant)


def count_more(key: str | None, using: str, count: int = 1) -> None:
    """``count`` rows more on ``key`` (``Owned.save`` and ``OwnedQuerySet.bulk_create`` call
    it, in the insert's transaction). The update locks the counter to the transaction's end,
    so claims of one owner that race are counted one after the other."""
    if key is None or not count:
        return
    tallies = OwnerTally.objects.using(using)
    if tallies.filter(key=key).update(count=F("count") + count):
        return
    try:
        with transaction.atomic(using=using):
            tallies.create(key=key, count=count)
    except IntegrityError:  # another claim made the counter meanwhile: count on it
        tallies.filter(key=key).update(count=F("count") + count)


def check_quota(row: Owned, limit: int | None, using: str) -> None:
    """``QuotaExceededError`` if ``row``, just inserted (and counted) in the caller's
    transaction, is one more than its owner's ``limit`` (``None``: no limit): raised inside
    the transaction, it takes the row and its count back."""
    key = key_of(row)
    if limit is None or key is None:
        return
    count = OwnerTally.objects.using(using).filter(key=key).values_list("count", flat=True)
    if (count.first() or 0) > limit:
        raise QuotaExceededError(row.counted_as or "", limit)


def refuse_uncounted_conflicts(model: type[models.Model], options: dict[str, Any]) -> None:
    """``TypeError`` for a bulk insert of counted rows that may skip some: which it skipped
    is not known, so their count could not be."""
    if options.get("ignore_conflicts") or options.get("update_conflicts"):
        raise TypeError(
            f"{model.__name__} rows are counted against their owner's quota: "
            "bulk_create them without ignore_conflicts or update_conflicts"
        )


def give_back(key: str | None, using: str, count: int = 1) -> None:
    """``count`` rows fewer on ``key``; a counter back at zero goes, so an owner whose rows
    are all gone (an erased person) leaves nothing behind. (A claim that counts on it
    meanwhile waits for the update's lock, then finds it or makes it anew.)"""
    if key is None or not count:
        return
    tallies = OwnerTally.objects.using(using).filter(key=key)
    tallies.update(
        count=models.Case(
            models.When(count__gt=count, then=F("count") - count), default=models.Value(0)
        )
    )
    tallies.filter(count=0).delete()


def move_tallies(model: type[Owned], rows: Any, user_id: Any) -> None:
    """Before ``rows`` (a queryset of ``model``, owned by visitors) become ``user_id``'s: their
    counts move from each visitor's counter to the user's (in the same transaction)."""
    kind, using = model.counted_as or "", rows.db
    moved = rows.values_list("anonymous_key", "tenant").annotate(n=models.Count("pk"))
    for visitor, tenant, count in moved.order_by():
        give_back(tally_key(kind, None, visitor, tenant), using, count)
        count_more(tally_key(kind, user_id, "", tenant), using, count)


def give_back_rows(rows: Any) -> None:
    """Before ``rows`` (a queryset of an owned model) are deleted: their counts given back."""
    kind = rows.model.counted_as
    owners = rows.values_list("user_id", "anonymous_key", "tenant").annotate(n=models.Count("pk"))
    for user_id, visitor, tenant, count in owners.order_by():
        give_back(tally_key(kind, user_id, visitor, tenant), rows.db, count)
