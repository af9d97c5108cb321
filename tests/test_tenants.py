"""Tenants (``TENANT_RESOLVER``): the setting's checks, every store keeping a tenant's rows to
it on SQLite and PostgreSQL, and a property test: random requests of users, staff and
anonymous visitors of two tenants over the whole HTTP API (sessions and conversations: turns,
reads, lists, forks, truncates, resumes, deletes) and erasures, on ids both tenants use, never
read, list, fork, resume or erase another tenant's rows, and every row keeps its maker's
tenant. The sockets, the admin and the worker are tested below it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import connections, transaction
from django.test import Client, RequestFactory, override_settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from rest_framework.test import APIClient

from example_project.demo.agents import booking_agent
from tests.api.conftest import SETTINGS as API_SETTINGS
from tests.cache.test_semantic_cache import CountingModel
from tests.host.conftest import ALIASES
from tests.realtime.test_session_socket import APPLICATION, LAYERS, refused, until_turn
from tests.services import redis_unreachable
from tests.test_erasure import Everything
from warlock_sessions import tenancy
from warlock_sessions.cache import MemoryCacheStore, SemanticCache
from warlock_sessions.checks import check_settings
from warlock_sessions.erasure import Person, erase
from warlock_sessions.errors import (
    OfAnotherTenantError,
    SessionOfAnotherTenantError,
    TenantUnresolvedError,
)
from warlock_sessions.host import Host
from warlock_sessions.host.worker import run_due_wakes
from warlock_sessions.models import (
    AppliedInput,
    CacheEntry,
    Checkpoint,
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    Snapshot,
    Wake,
)
from warlock_sessions.permissions import Requester
from warlock_sessions.snapshots import DjangoSnapshotStore
from warlock_sessions.stores import DjangoStore
from warlock_sessions.tenancy import EVERY_TENANT, request_host, tenant_scope
from warlock_sessions.testing import session_blob

TENANTS = ("acme", "globex")
HOST = "chat.test"
MIDDLEWARE = [*settings.MIDDLEWARE, "warlock_sessions.tenancy.TenantMiddleware"]
TENANTED_TABLES = (
    Session,
    SessionEvent,
    OutboundMessage,
    Wake,
    AppliedInput,
    SessionOwner,
    Conversation,
    ConversationMessage,
    Snapshot,
    Checkpoint,
    CacheEntry,
)


def tenant_of(request: Any) -> str | None:
    """The test's resolver: a user's tenant is their name's first part (``acme-ann``), the
    platform's operator sees every tenant, and an anonymous visitor's is the subdomain they
    came to (``acme.chat.test``); on any other host, none."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return EVERY_TENANT if user.username == "platform" else user.username.split("-")[0]
    subdomain, _, rest = request_host(request).partition(".")
    return subdomain if rest == HOST else None


TENANT_SETTINGS = {"TENANT_RESOLVER": f"{__name__}.tenant_of"}


@pytest.fixture(params=sorted(LAYERS))
def tenants_on_layer(request: pytest.FixtureRequest, tenants: None) -> Iterator[str]:
    """Tenants on, with each channel layer (the in-memory one, and Redis pub/sub)."""
    if request.param == "redis" and redis_unreachable() is not None:
        pytest.skip(redis_unreachable() or "")
    with override_settings(CHANNEL_LAYERS=LAYERS[request.param]):
        yield request.param


@pytest.fixture
def tenants() -> Iterator[None]:
    with override_settings(
        WARLOCK_SESSIONS={**API_SETTINGS, **TENANT_SETTINGS},
        MIDDLEWARE=MIDDLEWARE,
        ALLOWED_HOSTS=[f".{HOST}", "testserver"],
    ):
        yield


@pytest.fixture(params=ALIASES)
def app_alias(request: pytest.FixtureRequest, tenants: None) -> Iterator[str]:
    """The app on each database, with tenants on."""
    Everything.alias = request.param  # accounts, Django sessions and this app's rows
    with override_settings(
        DATABASE_ROUTERS=["tests.test_erasure.Everything"],
        WARLOCK_SESSIONS={
            **API_SETTINGS,
            **TENANT_SETTINGS,
            "STORE_OPTIONS": {"using": request.param},
        },
    ):
        yield request.param
    Everything.alias = "default"
    connections.close_all()


# -- the setting and its checks -----------------------------------------------------------------


def ids_of_checks() -> list[str]:
    return [message.id for message in check_settings() if message.id]


@pytest.mark.parametrize("resolver", ["no.such.module.resolve", 42])
def test_a_resolver_that_is_no_function_fails_e031(resolver: Any) -> None:
    with override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": resolver}):
        assert "warlock_sessions.E031" in ids_of_checks()


def resolver_without_its_database(request: Any) -> str:
    from django.db import OperationalError

    raise OperationalError("the server closed the connection unexpectedly")


@pytest.mark.django_db
def test_a_resolver_whose_database_is_away_gets_a_503_not_no_tenant(tenants: None) -> None:
    setting = {**API_SETTINGS, "TENANT_RESOLVER": f"{__name__}.resolver_without_its_database"}
    with override_settings(WARLOCK_SESSIONS=setting):
        response = APIClient(HTTP_HOST=f"acme.{HOST}").get("/api/sessions/")
    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"


