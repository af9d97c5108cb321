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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, connections, models, router, transaction
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
    if key is not None and count:
        _add(key, using, count)


def _add(key: str, using: str, count: int) -> int:
    """Add ``count`` to ``key``'s counter (made if there is none), locking it to the
    transaction's end: its count now. ``count`` 0 only locks it."""
    connection = connections[using]
    quote = connection.ops.quote_name
    table, column = quote(OwnerTally._meta.db_table), quote("count")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({quote('key')}, {column}) VALUES (%s, %s) "
            f"ON CONFLICT ({quote('key')}) DO UPDATE SET {column} = {table}.{column} + "
            f"EXCLUDED.{column} RETURNING {column}",
            [key, count],
        )
        return int(cursor.fetchone()[0])


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


def create_counted(
    model: type[Owned], using: str, limit: int | None, **fields: Any
) -> Owned | None:
    """A new row of ``model`` (a counted one) and its count, or neither: ``None`` when a row
    of its key exists already (made meanwhile, by this owner or another),
    ``QuotaExceededError`` when its owner has ``limit`` rows already."""
    try:
        with transaction.atomic(using=using):
            row = model._default_manager.using(using).create(**fields)
            check_quota(row, limit, using)
            return row
    except IntegrityError:
        return None


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


def by_owner(rows: Any) -> Iterator[tuple[dict[str, Any], list[Any], Any]]:
    """``rows`` (a queryset of a counted model) owner by owner, in batches of at most
    :data:`BATCH` keys: the owner (``OWNER_FIELDS``), the batch's keys, and the batch's rows
    still that owner's. Owners come in the order of their counters' keys, so two writers
    lock counters in one order."""
    grouped: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for pk, *owner in rows.values_list("pk", *OWNER_FIELDS).order_by():
        grouped[tuple(owner)].append(pk)
    kind = rows.model.counted_as
    for owner in sorted(grouped, key=lambda owner: tally_key(kind, *owner) or ""):
        keys, theirs = grouped[owner], dict(zip(OWNER_FIELDS, owner, strict=True))
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            yield theirs, batch, rows.filter(pk__in=batch, **theirs)


def counter_of(rows: Any, owner: dict[str, Any]) -> str | None:
    """The counter of ``owner`` (``OWNER_FIELDS``) for the kind of ``rows``."""
    return tally_key(rows.model.counted_as, *(owner[field] for field in OWNER_FIELDS))


def delete_counted(rows: Any, delete: Callable[[Any], tuple[int, dict[str, int]]]) -> Any:
    """Delete ``rows`` (a queryset of a counted model) with ``delete`` (Django's own) in one
    transaction on the database they are written on, owner by owner, each delete giving back
    what it took: two deletes of one row at once give back one. A row a delete missed
    because its owner changed meanwhile (a login adopting it) is read again, at most
    :data:`PASSES` times."""
    rows = rows.using(written_on(rows))
    using, label = rows.db, rows.model._meta.label
    total: Counter[str] = Counter()
    pending = rows
    with transaction.atomic(using=using):
        for _ in range(PASSES):
            missed: list[Any] = []
            for owner, keys, theirs in by_owner(pending):
                _, deleted = delete(theirs)
                count = deleted.get(label, 0)
                give_back(counter_of(rows, owner), using, count)
                total.update(deleted)
                missed += keys if count < len(keys) else []
            if not missed:
                break
            pending = rows.filter(pk__in=missed)
    return sum(total.values()), dict(total)


def update_counted(rows: Any, changes: dict[str, Any], update: Callable[..., int]) -> int:
    """``update(theirs, **changes)`` of ``rows`` (a queryset of a counted model) owner by
    owner, in one transaction, when ``changes`` gives them another owner (``user``,
    ``anonymous_key``, ``tenant``, each a value: a visitor's rows adopted at login, rows given
    to a tenant): each moves the count of the rows it changed from the old owner's counter to
    the new one's. A row whose owner changed meanwhile is left as it is. How many rows were
    changed."""
    if any(hasattr(value, "resolve_expression") for value in changes.values()):
        raise TypeError(
            f"{rows.model.__name__} rows are counted against their owner's quota: give them "
            "another owner by value, not by an expression"
        )
    rows = rows.using(written_on(rows))
    new = {
        ("user_id" if field == "user" else field): getattr(value, "pk", value)
        for field, value in changes.items()
    }
    changed = 0
    with transaction.atomic(using=rows.db):
        for owner, _keys, theirs in by_owner(rows):
            count = update(theirs, **changes)
            moves = [(counter_of(rows, owner), -count), (counter_of(rows, owner | new), count)]
            for key, by in sorted(moves, key=lambda move: move[0] or ""):  # one order
                (count_more if by > 0 else give_back)(key, rows.db, abs(by))
            changed += count
    return changed


def give_back_rows(rows: Any) -> None:
    """The counts of ``rows`` (a queryset of a counted model) given back, ahead of a delete
    that will not ask the rows (a cascade's: a user's deletion, ``apps``)."""
    rows = rows.using(written_on(rows))
    for owner, keys, _rows in by_owner(rows):
        give_back(counter_of(rows, owner), rows.db, len(keys))


#: How many keys one delete or update names.
BATCH = 500
#: How often a delete reads again what its owner changed under it.
PASSES = 3


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
            rows = type(row)._base_manager.using(using).filter(pk=row.pk).select_for_update()
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
    ``model_rows`` maps each kind to its model's rows. Each owner's counter is locked (made,
    if need be) before their rows are counted, so a claim meanwhile waits for it and then
    counts on the right number. Counters whose owner has no rows go last, in one transaction
    that locks them all and then looks again for their owners: one whose owner made a row
    meanwhile is kept."""
    owners = _owners_by_key(model_rows, using)
    tallies = OwnerTally.objects.using(using)
    corrected = 0
    for key, (rows, theirs) in sorted(owners.items()):
        with transaction.atomic(using=using):
            count = _add(key, using, 0)  # locked, made at 0 if need be
            real = rows.using(using).filter(**theirs).count()
            if count != real:
                corrected += 1
            if real:
                tallies.filter(key=key).update(count=real)
            else:  # their rows went meanwhile
                tallies.filter(key=key).delete()
    with transaction.atomic(using=using):
        stray = sorted(set(tallies.values_list("key", flat=True)) - set(owners))
        for key in stray:
            _add(key, using, 0)  # locked
        gone = [key for key in stray if key not in _owners_by_key(model_rows, using)]
        corrected += tallies.filter(key__in=gone).delete()[0]
    return corrected


def _owners_by_key(model_rows: dict[str, Any], using: str) -> dict[str, tuple[Any, dict[str, Any]]]:
    owners = {}
    for kind, rows in model_rows.items():
        for user_id, visitor, tenant in (
            rows.using(using).values_list(*OWNER_FIELDS).order_by().distinct()
        ):
            key = tally_key(kind, user_id, visitor, tenant)
            if key is not None:
                theirs = {"user_id": user_id, "anonymous_key": visitor, "tenant": tenant}
                owners[key] = (rows, theirs)
    return owners
