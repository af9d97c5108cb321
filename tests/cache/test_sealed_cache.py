"""The semantic cache keeps its questions and replies (the answer and the assistant turn it
followed) as every other stored text: redacted (``REDACT``) and sealed (``ENCRYPTION_KEYS``),
on every store; the key stays a digest and the vector no text. ``warlock_rotate_keys`` seals
its rows again. Before, they were kept in clear with encryption on."""

from __future__ import annotations

import base64
import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

from warlock_sessions.models import CacheEntry

from .conftest import CacheFactory
from .test_stores import entry

K1 = base64.b64encode(b"1" * 32).decode()
K2 = base64.b64encode(b"2" * 32).decode()
SECRET_QUESTION = "what are the opening hours of the zanzibar museum"


def stored_text(store: Any) -> str:
    """Everything a store holds, as text (its rows, its files, its keys' values)."""
    from warlock_sessions.cache import DjangoCacheStore, FileCacheStore, MemoryCacheStore
    from warlock_sessions.cache.redis import RedisCacheStore

    if isinstance(store, DjangoCacheStore):
        rows = CacheEntry.objects.using(store.using).values_list("question", "reply")
        return json.dumps([list(row) for row in rows])
    if isinstance(store, FileCacheStore):
        files = store.directory.rglob("*")
        return "".join(path.read_text() for path in files if path.is_file())
    if isinstance(store, RedisCacheStore):
        client = store.client
        keys = client.keys(f"{store.prefix}*")
        return "".join(
            str(client.hgetall(key) if client.type(key) == b"hash" else client.get(key))
            for key in keys
        )
    assert isinstance(store, MemoryCacheStore)
    return json.dumps(list(store._entries.values()), default=str)


def test_a_cached_answer_is_sealed_where_it_is_kept_and_opens_when_read(
    make_cache: CacheFactory,
) -> None:
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {"k1": K1}}):
        store = make_cache()
        kept = entry("a", [1, 0], question=SECRET_QUESTION)
        kept["reply"] = {"text": "Nine to five at the zanzibar museum", "askedAfter": "zanzibar?"}
        store.put(kept)
        held = stored_text(store)
        assert "zanzibar" not in held and "wse1.k1." in held
        found = store.get("ns", "conversation:a", "a")
        assert found is not None and found["question"] == SECRET_QUESTION
        assert found["reply"]["text"] == "Nine to five at the zanzibar museum"
        [(_, similar)] = store.similar("ns", "conversation:a", kept["vector"], 1)
        assert similar["question"] == SECRET_QUESTION
    # Without the key a sealed answer is a miss, never an error.
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {"k2": K2}}):
        assert make_cache().get("ns", "conversation:a", "a") is None


def shout_secret(text: str) -> str:
    return text.replace("zanzibar", "[place]")


def test_a_cached_answer_is_redacted_before_it_is_kept(make_cache: CacheFactory) -> None:
    with override_settings(WARLOCK_SESSIONS={"REDACT": [f"{__name__}.shout_secret"]}):
        store = make_cache()
        kept = entry("a", [1, 0], question=SECRET_QUESTION)
        kept["reply"] = {"text": "at the zanzibar museum", "askedAfter": "zanzibar?"}
        store.put(kept)
        assert "zanzibar" not in stored_text(store)
        found = store.get("ns", "conversation:a", "a")
        assert found is not None and found["reply"]["text"] == "at the [place] museum"


@pytest.mark.django_db(transaction=True)
def test_rotation_seals_cached_answers_again_and_the_admin_opens_them(client: Any) -> None:
    from django.contrib.auth.models import User

    from warlock_sessions.cache import DjangoCacheStore

    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {"k1": K1}}):
        DjangoCacheStore().put(entry("a", [1, 0], question=SECRET_QUESTION))
    row = CacheEntry.objects.get()
    assert row.question.startswith("wse1.k1.")
    two = {"k2": K2, "k1": K1}
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": two}):
        out = StringIO()
        call_command("warlock_rotate_keys", servers_ready=True, stdout=out)
        assert "cached answers: sealed 1 of 1" in out.getvalue()
        row = CacheEntry.objects.get()
        assert row.question.startswith("wse1.k2.") and "wse1.k2." in json.dumps(row.reply)
        client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
        page = client.get(f"/admin/warlock_sessions/cacheentry/{row.pk}/change/").content
        assert SECRET_QUESTION.encode() in page and b"answer a" in page
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {"k2": K2}}):
        found = DjangoCacheStore().get("ns", "conversation:a", "a")
        assert found is not None and found["question"] == SECRET_QUESTION
