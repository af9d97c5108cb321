"""How many sessions and conversations each owner has: one counter row per owner, kind and
tenant, so a quota (``MAX_SESSIONS_PER_OWNER``, ``MAX_CONVERSATIONS_PER_OWNER``) is decided on
one row. Counting the owner's rows instead read every shard of a distributed database, and
counted then inserted it let 12 requests at once through a quota of 5.

The counter moves with the rows, in their transaction: up when they are inserted
(``Owned.save``, ``OwnedQuerySet.bulk_create``), after which a claim checks its owner's limit
(:func:`check_quota`; the counter's lock, held to the end of the transaction, makes that exact
however many claims race), back down when they are deleted (``OwnedQuerySet.delete`` and
``Owned.delete``, :func:`delete_counted`: still by the rows' own filter, so a session's owner
row is deleted on its shard), and over to the account when a visitor's rows
are adopted at login, or to a tenant given the rows of none (``OwnedQuerySet.update``,
:func:`update_counted`), and back before a user's rows are deleted with the user (a cascade:
``apps``). Deletes and updates go owner by owner, each moving what it did: two deletes of one
row at once give back one."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import connections, models, router, transaction
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
    """``count`` rows more on ``key``, in one statement (an upsert), inside the insert's
    transaction. It locks the counter to the transaction's end, so claims of one owner that
    race are counted one after the other."""
    if key is None or not count:
        return
    connection = connections[using]
    quote = connection.ops.quote_name
    table, column = quote(OwnerTally._meta.db_table), quote("count")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({quote('key')}, {column}) VALUES (%s, %s) "
            f"ON CONFLICT ({quote('key')}) DO UPDATE SET {column} = {table}.{column} + "
            f"EXCLUDED.{column}",
            [key, count],
        )


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


def written_on(rows: Any) -> str:
    """The database ``rows`` (a queryset) are written on: its own, else the router's for
    writes (a queryset's ``db`` is the one it reads, a replica's maybe)."""
    return str(rows._db or router.db_for_write(rows.model))


def owners_of(rows: Any) -> dict[tuple[Any, str, str], list[Any]]:
    """The keys of ``rows`` by owner (their user's id, visitor key and tenant), the owners
    in the order of their counters' keys: two writers lock counters in one order."""
    grouped: dict[tuple[Any, str, str], list[Any]] = defaultdict(list)
    for pk, *owner in rows.values_list("pk", *OWNER_FIELDS).order_by():
        grouped[(owner[0], owner[1], owner[2])].append(pk)
    kind = rows.model.counted_as
    return dict(sorted(grouped.items(), key=lambda item: tally_key(kind, *item[0]) or ""))


def delete_counted(rows: Any, delete: Callable[[Any], tuple[int, dict[str, int]]]) -> Any:
    """Delete ``rows`` (a queryset of a counted model) with ``delete`` (Django's own), owner
    by owner, each giving back what that delete took: two deletes of one row give back one,
    and a row whose owner changed meanwhile (a login adopting it) is read again."""
    using, kind, label = written_on(rows), rows.model.counted_as, rows.model._meta.label
    total: Counter[str] = Counter()
    while owners := owners_of(rows):
        for (user_id, visitor, tenant), keys in owners.items():
            theirs = rows.filter(pk__in=keys, user_id=user_id, anonymous_key=visitor, tenant=tenant)
            with transaction.atomic(using=using):
                _, deleted = delete(theirs)
                give_back(tally_key(kind, user_id, visitor, tenant), using, deleted.get(label, 0))
            total.update(deleted)
        rows = rows.filter(pk__in=[key for keys in owners.values() for key in keys])
    return sum(total.values()), dict(total)


def update_counted(rows: Any, changes: dict[str, Any], update: Callable[..., int]) -> int:
    """``update(theirs, **changes)`` of ``rows`` (a queryset of a counted model) owner by
    owner, when ``changes`` gives them another owner (``user``, ``anonymous_key``,
    ``tenant``: a visitor's rows adopted at login, rows given to a tenant): each moves the
    count of the rows it changed from the old owner's counter to the new one's. A row whose
    owner changed meanwhile is left as it is. How many rows were changed."""
    using, kind = written_on(rows), rows.model.counted_as
    changed = 0
    for (user_id, visitor, tenant), keys in owners_of(rows).items():
        theirs = rows.filter(pk__in=keys, user_id=user_id, anonymous_key=visitor, tenant=tenant)
        now = {"user_id": user_id, "anonymous_key": visitor, "tenant": tenant}
        for field, value in changes.items():
            if field in ("user", "user_id"):
                now["user_id"] = getattr(value, "pk", value)
            elif field in now:
                now[field] = value
        with transaction.atomic(using=using):
            count = update(theirs, **changes)
            give_back(tally_key(kind, user_id, visitor, tenant), using, count)
            count_more(tally_key(kind, *now.values()), using, count)
        changed += count
    return changed


def save_counted(row: Owned, save: Callable[[], None], options: dict[str, Any]) -> None:
    """``save()`` of ``row`` (``Owned.save``, ``options`` its keyword arguments): an insert
    counted on its owner's counter, an update that gives it another owner moved between
    theirs (the row as stored is read first, unless ``update_fields`` leaves its owner be)."""
    fields = options.get("update_fields")
    if fields is not None and not OWNER_CHANGES & set(fields):
        save()
        return
    using = options.get("using") or router.db_for_write(type(row), instance=row)
    with transaction.atomic(using=using):
        stored = None
        if row.pk is not None and not options.get("force_insert"):
            rows = type(row)._base_manager.using(using).filter(pk=row.pk)
            stored = rows.values_list(*OWNER_FIELDS).first()
        save()
        if stored is None:
            count_more(key_of(row), using)
        elif tuple(stored) != (row.user_id, row.anonymous_key, row.tenant):
            give_back(tally_key(row.counted_as or "", *stored), using)
            count_more(key_of(row), using)


#: The columns that say whose a row is, and so which counter it counts on.
OWNER_FIELDS = ("user_id", "anonymous_key", "tenant")
#: The fields an update may change them by.
OWNER_CHANGES = frozenset({"user", "user_id", "anonymous_key", "tenant"})


def recount(model_rows: dict[str, Any], using: str) -> int:
    """Set every counter to the rows there are (``warlock_recount_quotas``: after rows were
    written or deleted by hand, with raw SQL, or restored): how many it corrected.
    ``model_rows`` maps each kind to its model's rows. Each owner's counter is locked before
    their rows are counted, so a claim meanwhile waits and then counts on the right number;
    an owner whose rows are all gone loses their counter."""
    owners: dict[str, tuple[Any, tuple[Any, str, str]]] = {}
    for kind, rows in model_rows.items():
        for owner in rows.using(using).values_list(*OWNER_FIELDS).distinct().order_by():
            key = tally_key(kind, *owner)
            if key is not None:
                owners[key] = (rows, owner)
    tallies = OwnerTally.objects.using(using)
    corrected = 0
    for key in sorted(set(owners) | set(tallies.values_list("key", flat=True))):
        with transaction.atomic(using=using):
            stored = tallies.select_for_update().filter(key=key).values_list("count", flat=True)
            count = stored.first()
            real = 0
            if key in owners:
                rows, (user_id, visitor, tenant) = owners[key]
                theirs = {"user_id": user_id, "anonymous_key": visitor, "tenant": tenant}
                real = rows.using(using).filter(**theirs).count()
            if (count or 0) == real and (count is None) == (real == 0):
                continue
            corrected += 1
            tallies.filter(key=key).delete()
            if real:
                tallies.create(key=key, count=real)
    return corrected
