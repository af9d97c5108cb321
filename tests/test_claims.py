"""The claims conformance suite: what uses a session id, and the claim of one nobody uses,
answered alike by the ORM in a worker thread, by one statement on the event loop's
connection, and by the first turn's own statement (``claims.first_claim``). The loop's may
say ``UNDECIDED``, only where the rules say (a log left behind to forget); the socket then
asks the thread's, and the end is the same. The first turn's writes nothing where it does not
claim, and the socket then claims as the loop does."""

from __future__ import annotations

import asyncio
import base64
import os
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

from tests.host.conftest import echo_agent, needs_postgres
from tests.test_erasure import Everything
from warlock_sessions.backends.loop_connections import loop_connection
from warlock_sessions.claims import (
    UNDECIDED,
    Usage,
    aclaim,
    ausage,
    claim_new_session,
    claimed_by,
    first_claim,
    usage,
)
from warlock_sessions.errors import QuotaExceededError
from warlock_sessions.host import Host
from warlock_sessions.models import OwnerTally, SessionEvent, SessionOwner
from warlock_sessions.models import Session as SessionRow
from warlock_sessions.models.quotas import tally_key
from warlock_sessions.permissions import VISITOR_KEY
from warlock_sessions.realtime.delivery import logged_after
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


class FirstTurn(Loop):
    """The claim made by a first turn's statement (``Host.ahandle_first``), and where that
    wrote nothing the loop's (as the socket does); ``folded`` notes the ids it claimed."""

    name = "first-turn"

    def __init__(self) -> None:
        super().__init__()
        self.folded: list[str] = []
        self.host = Host(echo_agent(), DjangoStore(using=ALIAS))

    async def claim(self, session_id: str, quota: int | None) -> SessionOwner | None:
        owner = {"user_id": None, "anonymous_key": VISITOR}
        condition = first_claim(session_id, owner, ALIAS, quota)
        hosted, outcome = await self.host.ahandle_first(
            session_id, {"message": {"text": "hello", "id": "m1"}}, condition=condition
        )
        claimed = claimed_by(outcome, session_id, owner)
        if hosted is None:
            assert claimed is None  # nothing written: no session stored meanwhile here
            return await super().claim(session_id, quota)
        assert claimed is not None and hosted.session["version"] == 1
        assert [event["seq"] for event in hosted.events] == list(range(1, len(hosted.events) + 1))
        self.folded.append(session_id)
        return claimed


Claims = Thread | Loop | FirstTurn


@pytest.fixture(params=[Thread, Loop, FirstTurn], ids=["thread", "loop", "first-turn"])
def claims(request: pytest.FixtureRequest) -> Claims:
    kind: type[Claims] = request.param
    return kind()


def sessions_stored() -> list[str]:
    rows = SessionRow.objects.using(ALIAS).order_by("id")
    return list(rows.values_list("id", flat=True))


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
    claims: Claims,
) -> None:
    assert await claims.usage("fresh") == Usage(None, True)
    owner = await claims.claim("fresh", quota=None)
    assert owner is not None and owner.anonymous_key == VISITOR and owner.pk
    assert await in_thread(lambda: owners_of("fresh")) == [VISITOR]
    found = await claims.usage("fresh")
    assert found.owner is not None and found.owner.pk == owner.pk and not found.unused
    if isinstance(claims, FirstTurn):  # the session and its log, with the owner row
        assert claims.folded == ["fresh"]
        assert await in_thread(sessions_stored) == ["fresh"]
        events = SessionEvent.objects.using(ALIAS).filter(session_id="fresh")
        assert await in_thread(events.count) > 0
        assert await in_thread(lambda: tally_of(VISITOR)) == 1


async def test_a_session_server_code_made_is_used_and_never_claimed(
    claims: Claims,
) -> None:
    await in_thread(lambda: stored("made"))
    assert await claims.usage("made") == Usage(None, False)
    assert await claims.claim("made", quota=5) is None
    assert await in_thread(lambda: owners_of("made")) == []
    assert await in_thread(lambda: SessionRow.objects.using(ALIAS).get().version) == 1
    assert await in_thread(lambda: tally_of(VISITOR)) == 0


