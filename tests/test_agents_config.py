"""Agents and models from WARLOCK_SESSIONS, and the checks that guard them."""

from __future__ import annotations

import pytest
from django.core import checks
from django.test import override_settings

from tests.checks import warlock_check_ids
from warlock_sessions.agents import get_agent, get_model
from warlock_sessions.errors import AgentNotConfiguredError
from warlock_sessions.providers import OpenAICompatibleModel, RuleModel


def configure(**settings: object) -> override_settings:
    return override_settings(WARLOCK_SESSIONS=settings)


def test_agents_by_import_string_or_factory_with_a_configured_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-from-env")
    with configure(
        AGENTS={
            "ready": "tests.configured_agents.ready_agent",
            "built": {"AGENT": "tests.configured_agents.build_agent", "MODEL": "llm"},
        },
        DEFAULT_AGENT="ready",
        MODELS={
            "llm": {
                "BASE_URL": "http://127.0.0.1:9/v1",
                "MODEL": "m",
                "API_KEY_ENV": "TEST_LLM_KEY",
                "OPTIONS": {"timeout": 5},
            }
        },
    ):
        assert isinstance(get_agent().model, RuleModel)
        built = get_agent("built")
        assert built is get_agent("built")
        assert isinstance(built.model, OpenAICompatibleModel)
        assert built.model._client._http.headers["Authorization"] == "Bearer sk-from-env"
        assert get_model("llm") is built.model
        assert warlock_check_ids() == []
        with pytest.raises(
            AgentNotConfiguredError, match=r"no agent 'nope'.*configured: built, ready"
        ):
            get_agent("nope")


def test_a_single_agent_is_the_default_and_two_need_a_choice() -> None:
    with configure(AGENTS={"only": "tests.configured_agents.ready_agent"}):
        assert get_agent() is get_agent("only")
    with (
        configure(
            AGENTS={
                "a": "tests.configured_agents.ready_agent",
                "b": "tests.configured_agents.build_agent",
            }
        ),
        pytest.raises(AgentNotConfiguredError, match="DEFAULT_AGENT"),
    ):
        get_agent()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"AGENTS": {"x": "tests.configured_agents.broken_agent"}}, ["warlock_sessions.E006"]),
        ({"AGENTS": {"x": "tests.configured_agents.nowhere"}}, ["warlock_sessions.E006"]),
        ({"AGENTS": {"x": "tests.configured_agents.not_an_agent"}}, ["warlock_sessions.E006"]),
        (
            {"AGENTS": {"x": {"AGENT": "tests.configured_agents.build_agent", "MODEL": "gpt"}}},
            ["warlock_sessions.E009"],
        ),
        ({"AGENTS": {}, "DEFAULT_AGENT": "support"}, ["warlock_sessions.E013"]),
        ({"AGENTS": {"x": "tests.configured_agents.build_agent"}}, ["warlock_sessions.E033"]),
        (
            {
                "AGENTS": {"x": {"AGENT": "tests.configured_agents.build_agent", "MODEL": "r"}},
                "MODELS": {"r": {"CLASS": "warlock_sessions.providers.RuleModel"}},
            },
            [],
        ),
        ({"MODELS": {"m": {"CLASS": "nowhere.Model"}}}, ["warlock_sessions.E007"]),
        (
            {
                "MODELS": {
                    "m": {"BASE_URL": "http://x/v1", "MODEL": "m", "OPTIONS": {"temprature": 1}}
                }
            },
            ["warlock_sessions.E007"],
        ),
        (
            {"MODELS": {"m": {"BASE_URL": "api.openai.com", "MODEL": "m"}}},
            ["warlock_sessions.E008"],
        ),
        (
            {
                "MODELS": {
                    "m": {
                        "BASE_URL": "https://api.openai.com/v1",
                        "MODEL": "m",
                        "API_KEY_ENV": "NOT_SET_X",
                    }
                }
            },
            ["warlock_sessions.W002"],
        ),
        ({"MODELS": {"m": {"BASE_URL": "http://localhost:11434/v1", "MODEL": "llama3"}}}, []),
        ({"MODELS": {"rules": {"CLASS": "warlock_sessions.providers.RuleModel"}}}, []),
    ],
)
def test_misconfigured_agents_and_models_are_reported(
    settings: dict[str, object], expected: list[str]
) -> None:
    with configure(**settings):
        assert warlock_check_ids() == expected


def test_the_check_message_names_the_bad_flow_path() -> None:
    with configure(AGENTS={"x": "tests.configured_agents.broken_agent"}):
        [message] = [m for m in checks.run_checks() if m.id == "warlock_sessions.E006"]
    assert "flows[0].steps[0].wait" in message.msg


def test_the_key_is_never_in_a_check_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_KEY_ENV", "sk-very-secret")
    with configure(
        MODELS={"m": {"BASE_URL": "nope", "MODEL": "m", "API_KEY_ENV": "SECRET_KEY_ENV"}}
    ):
        text = " ".join(f"{m.msg} {m.hint}" for m in checks.run_checks())
    assert "sk-very-secret" not in text


@pytest.mark.django_db
def test_an_agent_without_a_model_is_refused_by_the_checks_and_never_answers_500() -> None:
    """It loaded as "ok", then its first turn was a 500 server-error (NoModelError)."""
    from django.core.management import call_command
    from django.core.management.base import CommandError
    from rest_framework.test import APIClient

    with configure(AGENTS={"bare": "tests.configured_agents.booking_without_a_model"}):
        with pytest.raises(CommandError, match="1 of 1 agents are broken"):
            call_command("warlock_flows", "check")
        answer = APIClient().post(
            "/api/sessions/no-model/turn/",
            {"message": {"text": "I'd like to book", "id": "m1"}},
            format="json",
        )
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "no-model"


@pytest.mark.django_db(transaction=True)
def test_a_socket_on_an_agent_without_a_model_gets_an_error_frame_not_server_error() -> None:
    from asgiref.sync import async_to_sync
    from channels.auth import AuthMiddlewareStack
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from tests.realtime.test_session_socket import cookie_for
    from warlock_sessions.realtime.routing import websocket_urlpatterns

    async def first_frame(cookie: bytes) -> dict[str, object]:
        chat = WebsocketCommunicator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
            "/ws/sessions/no-model-socket/",
            headers=[(b"cookie", cookie)],
        )
        assert (await chat.connect())[0]
        await chat.send_json_to({"type": "message", "text": "I'd like to book", "id": "m1"})
        frame: dict[str, object] = await chat.receive_json_from(timeout=10)
        await chat.disconnect()
        return frame

    with configure(AGENTS={"bare": "tests.configured_agents.booking_without_a_model"}):
        frame = async_to_sync(first_frame)(cookie_for("ana"))
    assert (frame["type"], frame["code"]) == ("error", "no-model"), frame
