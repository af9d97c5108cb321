"""``WarlockStore``: LangGraph's long-term memory on the app's tables, held to LangGraph's own
``InMemoryStore`` (the same operations on both give the same answers), on SQLite and
PostgreSQL with the privacy settings off and on; then TTLs, tenants, owners and erasure."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("langgraph.store.memory")
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from tests.frameworks.conftest import ON_POSTGRES, run
from warlock_sessions.erasure import Person, erase
from warlock_sessions.frameworks.langgraph import WarlockStore
from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import MemoryItem
from warlock_sessions.providers import OfflineEmbedder
from warlock_sessions.tenancy import tenant_scope

EMBEDDER = OfflineEmbedder(64)

MEMORIES = [
    (("users", "ana", "food"), "pizza", {"text": "Ana likes pizza with olives", "score": 5}),
    (("users", "ana", "food"), "wine", {"text": "Ana drinks red wine", "score": 3}),
    (("users", "ana", "places"), "home", {"text": "Ana lives in Lisbon", "score": 4}),
    (("users", "bo", "food"), "sushi", {"text": "Bo loves sushi", "score": 1, "tags": ["a"]}),
    (("users", "bo", "food", "old"), "soup", {"text": "Bo hated soup", "meta": {"v": 2}}),
    (("teams", "red"), "motto", {"text": "Red team pizza friday", "score": 4.5}),
]


def embed_texts(texts: list[str]) -> list[list[float]]:
    return [EMBEDDER.embed(text) for text in texts]


def filled(store: BaseStore) -> BaseStore:
    for namespace, key, value in MEMORIES:
        store.put(namespace, key, value)
    return store


def seen(found: Any) -> Any:
    """What a store answered, without the times each store stamps for itself."""
    if isinstance(found, list):
        return [seen(item) for item in found]
    if found is None or isinstance(found, tuple):
        return found
    score = getattr(found, "score", None)
    return (found.namespace, found.key, found.value, None if score is None else round(score, 4))


def both(alias: str, **options: Any) -> tuple[BaseStore, BaseStore]:
    index = {"dims": 64, "embed": embed_texts, "fields": ["text"]} if options else None
    ours = WarlockStore(using=alias, index={**index, "embed": EMBEDDER} if index else None)
    return filled(InMemoryStore(index=index)), filled(ours)  # type: ignore[arg-type]


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("get", {"namespace": ("users", "ana", "food"), "key": "pizza"}),
    ("get", {"namespace": ("users", "ana", "food"), "key": "nothing"}),
    ("get", {"namespace": ("users",), "key": "pizza"}),
    ("search", {"namespace_prefix": ("users", "ana"), "filter": {"score": {"$gte": 4}}}),
    ("search", {"namespace_prefix": ("users", "ana"), "filter": {"score": {"$lt": 4}}}),
    ("search", {"namespace_prefix": ("teams",), "filter": {"score": {"$gt": 4, "$lte": 4.5}}}),
    ("search", {"namespace_prefix": (), "filter": {"score": {"$ne": 5}}, "limit": 50}),
    ("search", {"namespace_prefix": ("users", "bo"), "filter": {"tags": ["a"]}}),
    ("search", {"namespace_prefix": ("users", "bo"), "filter": {"meta": {"v": 2}}}),
    ("search", {"namespace_prefix": ("users", "bo"), "filter": {"meta": {"v": {"$gt": 1}}}}),
    ("search", {"namespace_prefix": ("users", "an"), "filter": {"score": 5}}),  # not a label
    ("list_namespaces", {}),
    ("list_namespaces", {"prefix": ("users",), "max_depth": 2}),
    ("list_namespaces", {"suffix": ("food",)}),
    ("list_namespaces", {"prefix": ("users", "*", "food")}),
    ("list_namespaces", {"prefix": ("users",), "limit": 2, "offset": 1}),
]


def asked(store: BaseStore, what: str, arguments: dict[str, Any]) -> Any:
    options = dict(arguments)
    if what == "search":  # positional only
        return seen(store.search(options.pop("namespace_prefix"), **options))
    return seen(getattr(store, what)(**options))


@pytest.mark.parametrize(("what", "arguments"), QUERIES, ids=[json.dumps(q[1]) for q in QUERIES])
def test_it_answers_as_langgraphs_own_store(
    alias: str, privacy: str, what: str, arguments: dict[str, Any]
) -> None:
    reference, ours = both(alias)
    expected, found = asked(reference, what, arguments), asked(ours, what, arguments)
    if what == "search":  # the reference keeps insertion order; ours the newest first
        expected, found = sorted(expected, key=str), sorted(found, key=str)
    assert found == expected


def test_semantic_search_ranks_exactly_as_the_reference(alias: str, privacy: str) -> None:
    reference, ours = both(alias, index=True)
    for query, prefix in (("pizza", ("users",)), ("where does Ana live", ()), ("sushi", ())):
        arguments = {"namespace_prefix": prefix, "query": query}
        expected, found = asked(reference, "search", arguments), asked(ours, "search", arguments)
        assert [item[3] for item in found] == [item[3] for item in expected]  # best first
        assert sorted(found, key=str) == sorted(expected, key=str)  # ties in any order
    best = ours.search(("users",), query="pizza olives", limit=1)
    assert [item.key for item in best] == ["pizza"] and best[0].score is not None
    # An item put without indexing is found after the ranked ones, without a score.
    ours.put(("users", "ana", "food"), "plain", {"text": "pizza pizza"}, index=False)
    ranked = ours.search(("users", "ana"), query="pizza", limit=10)
    assert ranked[-1].key == "plain" and ranked[-1].score is None


def test_puts_replace_and_delete_and_the_async_twins_agree(alias: str, privacy: str) -> None:
    store = WarlockStore(using=alias)
    store.put(("notes",), "a", {"text": "first"})
    first = store.get(("notes",), "a")
    store.put(("notes",), "a", {"text": "second"})
    second = store.get(("notes",), "a")
    assert second is not None and first is not None
    assert second.value == {"text": "second"} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    run(store.aput(("notes",), "b", {"text": "async"}))
    assert run(store.aget(("notes",), "b")).value == {"text": "async"}
    assert [item.key for item in run(store.asearch(("notes",)))] == ["b", "a"]
    assert run(store.alist_namespaces()) == [("notes",)]
    store.delete(("notes",), "a")
    run(store.adelete(("notes",), "b"))
    assert store.search(("notes",)) == [] and MemoryItem.objects.using(alias).count() == 0
    with pytest.raises(InvalidNamespaceError):
        store.put(("no.dots",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {})


def test_values_are_redacted_and_sealed_at_rest(alias: str) -> None:
    from tests.frameworks.conftest import PRIVACY

    settings = {key: PRIVACY["private"][key] for key in ("ENCRYPTION_KEYS", "REDACT")}
    with override_settings(WARLOCK_SESSIONS=settings):
        store = WarlockStore(using=alias)
        store.put(("users", "ana"), "pay", {"card": "4539 1488 0343 6467", "likes": "olives"})
        stored = json.dumps(list(MemoryItem.objects.using(alias).values_list("value", flat=True)))
        assert "olives" not in stored and "4539" not in stored
        item = store.get(("users", "ana"), "pay")
        assert item is not None and item.value == {"card": "[card]", "likes": "olives"}


def test_items_expire_refresh_on_read_and_are_swept(alias: str) -> None:
    store = WarlockStore(using=alias, ttl={"default_ttl": 10, "omit_expired": True})
    store.put(("s",), "short", {"v": 1}, ttl=1)
    store.put(("s",), "default", {"v": 2})
    store.put(("s",), "forever", {"v": 3}, ttl=None)
    rows = {row.key: row for row in MemoryItem.objects.using(alias).all()}
    assert (rows["short"].ttl_minutes, rows["default"].ttl_minutes) == (1, 10)
    assert rows["forever"].expires_at is None
    MemoryItem.objects.using(alias).filter(key="short").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert store.get(("s",), "short") is None  # omitted once expired
    before = MemoryItem.objects.using(alias).get(key="default").expires_at
    store.get(("s",), "default")  # a read pushes the expiry on
    assert MemoryItem.objects.using(alias).get(key="default").expires_at > before
    assert store.sweep_ttl() == 1
    MemoryItem.objects.using(alias).filter(key="default").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert prune(Retention(), pause=-1)["expired memory items"] == 1
    assert [item.key for item in store.search(("s",))] == ["forever"]


def test_items_are_their_tenants_and_their_owners(alias: str) -> None:
    ana = User.objects.db_manager(alias).create_user("acme-ana")
    with override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": "tests.test_tenants.tenant_of"}):
        with tenant_scope("acme"):
            WarlockStore(owner=ana, using=alias).put(("prefs",), "tone", {"v": "warm"})
        with tenant_scope("globex"):
            globex = WarlockStore(using=alias)
            assert globex.get(("prefs",), "tone") is None
            assert globex.list_namespaces() == []
            globex.put(("prefs",), "tone", {"v": "globex's own"})  # no collision, no leak
        with tenant_scope("acme"):
            item = WarlockStore(using=alias).get(("prefs",), "tone")
            assert item is not None and item.value == {"v": "warm"}
            assert erase(Person(user=ana.pk))["memory items"] == 1
            assert WarlockStore(using=alias).get(("prefs",), "tone") is None
        with tenant_scope("globex"):
            assert WarlockStore(using=alias).get(("prefs",), "tone") is not None


def test_a_comparison_on_a_missing_field_matches_nothing(alias: str) -> None:
    """LangGraph's in-memory store raises there (``float(None)``); PostgresStore's SQL, and
    this store, find nothing."""
    _, ours = both(alias)
    assert ours.search(("users",), filter={"score": {"$lt": 3}}) != []
    assert [item.key for item in ours.search(("users",), filter={"score": {"$lt": 3}})] == ["sushi"]


def test_a_put_over_an_expired_item_not_yet_swept_replaces_it(alias: str) -> None:
    store = WarlockStore(using=alias, ttl={"omit_expired": True})
    store.put(("s",), "k", {"v": 1}, ttl=1)
    MemoryItem.objects.using(alias).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert store.get(("s",), "k") is None
    store.put(("s",), "k", {"v": 2})
    item = store.get(("s",), "k")
    assert item is not None and item.value == {"v": 2}
    store.delete(("s",), "k")
    assert MemoryItem.objects.using(alias).count() == 0


@ON_POSTGRES
def test_two_first_puts_of_one_key_at_once_both_succeed(alias: str) -> None:
    import threading

    from django.db import connections

    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def put(value: int) -> None:
        try:
            start.wait()
            WarlockStore(using=alias).put(("race",), "k", {"v": value})
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=put, args=(value,)) for value in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    item = WarlockStore(using=alias).get(("race",), "k")
    assert item is not None and item.value in ({"v": 1}, {"v": 2})