@pytest.mark.parametrize(
    ("setting", "middleware"),
    [
        ({}, settings.MIDDLEWARE),  # no TenantMiddleware: the admin would see every tenant
        (
            {},
            [
                "django.contrib.sessions.middleware.SessionMiddleware",
                "warlock_sessions.tenancy.TenantMiddleware",
                "django.contrib.auth.middleware.AuthenticationMiddleware",
            ],
        ),
        ({"STORE": "warlock_sessions.stores.MemoryStore"}, MIDDLEWARE),
        ({"SNAPSHOT_STORE": "warlock_sessions.snapshots.MemorySnapshotStore"}, MIDDLEWARE),
        ({"CHECKPOINT_STORE": "warlock_sessions.checkpoints.MemoryCheckpointStore"}, MIDDLEWARE),
    ],
)
def test_tenants_need_stores_that_keep_them_and_the_middleware_e032(
    setting: dict[str, Any], middleware: list[str]
) -> None:
    with override_settings(WARLOCK_SESSIONS={**TENANT_SETTINGS, **setting}, MIDDLEWARE=middleware):
        assert "warlock_sessions.E032" in ids_of_checks()


def test_a_complete_tenant_setup_passes_the_checks(tenants: None) -> None:
    assert not [name for name in ids_of_checks() if name.startswith("warlock_sessions.E")]


@pytest.mark.parametrize("name", ["", "*", "x" * 65, "a\x00b", "tab\there", 7, None])
def test_a_tenant_is_a_short_printable_name(name: Any) -> None:
    with pytest.raises(ValueError, match="cannot name a tenant"):
        tenancy.checked_tenant(name)


def test_a_resolver_may_name_a_tenant_by_its_primary_key() -> None:
    with override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": lambda request: 42}):
        assert tenancy.resolve(object()) == "42"
    with tenant_scope(7):
        assert tenancy.current() == "7"
    with tenant_scope(EVERY_TENANT):  # every tenant: the operator's
        assert tenancy.current() is None
    for nobody in (None, ""):  # no tenant is not every tenant
        with pytest.raises(ValueError, match="EVERY_TENANT"), tenant_scope(nobody):  # type: ignore[arg-type]
            pass
    with pytest.raises(ValueError, match="cannot name a tenant"):
        tenancy.scope_of("*")  # a text no longer means every tenant: a header could spell it


def broken_resolver(request: Any) -> str:
    return request.user.profile.tenant  # an account without a profile: AttributeError


@pytest.mark.django_db
def test_a_resolver_that_fails_names_no_tenant_and_takes_nothing_down(
    tenants: None, caplog: pytest.LogCaptureFixture
) -> None:
    with override_settings(
        WARLOCK_SESSIONS={**API_SETTINGS, "TENANT_RESOLVER": f"{__name__}.broken_resolver"}
    ):
        client = APIClient()
        client.force_login(User.objects.create_user("no-profile"))
        response = client.get("/api/sessions/")
        assert response.status_code == 403
        assert response.json()["code"] == "tenant-unresolved"
        assert client.get("/admin/login/").status_code in (200, 302)  # the rest of the site
    assert "TENANT_RESOLVER failed" in caplog.text


def test_the_host_a_request_came_to_has_no_port() -> None:
    with override_settings(ALLOWED_HOSTS=[f".{HOST}"]):
        made = RequestFactory().get("/", HTTP_HOST="Acme.Chat.Test:8000")
        assert request_host(made) == "acme.chat.test"
        port = {"headers": [(b"cookie", b"x=1"), (b"host", b"globex.chat.test:443")]}
        assert request_host(Requester(None, None, port)) == "globex.chat.test"
        assert request_host(Requester(None, None, {"headers": []})) == ""


# -- the stores -----------------------------------------------------------------------------


@pytest.mark.usefixtures("app_alias")
def test_the_session_store_keeps_each_tenants_row_to_it(app_alias: str) -> None:
    store = DjangoStore(using=app_alias)
    with tenant_scope("acme"):
        saved = store.save(session_blob("shared-id", data={"who": "acme"}), 0)
    with tenant_scope("globex"):
        assert store.load("shared-id") is None
        for version in (0, 1):  # neither made anew nor written over
            with pytest.raises(SessionOfAnotherTenantError):
                store.save(session_blob("shared-id", data={"who": "globex"}), version)
        assert store.delete("shared-id") is False
    with tenant_scope("acme"):
        assert store.load("shared-id") == saved
        assert store.save(saved, 1)["version"] == 2
    with tenant_scope(EVERY_TENANT):  # the operator's
        assert store.load("shared-id")["data"] == {"who": "acme"}
    with pytest.raises(TenantUnresolvedError):  # no scope entered: fails closed
        store.load("shared-id")
    assert Session._base_manager.using(app_alias).get(id="shared-id").tenant == "acme"