async def test_an_owned_id_is_used_and_never_claimed_again(claims: Claims) -> None:
    row = await in_thread(lambda: owned("taken"))
    found = await claims.usage("taken")
    assert found.owner is not None and found.owner.pk == row.pk and not found.unused
    assert found.owner.anonymous_key == "someone-else"
    assert await claims.claim("taken", quota=None) is None
    assert await in_thread(lambda: owners_of("taken")) == ["someone-else"]
    assert await in_thread(sessions_stored) == []


async def test_a_log_left_behind_is_forgotten_and_the_id_claimed(claims: Claims) -> None:
    await in_thread(lambda: logged("dropped"))
    assert await claims.usage("dropped") == Usage(None, True)
    owner = await claims.claim("dropped", quota=None)
    assert owner is not None and owner.anonymous_key == VISITOR
    assert await in_thread(lambda: SessionEvent.objects.using(ALIAS).count()) == 0
    if isinstance(claims, Loop):
        assert claims.undecided == ["dropped"]  # the one case the loop leaves to the thread
    if isinstance(claims, FirstTurn):
        assert claims.folded == [] and await in_thread(sessions_stored) == []


async def test_a_claimant_at_their_quota_is_told_so(claims: Claims) -> None:
    for n in range(2):
        await in_thread(lambda n=n: owned(f"mine-{n}", VISITOR))
    with pytest.raises(QuotaExceededError) as refused:
        await claims.claim("one-more", quota=2)
    assert refused.value.limit == 2
    assert await in_thread(lambda: owners_of("one-more")) == []
    assert await in_thread(sessions_stored) == []
    assert await claims.claim("one-more", quota=3) is not None
    if isinstance(claims, Loop):
        assert claims.undecided == []


async def test_an_id_another_tenant_uses_is_never_claimed(claims: Claims) -> None:
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
    if isinstance(claims, FirstTurn):  # the session made in the claimant's tenant
        assert claims.folded == ["mine"]
        tenant_of = SessionRow.objects.using(ALIAS).filter(id="mine").values_list("tenant")
        assert await in_thread(lambda: list(tenant_of)) == [("acme",)]


async def test_claims_at_once_stop_at_the_quota_and_count_once(claims: Claims) -> None:
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
    if isinstance(claims, FirstTurn):
        assert len(claims.folded) == 5 and await in_thread(sessions_stored) == sorted(claims.folded)
    await in_thread(lambda: SessionRow.objects.using(ALIAS).all().delete())
    one = await asyncio.gather(*(claim("one") for _ in range(6)))
    assert sorted(one) == ["claimed"] + ["used"] * 5
    assert await in_thread(lambda: owners_of("one")) == [VISITOR]
    assert await in_thread(lambda: tally_of(VISITOR)) == 1


def tally_of(visitor_key: str) -> int:
    key = tally_key("sessions", None, visitor_key, "")
    counts = OwnerTally.objects.using(ALIAS).filter(key=key).values_list("count", flat=True)
    return counts.first() or 0


async def test_a_first_turn_claimed_in_its_statement_seals_its_log_from_seq_one() -> None:
    """With ``ENCRYPTION_KEYS`` each logged event is sealed to its ``seq``: the first turn's
    statement numbers them from 1 (its claim finds no log), and the next turn goes on."""
    key = base64.b64encode(os.urandom(32)).decode()
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": {"k1": key}}):
        first = FirstTurn()
        assert await first.claim("sealed-chat", quota=None) is not None
        assert first.folded == ["sealed-chat"]
        await first.host.ahandle("sealed-chat", {"message": {"text": "again", "id": "m2"}})
        logged = await in_thread(lambda: logged_after("sealed-chat", 0))
        stored = SessionEvent.objects.using(ALIAS).values_list("payload", flat=True)
        raw = await in_thread(lambda: [str(payload) for payload in stored])
    assert [event["seq"] for event in logged] == list(range(1, len(logged) + 1))
    said = [event["text"] for event in logged if event.get("role") == "user"]
    assert said == ["hello", "again"]
    assert not any("hello" in payload for payload in raw)  # sealed as stored
