"""The claims conformance suite: what uses a session id, and the claim of one nobody uses,
answered alike by the ORM in a worker thread and by one statement on the event loop's
connection (``claims``). The loop's may say ``UNDECIDED``, only where the rules say (a log
left behind to forget); the socket then asks the thread's, and the end is the same."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from tests.host.conftest import needs_postgres
from tests.test_erasure import Everything
from warlock_sessions.backends.loop_connections import loop_connection
from warlock_sessions.claims import (
    UNDECIDED,
    Usage,
    aclaim,
    ausage,
    claim_new_session,
    usage,
)
from warlock_sessions.errors import QuotaExceededError
from warlock_sessions.models import OwnerTally, SessionEvent, SessionOwner
from warlock_sessions.models.quotas import tally_key
from warlock_sessions.permissions import VISITOR_KEY
from warlock_sessions.stores import DjangoStore
from warlock_sessions.tenancy import tenant_scope
from warlock_sessions.testing import session_blob

pytestmark = [
    needs_postgres,
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]
ALIAS = "postgres"
VISITOR = "visitor-claims"
TENANT_RESOLVER = "tests.test_tenants.tenant_of"


class VisitorSession(dict[str, Any]):
    """A visitor's Django session, holding their identity already."""

    session_key = "claims-session"


def visitor() -> Any:
    return SimpleNamespace(user=AnonymousUser(), session=VisitorSession({VISITOR_KEY: VISITOR}))


@pytest.fixture(autouse=True)
def on_postgres() -> Iterator[None]:
    Everything.alias = ALIAS
    with override_settings(DATABASE_ROUTERS=["tests.test_erasure.Everything"]):
        yield
    Everything.alias = "default"
    connections.close_all()


def in_thread(work: Callable[[], Any]) -> Any:
    def closing() -> Any:
        try:
            return work()
        finally:
            connections.close_all()  # that thread's, or the test database stays in use

    return sync_to_async(closing)()


class Thread:
    name = "thread"

    async def usage(self, session_id: str) -> Usage:
        result: Usage = await in_thread(lambda: usage(session_id, DjangoStore(using=ALIAS)))
        return result

    async def claim(self, session_id: str, quota: int | None) -> SessionOwner | None:
        kept = getattr(settings, "WARLOCK_SESSIONS", {})
        with override_settings(WARLOCK_SESSIONS={**kept, "MAX_SESSIONS_PER_OWNER": quota}):
            owner: SessionOwner | None = await in_thread(
                lambda: claim_new_session(visitor(), session_id, DjangoStore(using=ALIAS))
            )
        return owner


class Loop:
    """The loop's answers, and the thread's where it says it cannot decide (as the socket
    does); ``undecided`` notes where."""

    name = "loop"

    def __init__(self) -> None:
        self.undecided: list[str] = []

    async def usage(self, session_id: str) -> Usage:
        async with loop_connection(ALIAS) as connection:
            found = await ausage(connection, session_id, ALIAS)
        assert found is not UNDECIDED
        return found

    async def claim(self, session_id: str, quota: int | None) -> SessionOwner | None:
        owner = {"user_id": None, "anonymous_key": VISITOR}
        async with loop_connection(ALIAS) as connection:
            claimed = await aclaim(connection, session_id, owner, ALIAS, quota)
        if claimed is UNDECIDED:
            self.undecided.append(session_id)
            return await Thread().claim(session_id, quota)
        return claimed


@pytest.fixture(params=[Thread, Loop], ids=["thread", "loop"])
def claims(request: pytest.FixtureRequest) -> Thread | Loop:
    kind: type[Thread | Loop] = request.param
    return kind()


def stored(session_id: str) -> None:
    DjangoStore(using=ALIAS).save(session_blob(session_id), 0)


def owned(session_id: str, key: str = "someone-else") -> SessionOwner:
    return SessionOwner.objects.using(ALIAS).create(
        session_id=session_id, anonymous_key=key, created_at=timezone.now()
    )


def logged(session_id: str) -> None:
    SessionEvent.objects.using(ALIAS).create(
        session_id=session_id, seq=1, type="message", payload={"text": "left behind"}
    )


def owners_of(session_id: str) -> list[str]:
    return list(
        SessionOwner.objects.using(ALIAS)
        .filter(session_id=session_id)
        .values_list("anonymous_key", flat=True)
    )


