"""``WarlockSessionService``: Google ADK's sessions on warlock's tables, held to ADK's own
``InMemorySessionService`` (one event sequence on both gives the same sessions), on SQLite and
PostgreSQL with the privacy settings off and on; then what ADK's own in-memory service does not
do: a stale session refused (ADK #1733, #3717), a real runner, the admin and erasure."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import AsyncGenerator
from typing import Any

import pytest

pytest.importorskip("google.adk")
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings
from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from tests.frameworks.conftest import ON_POSTGRES, PRIVACY, run
from warlock_sessions.erasure import Person, erase
from warlock_sessions.errors import InvalidInputError
from warlock_sessions.frameworks.adk import WarlockSessionService
from warlock_sessions.models import AgentState, Conversation, ConversationMessage
from warlock_sessions.tenancy import EVERY_TENANT, tenant_scope


def said(author: str, text: str, at: float, **delta: Any) -> Event:
    return Event(
        invocation_id="inv-1",
        author=author,
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=text)]
        ),
        actions=EventActions(state_delta=delta),
        timestamp=at,
    )


def called(at: float) -> list[Event]:
    """A function call and its response, as a tool-using agent's events are."""
    call = types.FunctionCall(id="call-1", name="menu", args={"kind": "pizza"})
    answer = types.FunctionResponse(id="call-1", name="menu", response={"margherita": 9.5})
    return [
        Event(
            invocation_id="inv-2",
            author="helper",
            timestamp=at,
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            invocation_id="inv-2",
            author="helper",
            timestamp=at + 1,
            content=types.Content(role="user", parts=[types.Part(function_response=answer)]),
        ),
    ]


EVENTS: list[Event] = [
    said("user", "hi, I'm Ana", 100.0),
    said("helper", "Hello Ana", 101.0, name="Ana", **{"user:lang": "pt", "app:greeting": "olá"}),
    said("user", "a pizza", 102.0, **{"temp:draft": "pizza", "order": ["pizza"]}),
    *called(103.0),
    said("helper", "A margherita is 9.50 €", 105.0, order=["margherita"], **{"user:lang": "en"}),
]


def comparable(session: Any) -> Any:
    if session is None:
        return None
    dumped = session.model_dump(mode="json", exclude={"last_update_time"})
    return json.loads(json.dumps(dumped, sort_keys=True))


async def played(service: BaseSessionService) -> list[Any]:
    """The event sequence on ``service``, and every view of the sessions it left."""
    first = await service.create_session(
        app_name="shop", user_id="ana", session_id="s1", state={"step": 0, "user:tier": "gold"}
    )
    await service.create_session(app_name="shop", user_id="bo", session_id="s2")
    for event in EVENTS:
        await service.append_event(first, copy.deepcopy(event))
    partial = said("helper", "typing…", 106.0)
    partial.partial = True
    await service.append_event(first, partial)  # not kept
    views: list[Any] = [comparable(first)]
    for config in (
        None,
        GetSessionConfig(num_recent_events=2),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(after_timestamp=103.0),
    ):
        views.append(
            comparable(
                await service.get_session(
                    app_name="shop", user_id="ana", session_id="s1", config=config
                )
            )
        )
    views.append(
        comparable(await service.get_session(app_name="shop", user_id="bo", session_id="s1"))
    )
    listed = await service.list_sessions(app_name="shop")
    views.append(sorted(json.dumps(comparable(s)) for s in listed.sessions))
    views.append(
        [s.id for s in (await service.list_sessions(app_name="shop", user_id="bo")).sessions]
    )
    views.append(await service.get_user_state(app_name="shop", user_id="ana"))
    await service.delete_session(app_name="shop", user_id="bo", session_id="s2")
    await service.delete_session(app_name="shop", user_id="bo", session_id="nothing")
    views.append([s.id for s in (await service.list_sessions(app_name="shop")).sessions])
    return views