@pytest.mark.usefixtures("app_alias")
def test_server_code_in_a_tenant_is_told_an_id_is_another_tenants(app_alias: str) -> None:
    host = Host(booking_agent(), DjangoStore(using=app_alias))
    with tenant_scope("acme"):
        host.handle("taken", {"message": {"text": "I'd like to book", "id": "m1"}})
    with tenant_scope("globex"), pytest.raises(SessionOfAnotherTenantError):
        host.handle("taken", {"message": {"text": "hi", "id": "m1"}})
    assert set(SessionEvent._base_manager.using(app_alias).values_list("tenant", flat=True)) == {
        "acme"
    }


@pytest.mark.usefixtures("app_alias")
def test_a_turns_records_carry_its_tenant_on_both_write_paths(app_alias: str) -> None:
    """On PostgreSQL the host writes a turn as one statement, elsewhere with the ORM."""
    host = Host(booking_agent(), DjangoStore(using=app_alias))
    with tenant_scope("acme"):
        host.handle("booked", {"message": {"text": "I'd like to book", "id": "m1"}})
        host.handle("booked", {"message": {"text": "Ana Souza", "id": "m2"}})
    with tenant_scope("globex"):
        assert not SessionEvent.objects.using(app_alias).filter(session_id="booked").exists()
    found = {
        model.__name__: set(
            model._base_manager.using(app_alias)
            .filter(session_id="booked")
            .values_list("tenant", flat=True)
        )
        for model in (SessionEvent, AppliedInput)
    }
    assert found == {"SessionEvent": {"acme"}, "AppliedInput": {"acme"}}


@pytest.mark.usefixtures("app_alias")
def test_snapshots_and_the_cache_keep_to_their_tenant(app_alias: str) -> None:
    snapshots = DjangoSnapshotStore(using=app_alias)
    with tenant_scope("acme"):
        snapshots.save({"runId": "run-1", "status": "running"})
    with tenant_scope("globex"):
        assert snapshots.load("run-1") is None
        with pytest.raises(OfAnotherTenantError):  # neither read nor written over
            snapshots.save({"runId": "run-1", "status": "hijacked"})
    with tenant_scope("acme"):
        assert snapshots.load("run-1")["status"] == "running"
    assert Snapshot._base_manager.using(app_alias).get(key="run-1").tenant == "acme"

    cache = SemanticCache(store=MemoryCacheStore(), scope="shared")
    namespaces = set()
    for tenant in TENANTS:
        with tenant_scope(tenant):
            namespaces.add(cache.tenant_namespace())
    assert len(namespaces) == 2  # not even a "shared" answer crosses


# -- the property test over the HTTP API -------------------------------------------------

#: Who makes requests: their tenant and whether they are its staff.
REQUESTERS = {
    "acme-ann": ("acme", False),
    "acme-bob": ("acme", False),
    "acme-staff": ("acme", True),
    "globex-gus": ("globex", False),
    "globex-staff": ("globex", True),
    "visitor.acme": ("acme", False),
    "visitor.globex": ("globex", False),
}
#: The ids every requester uses: both tenants want the same ones.
IDS = ("a", "b", "c")
names = st.sampled_from(sorted(REQUESTERS))
ids = st.sampled_from(IDS)


def client_of(name: str) -> APIClient:
    tenant, staff = REQUESTERS[name]
    if name.startswith("visitor."):
        return APIClient(HTTP_HOST=f"{tenant}.{HOST}")
    client = APIClient()
    client.force_authenticate(User.objects.create_user(name, is_staff=staff, is_superuser=staff))
    return client