async def test_an_id_nothing_uses_is_unused_and_claimed_by_its_first_claimant(
    claims: Thread | Loop,
) -> None:
    assert await claims.usage("fresh") == Usage(None, True)
    owner = await claims.claim("fresh", quota=None)
    assert owner is not None and owner.anonymous_key == VISITOR and owner.pk
    assert await in_thread(lambda: owners_of("fresh")) == [VISITOR]
    found = await claims.usage("fresh")
    assert found.owner is not None and found.owner.pk == owner.pk and not found.unused


async def test_a_session_server_code_made_is_used_and_never_claimed(
    claims: Thread | Loop,
) -> None:
    await in_thread(lambda: stored("made"))
    assert await claims.usage("made") == Usage(None, False)
    assert await claims.claim("made", quota=5) is None
    assert await in_thread(lambda: owners_of("made")) == []


async def test_an_owned_id_is_used_and_never_claimed_again(claims: Thread | Loop) -> None:
    row = await in_thread(lambda: owned("taken"))
    found = await claims.usage("taken")
    assert found.owner is not None and found.owner.pk == row.pk and not found.unused
    assert found.owner.anonymous_key == "someone-else"
    assert await claims.claim("taken", quota=None) is None
    assert await in_thread(lambda: owners_of("taken")) == ["someone-else"]


async def test_a_log_left_behind_is_forgotten_and_the_id_claimed(claims: Thread | Loop) -> None:
    await in_thread(lambda: logged("dropped"))
    assert await claims.usage("dropped") == Usage(None, True)
    owner = await claims.claim("dropped", quota=None)
    assert owner is not None and owner.anonymous_key == VISITOR
    assert await in_thread(lambda: SessionEvent.objects.using(ALIAS).count()) == 0
    if isinstance(claims, Loop):
        assert claims.undecided == ["dropped"]  # the one case the loop leaves to the thread


async def test_a_claimant_at_their_quota_is_told_so(claims: Thread | Loop) -> None:
    for n in range(2):
        await in_thread(lambda n=n: owned(f"mine-{n}", VISITOR))
    with pytest.raises(QuotaExceededError) as refused:
        await claims.claim("one-more", quota=2)
    assert refused.value.limit == 2
    assert await in_thread(lambda: owners_of("one-more")) == []
    assert await claims.claim("one-more", quota=3) is not None
    if isinstance(claims, Loop):
        assert claims.undecided == []


async def test_an_id_another_tenant_uses_is_never_claimed(claims: Thread | Loop) -> None:
    """Ids are one namespace: one another tenant owns, or has a session under, is refused in
    every other tenant's scope, and nothing is written for it."""

    def theirs() -> None:
        SessionOwner.objects.using(ALIAS).create(
            session_id="theirs", anonymous_key="k", created_at=timezone.now(), tenant="globex"
        )
        with tenant_scope("globex"):
            stored("their-chat")

    await in_thread(theirs)
    tenants = override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": TENANT_RESOLVER})
    with tenants, tenant_scope("acme"):
        assert await claims.claim("theirs", quota=None) is None
        assert await claims.claim("their-chat", quota=3) is None
        mine = await claims.claim("mine", quota=3)
    assert mine is not None
    rows = SessionOwner.objects.using(ALIAS).order_by("session_id")
    owners = await in_thread(lambda: list(rows.values_list("session_id", "tenant")))
    assert owners == [("mine", "acme"), ("theirs", "globex")]


async def test_claims_at_once_stop_at_the_quota_and_count_once(claims: Thread | Loop) -> None:
    """Twelve claims of one owner at once under a quota of 5, and six of one id: the owner's
    counter decides each, exactly (``models.quotas``)."""

    async def claim(session_id: str) -> str:
        try:
            return "claimed" if await claims.claim(session_id, quota=5) else "used"
        except QuotaExceededError:
            return "refused"

    many = await asyncio.gather(*(claim(f"many-{n}") for n in range(12)))
    assert sorted(many) == ["claimed"] * 5 + ["refused"] * 7
    assert await in_thread(lambda: tally_of(VISITOR)) == 5
    await in_thread(lambda: SessionOwner.objects.using(ALIAS).all().delete())
    one = await asyncio.gather(*(claim("one") for _ in range(6)))
    assert sorted(one) == ["claimed"] + ["used"] * 5
    assert await in_thread(lambda: owners_of("one")) == [VISITOR]
    assert await in_thread(lambda: tally_of(VISITOR)) == 1


def tally_of(visitor_key: str) -> int:
    key = tally_key("sessions", None, visitor_key, "")
    counts = OwnerTally.objects.using(ALIAS).filter(key=key).values_list("count", flat=True)
    return counts.first() or 0