def test_it_keeps_sessions_as_adks_own_service_does(alias: str, privacy: str) -> None:
    expected = run(played(InMemorySessionService()))
    found = run(played(WarlockSessionService(using=alias)))
    for index, (ours, reference) in enumerate(zip(found, expected, strict=True)):
        assert ours == reference, index
    assert found[1]["state"] == {
        "step": 0,
        "name": "Ana",
        "order": ["margherita"],
        "app:greeting": "olá",
        "user:lang": "en",
        "user:tier": "gold",
    }


def test_a_session_written_meanwhile_is_refused_as_stale(alias: str, privacy: str) -> None:
    service = WarlockSessionService(using=alias)

    async def race() -> None:
        await service.create_session(app_name="shop", user_id="ana", session_id="s3")
        mine = await service.get_session(app_name="shop", user_id="ana", session_id="s3")
        theirs = await service.get_session(app_name="shop", user_id="ana", session_id="s3")
        assert mine is not None and theirs is not None
        await service.append_event(theirs, said("user", "first", 1.0))
        with pytest.raises(StaleSessionError):
            await service.append_event(mine, said("user", "second", 2.0))
        again = await service.get_session(app_name="shop", user_id="ana", session_id="s3")
        assert again is not None
        await service.append_event(again, said("user", "second", 2.0))
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="shop", user_id="ana", session_id="s3")
        with pytest.raises(SessionNotFoundError):
            gone = copy.deepcopy(again)
            gone.id = "nowhere"
            await service.append_event(gone, said("user", "lost", 3.0))

    run(race())
    texts = [
        json.dumps(m)
        for m in ConversationMessage.objects.using(alias).values_list("message", flat=True)
    ]
    assert len(texts) == 2