class TenantsApart(RuleBasedStateMachine):
    """Requests of every requester on ids both tenants use, against a model of who owns
    what; after every step, every row in every table is its owner's tenant's."""

    def __init__(self) -> None:
        super().__init__()
        for model in TENANTED_TABLES:
            model._base_manager.all().delete()
        User.objects.all().delete()
        self.clients = {name: client_of(name) for name in REQUESTERS}
        #: id -> the requester who made it.
        self.sessions: dict[str, str] = {}
        self.conversations: dict[str, str] = {}
        #: fork id -> the id it was forked from (an erasure takes others' forks too).
        self.forked_from: dict[str, str] = {}
        self.sent = 0

    def sees(self, name: str, owner: str | None) -> bool:
        if owner is None or REQUESTERS[owner][0] != REQUESTERS[name][0]:
            return False
        return owner == name or REQUESTERS[name][1]

    def post(self, name: str, path: str, body: Any = None) -> Any:
        return self.clients[name].post(
            path, json.dumps(body or {}), content_type="application/json"
        )

    # -- sessions --

    @rule(name=names, id=ids)
    def turn(self, name: str, id: str) -> None:
        self.sent += 1
        message = {"message": {"text": "I'd like to book", "id": f"m{self.sent}"}}
        response = self.post(name, f"/api/sessions/{id}/turn/", message)
        owner = self.sessions.get(id)
        if owner is None:
            assert response.status_code == 200, response.content
            self.sessions[id] = name
        else:
            assert response.status_code == (200 if self.sees(name, owner) else 404)

    @rule(name=names, id=ids)
    def read_session(self, name: str, id: str) -> None:
        expected = 200 if self.sees(name, self.sessions.get(id)) else 404
        for path in (f"/api/sessions/{id}/", f"/api/sessions/{id}/events/"):
            assert self.clients[name].get(path).status_code == expected, path

    @rule(name=names)
    def list_sessions(self, name: str) -> None:
        rows = self.clients[name].get("/api/sessions/").json()["results"]
        assert {row["id"] for row in rows} == {
            id for id, owner in self.sessions.items() if self.sees(name, owner)
        }

    def delete(self, name: str, kind: str, made: dict[str, str], id: str) -> None:
        """Only the tenant's staff delete; others are refused, strangers told nothing."""
        response = self.clients[name].delete(f"/api/{kind}/{id}/")
        if not self.sees(name, made.get(id)):
            assert response.status_code == 404
        elif not REQUESTERS[name][1]:
            assert response.status_code == (401 if name.startswith("visitor.") else 403)
        else:
            assert response.status_code == 204
            del made[id]

    @rule(name=names, id=ids)
    def delete_session(self, name: str, id: str) -> None:
        self.delete(name, "sessions", self.sessions, id)

    # -- conversations --

    @rule(name=names, id=ids)
    def send(self, name: str, id: str) -> None:
        response = self.post(name, f"/api/conversations/{id}/send/", {"input": "hello"})
        owner = self.conversations.get(id)
        if owner is None:
            assert response.status_code == 200, response.content
            self.conversations[id] = name
            self.forked_from.pop(id, None)
        else:
            assert response.status_code == (200 if self.sees(name, owner) else 404)

    @rule(name=names, id=ids, action=st.sampled_from(["", "history/"]))
    def read_conversation(self, name: str, id: str, action: str) -> None:
        response = self.clients[name].get(f"/api/conversations/{id}/{action}")
        assert response.status_code == (200 if self.sees(name, self.conversations.get(id)) else 404)

    @rule(name=names, id=ids, fork_id=ids)
    def fork(self, name: str, id: str, fork_id: str) -> None:
        response = self.post(name, f"/api/conversations/{id}/fork/", {"target": fork_id})
        if not self.sees(name, self.conversations.get(id)):
            assert response.status_code == 404
        elif fork_id in self.conversations:  # in whichever tenant: ids are one namespace
            assert response.status_code == 409, response.content
        else:
            assert response.status_code == 201, response.content
            self.conversations[fork_id] = name
            self.forked_from[fork_id] = id

    @rule(name=names, id=ids, action=st.sampled_from(["truncate", "resume"]))
    def change_conversation(self, name: str, id: str, action: str) -> None:
        body = {"message_count": 1} if action == "truncate" else {}
        response = self.post(name, f"/api/conversations/{id}/{action}/", body)
        assert response.status_code == (200 if self.sees(name, self.conversations.get(id)) else 404)

    @rule(name=names, id=ids)
    def delete_conversation(self, name: str, id: str) -> None:
        self.delete(name, "conversations", self.conversations, id)

    # -- erasure, in one tenant's scope --

    @rule(tenant=st.sampled_from(TENANTS), person=st.sampled_from(["acme-ann", "globex-gus"]))
    def erase_in_a_tenant(self, tenant: str, person: str) -> None:
        with tenant_scope(tenant):
            erase(Person(user=User.objects.get(username=person).pk))
        if REQUESTERS[person][0] == tenant:
            for id in [id for id, owner in self.sessions.items() if owner == person]:
                del self.sessions[id]
            # The person's conversations, and every fork of them, whoever made it (the
            # default: a fork begins with the person's messages).
            erased = {id for id, owner in self.conversations.items() if owner == person}
            while forks := {
                fork
                for fork, source in self.forked_from.items()
                if source in erased and fork in self.conversations and fork not in erased
            }:
                erased |= forks
            for id in erased:
                del self.conversations[id]

    # -- what every table holds --

    @invariant()
    def every_row_is_its_makers_tenants(self) -> None:
        tenant_of_session = {id: REQUESTERS[owner][0] for id, owner in self.sessions.items()}
        tenant_of_chat = {id: REQUESTERS[owner][0] for id, owner in self.conversations.items()}
        assert dict(Session._base_manager.values_list("id", "tenant")) == tenant_of_session
        for model in (SessionEvent, OutboundMessage, Wake, AppliedInput, SessionOwner):
            for session_id, tenant in model._base_manager.values_list("session_id", "tenant"):
                assert tenant_of_session.get(session_id) == tenant, (model, session_id)
        assert dict(Conversation._base_manager.values_list("id", "tenant")) == tenant_of_chat
        for chat, tenant in ConversationMessage._base_manager.values_list(
            "conversation_id", "tenant"
        ):
            assert tenant_of_chat[chat] == tenant
        for id, owner in self.sessions.items():
            row = SessionOwner._base_manager.filter(session_id=id).first()
            assert row is not None and (row.user.username if row.user else "") == (
                "" if owner.startswith("visitor.") else owner
            )


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_no_tenant_reads_lists_forks_resumes_or_erases_anothers_rows(app_alias: str) -> None:
    run_state_machine_as_test(
        TenantsApart,
        settings=hypothesis_settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


# -- what has no tenant, and the operator ------------------------------------------------------


@pytest.mark.django_db
def test_a_request_with_no_tenant_is_refused_with_a_code(tenants: None) -> None:
    response = APIClient().post(
        "/api/sessions/s/turn/", {"message": {"text": "hi"}}, format="json"
    )  # testserver: no subdomain, no tenant
    assert response.status_code == 403
    assert response.json()["code"] == "tenant-unresolved"
    assert not Session.objects.exists()


@pytest.mark.django_db
def test_the_platforms_operator_sees_every_tenant(tenants: None) -> None:
    for tenant in TENANTS:
        visitor = APIClient(HTTP_HOST=f"{tenant}.{HOST}")
        visitor.post(
            f"/api/sessions/{tenant}-chat/turn/",
            {"message": {"text": "I'd like to book", "id": "m1"}},
            format="json",
        )
    operator = APIClient()
    operator.force_authenticate(User.objects.create_superuser("platform"))
    rows = operator.get("/api/sessions/").json()["results"]
    assert sorted(row["id"] for row in rows) == ["acme-chat", "globex-chat"]


# -- sockets, the admin, the worker, the erase command ------------------------------------------


def cookie_of(username: str) -> bytes:
    client = Client()
    client.force_login(
        User.objects.get_or_create(
            username=username, is_staff="staff" in username, is_superuser="staff" in username
        )[0]
    )
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def socket_of(username: str, path: str) -> WebsocketCommunicator:
    cookie = await database_sync_to_async(cookie_of)(username)
    return WebsocketCommunicator(APPLICATION, path, headers=[(b"cookie", cookie)])


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_socket_of_another_tenant_is_closed_like_for_any_id(tenants_on_layer: str) -> None:
    chat = await socket_of("acme-ann", "/ws/sessions/shared/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    assert (await until_turn(chat))[-1]["type"] == "turn"

    for stranger in ("globex-gus", "globex-staff"):
        other = await socket_of(stranger, "/ws/sessions/shared/")
        assert (await other.connect())[0]
        await other.send_json_to({"type": "message", "text": "hi", "id": "x"})
        assert await other.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    no_tenant = WebsocketCommunicator(APPLICATION, "/ws/sessions/shared/")
    assert await refused(no_tenant) == 4403
    visitor = WebsocketCommunicator(
        APPLICATION, "/ws/sessions/shared/", headers=[(b"host", f"globex.{HOST}".encode())]
    )
    assert await refused(visitor) == 4403  # a tenant, but no Django session: no identity
    assert await chat.receive_nothing(timeout=0.3)  # nothing of theirs reached the owner
    await chat.disconnect()
    rows = await database_sync_to_async(
        lambda: set(SessionEvent._base_manager.values_list("tenant", flat=True))
    )()
    assert rows == {"acme"}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_conversation_socket_of_another_tenant_is_shut_out(
    tenants_on_layer: str,
) -> None:
    ann = await socket_of("acme-ann", "/ws/conversations/talk/")
    assert (await ann.connect())[0]
    await ann.send_json_to({"type": "send", "input": "hello"})
    while (await ann.receive_json_from(timeout=10))["type"] != "result":
        pass
    for stranger in ("globex-gus", "globex-staff"):
        other = await socket_of(stranger, "/ws/conversations/talk/")
        assert (await other.connect())[0]
        await other.send_json_to({"type": "send", "input": "what did they say?"})
        assert (await other.receive_output(timeout=5))["code"] == 4403
    assert await ann.receive_nothing(timeout=0.3)
    await ann.disconnect()
    tenants_kept = await database_sync_to_async(
        lambda: set(ConversationMessage._base_manager.values_list("tenant", flat=True))
    )()
    assert tenants_kept == {"acme"}


@pytest.mark.django_db
def test_the_admin_shows_and_erases_only_its_tenants_rows(tenants: None) -> None:
    for tenant in TENANTS:
        with tenant_scope(tenant):
            Host(booking_agent()).handle(
                f"{tenant}-chat", {"message": {"text": "I'd like to book", "id": "m1"}}
            )
    admin = Client(HTTP_HOST=f"acme.{HOST}")
    admin.force_login(User.objects.create_superuser("acme-admin"))
    listed = admin.get("/admin/warlock_sessions/session/").content.decode()
    assert "acme-chat" in listed and "globex-chat" not in listed
    assert admin.get("/admin/warlock_sessions/session/globex-chat/change/").status_code == 302
    assert admin.get("/admin/warlock_sessions/session/acme-chat/change/").status_code == 200
    erased = admin.post(
        "/admin/warlock_sessions/session/",
        {"action": "erase_people", "_selected_action": ["globex-chat", "acme-chat"]},
    )
    assert erased.status_code in (200, 302)
    assert Session._base_manager.filter(id="globex-chat").exists()
    assert SessionEvent._base_manager.filter(session_id="globex-chat").exists()


@pytest.mark.django_db
def test_the_worker_fires_each_wake_in_its_tenant(tenants: None) -> None:
    agents = {"timer": "tests.host.conftest.timer_agent"}
    with override_settings(WARLOCK_SESSIONS={**API_SETTINGS, **TENANT_SETTINGS, "AGENTS": agents}):
        for tenant in TENANTS:
            with tenant_scope(tenant):
                Host("timer").handle(f"{tenant}-timer", {"start": {"flow": "lembrete", "key": "k"}})
        Wake._base_manager.update(due_at="2000-01-01T00:00:00Z")
        assert run_due_wakes(10) == 2
    fired = Wake._base_manager.values_list("session_id", "tenant", "status")
    assert sorted(fired) == [("acme-timer", "acme", "fired"), ("globex-timer", "globex", "fired")]
    for tenant in TENANTS:  # the reminder each wake logged is its own tenant's
        logged = SessionEvent._base_manager.filter(session_id=f"{tenant}-timer")
        assert set(logged.values_list("tenant", flat=True)) == {tenant}
        assert logged.filter(type="message").count() >= 1


@pytest.mark.django_db
def test_the_erase_command_keeps_to_the_tenant_it_is_given(tenants: None) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    ann = User.objects.create_user("acme-ann")
    with tenant_scope("acme"):
        SessionOwner.objects.create(session_id="ann-chat", user=ann)
    out = StringIO()
    call_command("warlock_erase", "--owner", "acme-ann", "--tenant", "globex", stdout=out)
    assert SessionOwner._base_manager.filter(session_id="ann-chat").exists()
    lines = out.getvalue().splitlines()
    assert lines and all(line.endswith("deleted 0") for line in lines), lines
    call_command("warlock_erase", "--owner", "acme-ann", "--tenant", "acme", stdout=StringIO())
    assert not SessionOwner._base_manager.filter(session_id="ann-chat").exists()
    with pytest.raises(CommandError, match="cannot name a tenant"):
        call_command("warlock_erase", "--owner", "acme-ann", "--tenant", "*")


@pytest.mark.django_db
def test_turning_tenants_on_gives_the_rows_of_no_tenant_to_one() -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    Host(booking_agent()).handle("before", {"message": {"text": "I'd like to book", "id": "m1"}})
    with tenant_scope("globex"):
        Host(booking_agent()).handle("theirs", {"message": {"text": "hi", "id": "m1"}})
    with pytest.raises(CommandError, match="belong to tenants already"):
        call_command("warlock_assign_tenant", "acme")  # globex's rows: an orphan may be theirs
    out = StringIO()
    call_command("warlock_assign_tenant", "acme", "--batch-size", "2", "--force", stdout=out)
    assert "sessions: gave 1 to acme" in out.getvalue()
    assert dict(Session._base_manager.values_list("id", "tenant")) == {
        "before": "acme",
        "theirs": "globex",
    }
    for model in TENANTED_TABLES:
        assert not model._base_manager.filter(tenant="").exists(), model
    again = StringIO()
    call_command("warlock_assign_tenant", "acme", stdout=again)  # a deploy may run it each time
    assert "nothing to give" in again.getvalue()
    with pytest.raises(CommandError, match="cannot name a tenant"):
        call_command("warlock_assign_tenant", "*")


@pytest.mark.django_db
def test_erasing_in_a_tenant_nobody_has_says_so(tenants: None) -> None:
    from io import StringIO

    from django.core.management import call_command

    User.objects.create_user("acme-ann")
    err = StringIO()
    call_command("warlock_erase", "--owner", "acme-ann", "--tenant", "acem", stderr=err)
    assert "no session or conversation belongs to the tenant 'acem'" in err.getvalue()


# -- what the attack on tenants found ------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_silent_socket_of_another_tenants_staff_hears_nothing(
    tenants_on_layer: str,
) -> None:
    """The log follower serves every tenant's sockets: each hears only in its own tenant."""
    chat = await socket_of("acme-ann", "/ws/sessions/quiet/")
    assert (await chat.connect())[0]
    await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
    await until_turn(chat)
    spy = await socket_of("globex-staff", "/ws/sessions/quiet/")
    assert (await spy.connect())[0]
    await chat.send_json_to({"type": "message", "text": "Ana Souza", "id": "m2"})
    await until_turn(chat)
    assert await spy.receive_nothing(timeout=2)  # four follower reads: nothing past, nothing new
    await spy.disconnect()
    await chat.disconnect()


@pytest.mark.usefixtures("app_alias")
def test_an_operators_turn_on_a_tenants_chat_stays_that_tenants(app_alias: str) -> None:
    ann = client_of("acme-ann")
    operator = APIClient(HTTP_HOST=f"acme.{HOST}")
    operator.force_authenticate(User.objects.create_superuser("platform"))

    def turn(client: APIClient, text: str, id: str) -> int:
        body = {"message": {"text": text, "id": id}}
        return int(client.post("/api/sessions/s1/turn/", body, format="json").status_code)

    def send(client: APIClient, text: str) -> int:
        body = json.dumps({"input": text})
        path = "/api/conversations/c1/send/"
        return int(client.post(path, body, content_type="application/json").status_code)

    assert turn(ann, "I'd like to book", "m1") == send(ann, "hello") == 200
    assert turn(operator, "Ana Souza", "m2") == send(operator, "a word from support") == 200
    assert turn(ann, "ana@example.com", "m3") == send(ann, "thanks") == 200  # not stuck
    for model in TENANTED_TABLES:
        kept = set(model._base_manager.using(app_alias).values_list("tenant", flat=True))
        assert kept <= {"acme"}, (model, kept)
    events = ann.get("/api/sessions/s1/events/").json()["events"]
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert ann.delete("/api/sessions/s1/").status_code == 403  # and staff's delete takes all
    assert client_of("acme-staff").delete("/api/sessions/s1/").status_code == 204
    assert not SessionEvent._base_manager.using(app_alias).filter(session_id="s1").exists()


@pytest.mark.django_db
def test_a_parallel_workflow_steps_run_in_the_tenant_of_their_run() -> None:
    from warlock_sessions.snapshots import MemorySnapshotStore
    from warlock_sessions.workflows import Step, Workflow

    seen: list[str | None] = []
    workflow = Workflow(
        "wf",
        [
            Step(
                "g",
                parallel=[
                    Step(name, run=lambda ctx: seen.append(tenancy.current())) for name in "xy"
                ],
            )
        ],
        store=MemorySnapshotStore(),
    )
    with tenant_scope("acme"):
        workflow.execute(run_id="r")
    assert seen == ["acme", "acme"]


@pytest.mark.django_db
def test_saving_an_instance_with_another_tenants_key_overwrites_nothing() -> None:
    from django.db import IntegrityError
    from django.utils import timezone

    with tenant_scope("acme"):
        Snapshot.objects.create(key="acme-run", payload={"secret": 1}, saved_at=timezone.now())
    with tenant_scope("globex"), pytest.raises(IntegrityError), transaction.atomic():
        Snapshot(key="acme-run", payload={"mine": 1}, saved_at=timezone.now()).save()
    row = Snapshot._base_manager.get(key="acme-run")
    assert (row.tenant, row.payload) == ("acme", {"secret": 1})


def test_the_middleware_resolves_again_once_drf_authenticates_another_user(tenants: None) -> None:
    request = RequestFactory().get("/", HTTP_HOST=f"globex.{HOST}")
    request.user = AnonymousUser()
    deferred = tenancy._Deferred(request)
    token = tenancy.enter(deferred)
    try:
        assert tenancy.current() == "globex"  # the host's, for a visitor
        request.user = User(username="acme-ann")  # what DRF sets once it authenticated a token
        assert tenancy.current() == "acme"
    finally:
        tenancy._scope.reset(token)


def test_a_socket_host_django_would_refuse_names_no_tenant() -> None:
    with override_settings(ALLOWED_HOSTS=[f".{HOST}"]):
        for host in (b"*.chat.test", b"acme.chat.test.evil.example", b"a b.chat.test"):
            assert request_host(Requester(None, None, {"headers": [(b"host", host)]})) == ""


@pytest.mark.django_db
def test_erasing_with_an_empty_tenant_is_refused() -> None:
    from django.core.management import CommandError, call_command

    User.objects.create_user("acme-ann")
    with pytest.raises(CommandError, match="cannot name a tenant"):
        call_command("warlock_erase", "--owner", "acme-ann", "--tenant", "")


def test_a_write_with_no_tenant_in_a_projects_view_is_a_403() -> None:
    middleware = tenancy.TenantMiddleware(lambda request: None)
    request = RequestFactory().post("/")
    answer = middleware.process_exception(request, TenantUnresolvedError())
    assert answer is not None and answer.status_code == 403
    assert middleware.process_exception(request, ValueError()) is None


class Crash(BaseException):
    """A process killed mid-turn."""


@pytest.mark.django_db(transaction=True)  # snapshots refuse a transaction around them
def test_the_worker_settles_a_tenants_cut_short_orchestrator_turn_in_its_tenant(
    tenants: None,
) -> None:
    from warlock_sessions.checkpoints import DjangoCheckpointStore
    from warlock_sessions.workflows import SUPERVISOR_END
    from warlock_sessions.workflows.orchestrator import Orchestrator

    crash = {"on": True}
    scopes: list[str | None] = []

    def count(ctx: Any) -> int:
        scopes.append(tenancy.current())
        if crash["on"] and ctx.iteration == 1:
            raise Crash()
        return int(ctx.state.get("count", 0)) + 1

    def router() -> Orchestrator:
        return Orchestrator(
            "router",
            {"count": count},
            route=lambda ctx: "count" if ctx.iteration < 3 else SUPERVISOR_END,
            iterate=True,
            checkpoint_store=DjangoCheckpointStore(),
            snapshot_store=DjangoSnapshotStore(),
        )

    with tenant_scope("acme"), pytest.raises(Crash):
        router().turn("acme-chat", "hello")
    crash["on"] = False
    scopes.clear()
    assert [turn.session_id for turn in router().drain()] == ["acme-chat"]  # the boot drain
    assert set(scopes) == {"acme"}
    with tenant_scope("acme"):
        assert router().turn("acme-chat", "next").turn_index == 1  # not stuck
    assert set(Checkpoint._base_manager.values_list("tenant", flat=True)) == {"acme"}


@pytest.mark.django_db
def test_code_that_entered_no_scope_reads_and_writes_nothing_while_tenants_are_on(
    tenants: None,
) -> None:
    from django.http import StreamingHttpResponse

    for tenant in TENANTS:
        with tenant_scope(tenant):
            Host(booking_agent()).handle(f"{tenant}-s", {"message": {"text": "hi", "id": "m"}})
    assert not Session.objects.exists()  # a thread or task that lost its request's scope
    with pytest.raises(TenantUnresolvedError):
        Host(booking_agent()).handle("nobody", {"message": {"text": "hi", "id": "m"}})
    with pytest.raises(TenantUnresolvedError):  # never "erased nothing" for want of a tenant
        erase(Person(session="acme-s"))
    with tenant_scope(EVERY_TENANT):
        assert Session.objects.count() == 2

    def export(request: Any) -> StreamingHttpResponse:
        return StreamingHttpResponse(id for id in Session.objects.values_list("id", flat=True))

    request = RequestFactory().get("/", HTTP_HOST=f"acme.{HOST}")
    request.user = AnonymousUser()
    streamed = b"".join(tenancy.TenantMiddleware(export)(request).streaming_content)
    assert streamed == b"acme-s"  # the body is read in the request's tenant, after the view


@pytest.mark.django_db(transaction=True)
def test_an_operators_conversation_turn_keeps_its_snapshot_and_cache_in_the_tenant(
    tenants: None,
) -> None:
    from django.utils import timezone

    from warlock_sessions.cache import DjangoCacheStore
    from warlock_sessions.cache.semantic import CacheCall

    with tenant_scope("acme"):
        Conversation.objects.create(id="c1", created_at=timezone.now(), updated_at=timezone.now())
    with tenant_scope(EVERY_TENANT):  # the operator, outside every tenant
        DjangoSnapshotStore().save({"runId": "agent-run", "sessionId": "c1", "status": "x"})
    assert Snapshot._base_manager.get(key="agent-run").tenant == "acme"

    cache = SemanticCache(store=DjangoCacheStore(), scope="conversation")
    call = CacheCall(
        model=CountingModel(),
        messages=[{"role": "user", "content": "what are your opening hours?"}],
        tools=[],
        conversation="c1",
        first=True,
    )
    with tenant_scope(EVERY_TENANT):
        cache.chat(call)
    assert set(CacheEntry._base_manager.values_list("tenant", "namespace")) == {
        ("acme", f"{cache.namespace}@acme")
    }


def _memory_orchestrator() -> Any:
    from warlock_sessions.checkpoints import MemoryCheckpointStore
    from warlock_sessions.workflows import SUPERVISOR_END
    from warlock_sessions.workflows.orchestrator import Orchestrator

    return Orchestrator(
        "kept-in-memory",
        {"noop": lambda ctx: None},
        route=lambda ctx: SUPERVISOR_END,
        checkpoint_store=MemoryCheckpointStore(),
    )


memory_orchestrator = _memory_orchestrator()


def test_an_orchestrators_own_store_that_keeps_no_tenant_fails_e032(tenants: None) -> None:
    setting = {**TENANT_SETTINGS, "ORCHESTRATORS": [f"{__name__}.memory_orchestrator"]}
    with override_settings(WARLOCK_SESSIONS=setting):
        found = [message for message in check_settings() if message.id == "warlock_sessions.E032"]
    assert found and "kept-in-memory" in found[0].msg


@pytest.mark.django_db(transaction=True)
def test_an_operators_first_orchestrator_turn_on_a_tenants_chat_is_the_tenants(
    tenants: None,
) -> None:
    from django.utils import timezone

    from warlock_sessions.checkpoints import DjangoCheckpointStore
    from warlock_sessions.workflows import SUPERVISOR_END
    from warlock_sessions.workflows.orchestrator import Orchestrator

    def router() -> Orchestrator:
        return Orchestrator(
            "router",
            {"count": lambda ctx: int(ctx.state.get("count", 0)) + 1},
            route=lambda ctx: "count" if ctx.iteration < 1 else SUPERVISOR_END,
            checkpoint_store=DjangoCheckpointStore(),
            snapshot_store=DjangoSnapshotStore(),
        )

    with tenant_scope("acme"):
        Conversation.objects.create(id="chat", created_at=timezone.now(), updated_at=timezone.now())
    with tenant_scope(EVERY_TENANT):
        router().turn("chat", "from support")
    with tenant_scope("acme"):
        assert router().turn("chat", "from the customer").turn_index == 1
    assert set(Checkpoint._base_manager.values_list("tenant", flat=True)) == {"acme"}


@pytest.mark.django_db
def test_saving_with_no_tenant_says_so(tenants: None) -> None:
    from django.utils import timezone

    with tenant_scope("acme"):
        snapshot = Snapshot.objects.create(key="k", payload={}, saved_at=timezone.now())
    with pytest.raises(TenantUnresolvedError):  # not an IntegrityError from the insert after
        snapshot.save()


@pytest.mark.django_db(transaction=True)
def test_another_tenants_snapshot_key_is_said_to_be_theirs(tenants: None) -> None:
    with tenant_scope("acme"):
        DjangoSnapshotStore().save({"runId": "run-9", "status": "running"})
    with tenant_scope("globex"), pytest.raises(OfAnotherTenantError, match="another tenant"):
        DjangoSnapshotStore().save({"runId": "run-9", "status": "mine"})
