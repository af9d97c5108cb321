"""Operators: warlock_prune removes expired answers and those of conversations that are gone;
the admin lists answers by scope and deletes a scope's."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone

from warlock_sessions.cache import default_cache_store
from warlock_sessions.models import CacheEntry, Conversation

from .test_stores import entry

pytestmark = pytest.mark.django_db(transaction=True)
DJANGO_CACHE = {"CACHE_STORE": "warlock_sessions.cache.DjangoCacheStore"}


def test_warlock_prune_removes_expired_answers_and_those_of_gone_conversations(
    capsys: Any,
) -> None:
    now = timezone.now()
    Conversation.objects.create(id="alive", created_at=now, updated_at=now)
    with override_settings(WARLOCK_SESSIONS=DJANGO_CACHE):
        store: Any = default_cache_store()
        store.put(entry("kept", [1, 0], scope="conversation:alive", expires_in=None))
        store.put(entry("orphan", [1, 0], scope="conversation:deleted", expires_in=None))
        store.put(entry("old", [1, 0], scope="shared", expires_in=0.05))
        store.put(entry("fresh", [1, 0], scope="shared"))
        time.sleep(0.1)
        call_command("warlock_prune")
    assert "cached answers: deleted 2" in capsys.readouterr().out
    assert sorted(CacheEntry.objects.values_list("key", flat=True)) == ["fresh", "kept"]


def test_the_admin_lists_answers_by_scope_and_deletes_a_scope(client: Client) -> None:
    from warlock_sessions.cache import DjangoCacheStore

    store = DjangoCacheStore()
    store.put(entry("a", [1, 0], scope="conversation:x", question="Where is the museum?"))
    store.put(entry("b", [1, 0], scope="conversation:x"))
    store.put(entry("c", [1, 0], scope="shared"))
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/warlock_sessions/cacheentry/?q=conversation:")
    assert page.status_code == 200 and b"Where is the museum?" in page.content
    assert b"shared" not in page.content.split(b"result_list")[1]
    one = CacheEntry.objects.get(key="a")
    detail = client.get(f"/admin/warlock_sessions/cacheentry/{one.pk}/change/")
    assert detail.status_code == 200 and b"answer a" in detail.content
    client.post(
        "/admin/warlock_sessions/cacheentry/",
        {"action": "forget_scopes", "_selected_action": [str(one.pk)]},
    )
    assert list(CacheEntry.objects.values_list("key", flat=True)) == ["c"]