class Scripted(BaseLlm):
    """A model that answers how many things it was told (no network, no key)."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        told = [c for c in llm_request.contents if c.parts and c.parts[0].text]
        yield LlmResponse(
            content=types.Content(
                role="model", parts=[types.Part(text=f"I heard {len(told)} things")]
            )
        )


def test_a_runner_keeps_its_sessions_here(alias: str) -> None:
    ana = User.objects.db_manager(alias).create_user("ana")
    settings = {key: PRIVACY["private"][key] for key in ("ENCRYPTION_KEYS", "REDACT")}
    with override_settings(WARLOCK_SESSIONS=settings):
        service = WarlockSessionService(owner=ana, using=alias)
        agent = LlmAgent(
            name="helper", model=Scripted(), instruction="Be brief.", output_key="last"
        )
        runner = Runner(app_name="shop", agent=agent, session_service=service)

        async def talk() -> Any:
            session = await service.create_session(app_name="shop", user_id="ana")
            for text in ("hi, card 4539 1488 0343 6467", "again"):
                message = types.Content(role="user", parts=[types.Part(text=text)])
                async for _ in runner.run_async(
                    user_id="ana", session_id=session.id, new_message=message
                ):
                    pass
            return await service.get_session(app_name="shop", user_id="ana", session_id=session.id)

        session = run(talk())
        assert [event.content.parts[0].text for event in session.events] == [
            "hi, card [card]",
            "I heard 1 things",
            "again",
            "I heard 3 things",
        ]
        assert session.state == {"last": "I heard 3 things"}
        stored = json.dumps(
            list(ConversationMessage.objects.using(alias).values_list("message", flat=True))
        )
        stored += json.dumps(list(AgentState.objects.using(alias).values_list("state", flat=True)))
        assert "I heard" not in stored and "4539" not in stored  # sealed
        browser = Client()
        browser.force_login(User.objects.db_manager(alias).create_superuser("root", "r@x.io", "pw"))
        page = browser.get(f"/admin/warlock_sessions/conversation/{session.id}/change/")
        assert page.status_code == 200 and b"I heard 3 things" in page.content
        assert b"hi, card [card]" in page.content
        counts = erase(Person(user=ana.pk))
        assert (counts["conversations"], counts["agent states"]) == (1, 1)
        assert (
            run(service.get_session(app_name="shop", user_id="ana", session_id=session.id)) is None
        )


KEYS = {"k1": PRIVACY["private"]["ENCRYPTION_KEYS"]["k1"]}


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
def test_in_the_operators_scope_each_session_keeps_its_tenants_shared_state(
    alias: str, sealed: bool
) -> None:
    """Two tenants with the same app and user names: the operator (every tenant's scope)
    reads and writes each session with its own tenant's app: and user: state."""
    settings: dict[str, Any] = {"TENANT_RESOLVER": "tests.test_tenants.tenant_of"}
    if sealed:
        settings["ENCRYPTION_KEYS"] = KEYS
    with override_settings(WARLOCK_SESSIONS=settings):
        service = WarlockSessionService(using=alias)
        for tenant in ("acme", "globex"):
            with tenant_scope(tenant):
                state = {"app:plan": f"{tenant}-plan", "user:name": f"{tenant}-user"}
                run(
                    service.create_session(
                        app_name="shop", user_id="u1", session_id=f"s-{tenant}", state=state
                    )
                )
        with tenant_scope(EVERY_TENANT):
            globex = run(service.get_session(app_name="shop", user_id="u1", session_id="s-globex"))
            assert globex.state == {"app:plan": "globex-plan", "user:name": "globex-user"}
            listed = run(service.list_sessions(app_name="shop", user_id="u1")).sessions
            assert {s.id: s.state["app:plan"] for s in listed} == {
                "s-acme": "acme-plan",
                "s-globex": "globex-plan",
            }
            run(service.append_event(globex, said("user", "hi", 1.0, **{"app:plan": "new"})))
        with tenant_scope("acme"):
            acme = run(service.get_session(app_name="shop", user_id="u1", session_id="s-acme"))
            assert acme.state["app:plan"] == "acme-plan"
        with tenant_scope("globex"):
            again = run(service.get_session(app_name="shop", user_id="u1", session_id="s-globex"))
            assert again.state["app:plan"] == "new"


def test_a_session_whose_conversation_went_frees_its_id(alias: str) -> None:
    service = WarlockSessionService(using=alias)
    run(service.create_session(app_name="shop", user_id="ana", session_id="gone"))
    Conversation.objects.using(alias).filter(id="gone").delete()  # the admin, a prune
    assert run(service.get_session(app_name="shop", user_id="ana", session_id="gone")) is None
    assert run(service.list_sessions(app_name="shop")).sessions == []
    again = run(service.create_session(app_name="shop", user_id="ana", session_id="gone"))
    assert again.id == "gone" and again.events == []


def test_ids_too_long_or_with_a_nul_are_refused_clearly(alias: str) -> None:
    service = WarlockSessionService(using=alias)
    for arguments in (
        {"app_name": "shop", "user_id": "ana", "session_id": "x" * 300},
        {"app_name": "shop\x00", "user_id": "ana"},
        {"app_name": "shop", "user_id": "a" * 300},
    ):
        with pytest.raises(InvalidInputError):
            run(service.create_session(**arguments))


@ON_POSTGRES
def test_two_appends_at_once_to_a_session_read_elsewhere_both_land(alias: str) -> None:
    """A session built by hand or listed carries no version: its appends are serialised
    rather than raced (each finds the other's event)."""
    service = WarlockSessionService(using=alias)
    run(service.create_session(app_name="shop", user_id="ana", session_id="unread"))
    listed = run(service.list_sessions(app_name="shop")).sessions[0]
    failures: list[BaseException] = []

    def append(text: str, at: float) -> None:
        try:
            run(service.append_event(listed.model_copy(deep=True), said("user", text, at)))
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=append, args=(text, at))
        for text, at in (("one", 1.0), ("two", 2.0))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    kept = run(service.get_session(app_name="shop", user_id="ana", session_id="unread"))
    assert sorted(event.content.parts[0].text for event in kept.events) == ["one", "two"]
