"""An agent written with the OpenAI Agents SDK chatting over the session socket
(``AgentModel``), as the demo's ``/helper/`` page does: its replies (a tool call of its own
included) reach the customer's socket and the log, a person takes the chat and answers in
its place, and hands it back. Then what ``AgentModel`` makes of the SDK's failures."""

from __future__ import annotations

from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import override_settings
from django.urls import re_path

pytest.importorskip("agents")
from agents import Agent as SdkAgent
from agents.exceptions import ModelBehaviorError
from agents.testing.model import ScriptedModel

from tests.realtime.test_handover_socket import shown
from tests.realtime.test_session_socket import LAYERS, cookie_for, until_turn
from warlock_sessions.engine import Agent
from warlock_sessions.frameworks.openai_agents import AgentModel
from warlock_sessions.host import Host
from warlock_sessions.models import Session, SessionEvent
from warlock_sessions.realtime.sessions import SessionConsumer

HELPER = {
    "AGENTS": {
        "booking": "example_project.demo.agents.booking_agent",
        "helper": "example_project.demo.helper.helper_agent",
    },
    "DEFAULT_AGENT": "booking",
}
APPLICATION = AuthMiddlewareStack(
    URLRouter(
        [re_path(r"^ws/helper/(?P<session_id>[^/]+)/$", SessionConsumer.as_asgi(agent="helper"))]
    )
)


async def socket(path: str, username: str) -> WebsocketCommunicator:
    from channels.db import database_sync_to_async

    cookie = await database_sync_to_async(cookie_for)(username)
    return WebsocketCommunicator(APPLICATION, path, headers=[(b"cookie", cookie)])


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_an_sdk_agent_answers_over_the_socket_and_a_person_takes_the_chat() -> None:
    with override_settings(WARLOCK_SESSIONS=HELPER, CHANNEL_LAYERS=LAYERS["memory"]):
        user = await socket("/ws/helper/sdk-chat/", "ana")
        assert (await user.connect())[0]
        await user.send_json_to({"type": "message", "text": "hello", "id": "m1"})
        first = shown(await until_turn(user))
        assert first[0] == ("user", "", "hello")
        assert first[1][0] == "bot" and "OpenAI Agents SDK" in first[1][2]
        await user.send_json_to({"type": "message", "text": "what's on the menu?", "id": "m2"})
        menu = shown(await until_turn(user))
        assert menu[-1] == (
            "bot",
            "",
            "Today's pizzas: margherita 9.50 €, pepperoni 11.00 €, quattro formaggi 12.50 €.",
        )
        row = await Session.objects.aget(id="sdk-chat")
        assert row.agent == "helper"

        staff = await socket("/ws/helper/sdk-chat/", "staff")
        assert (await staff.connect())[0]
        await staff.send_json_to({"type": "handover", "action": "take", "key": "t1"})
        # Taken from the bot: handed over, then taken, in one turn.
        assert shown(await until_turn(user)) == [
            ("handover", "waiting", ""),
            ("handover", "taken", "staff"),
        ]
        await staff.send_json_to(
            {"type": "handover", "action": "reply", "key": "r1", "text": "Ana here: 2 margheritas?"}
        )
        assert shown(await until_turn(user)) == [("staff", "staff", "Ana here: 2 margheritas?")]
        await user.send_json_to({"type": "message", "text": "yes please", "id": "m3"})
        assert shown(await until_turn(user)) == [("user", "", "yes please")]  # no bot reply
        await staff.send_json_to({"type": "handover", "action": "release", "key": "h1"})
        assert shown(await until_turn(user))[0] == ("handover", "released", "staff")
        kinds = [event.type async for event in SessionEvent.objects.filter(session_id="sdk-chat")]
        assert kinds.count("handover") == 3  # waiting, taken, released
        await user.disconnect()
        await staff.disconnect()


def helper_of(model: Any) -> Agent:
    return Agent(
        [], idle={"prompt": ""}, model=AgentModel(SdkAgent(name="h", model=model)), name="h"
    )


@pytest.mark.django_db
def test_a_failed_run_is_a_failed_reply_not_a_crash() -> None:
    async def broken(call: Any) -> Any:
        raise ModelBehaviorError("the model said nonsense")

    host = Host(helper_of(ScriptedModel([{"responder": broken}])))
    hosted = host.handle("sdk-broken", {"message": {"text": "hi", "id": "m1"}})
    assert hosted.messages == [] and "provider-invalid" in str(hosted.outcomes)
