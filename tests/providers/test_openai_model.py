"""OpenAICompatibleModel against a real HTTP server on 127.0.0.1 speaking the OpenAI format."""

from __future__ import annotations

import dataclasses
import json
import socket
from datetime import UTC, datetime
from typing import Any

import pytest

from warlock_sessions.engine import (
    Agent,
    Deferral,
    FakeClock,
    ProviderError,
    Spoken,
    turn,
)
from warlock_sessions.engine.ports import SpeakRequest, TalkRequest, UnderstandRequest
from warlock_sessions.providers.openai import (
    MessageDeltas,
    OpenAICompatibleModel,
    classify,
    reset_delay_ms,
)
from warlock_sessions.providers.openai.prompts import speak_messages

from .openai_server import OpenAIServer, completion, stream_chunks

T0 = datetime(2026, 9, 20, 10, tzinfo=UTC)
T0_MS = 1789898400000

AGENT = Agent(
    [
        {
            "id": "agendar",
            "on": [{"message": ["agendar"]}],
            "steps": [
                {"id": "q", "collect": ["nome", "email"], "prompt": "Colete os dados para agendar."}
            ],
        },
        {
            "id": "cupom",
            "on": [{"mention": ["cupom"], "extract": {"codigo": {"type": "string"}}}],
            "steps": [{"id": "s", "say": "ok"}],
        },
    ],
    fields={"nome": {"type": "string"}, "email": {"type": "string", "format": "email"}},
    tools=[
        {
            "id": "horarios",
            "description": "Lista horários livres",
            "parameters": {"type": "object", "properties": {"dia": {"type": "string"}}},
            "run": lambda args: {"livres": ["10h", "14h"], "dia": args.get("dia")},
        }
    ],
)


def model_for(server: OpenAIServer, **options: Any) -> OpenAICompatibleModel:
    options.setdefault("timeout", 2.0)
    return OpenAICompatibleModel(server.url, "test-model", api_key="sk-secret-123", **options)


def understand_request() -> UnderstandRequest:
    flow = AGENT.flows["agendar"]
    return UnderstandRequest(
        text="quero agendar, tenho cupom X1",
        history=[],
        context=None,
        data={},
        now=T0,
        floor_run=None,
        floor_flow=None,
        message_flows=[flow],
        mention_flows=[AGENT.flows["cupom"]],
        branches=[],
        fields={"nome": AGENT.fields["nome"]},
    )


def speak_request(
    text: str | None = "Ana, ana@example.com", tools: list[Any] | None = None
) -> SpeakRequest:
    flow = AGENT.flows["agendar"]
    run = {
        "id": "agendar#m1",
        "input": None,
        "startedAt": "2026-09-20T09:00:00.000Z",
        "asked": {},
        "outcomes": [],
    }
    return SpeakRequest(
        talk=TalkRequest(run=run, flow=flow, step=flow.steps[0], pending=["nome", "email"]),
        input_kind="message" if text else "wake",
        text=text,
        context=None,
        data={},
        history=[],
        now=T0,
        instructions=["Seja breve."],
        tools=tools or [],
        fields=AGENT.fields,
    )


def envelope(message: str = "Oi Ana! Anotado.", **fields: Any) -> str:
    return json.dumps(
        {"message": message, "nome": fields.get("nome"), "email": fields.get("email")},
        ensure_ascii=False,
    )


def test_understand_sends_one_schema_constrained_completion(server: OpenAIServer) -> None:
    judged = {
        "flows": {"agendar": 92},
        "mentions": {"cupom": True},
        "extract": {"cupom": {"codigo": "X1"}},
        "branches": {},
        "fields": {"nome": None},
    }
    server.script.reply(json=completion(json.dumps(judged)))

    understanding = model_for(server).understand(understand_request())

    assert (understanding.flows, understanding.mentions, understanding.extract) == (
        {"agendar": 92},
        {"cupom": True},
        {"cupom": {"codigo": "X1"}},
    )
    assert understanding.fields == {} and understanding.llm_calls == 1
    [request] = server.script.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-secret-123"
    schema = request["body"]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["flows"]["required"] == ["agendar"]
    assert schema["properties"]["fields"]["properties"]["nome"] == {"type": ["string", "null"]}


#: What llama-cpp-python 0.3.36 answers a json_schema response format (recorded): a 500.
LLAMA_REFUSES_JSON_SCHEMA = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema'}",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def test_a_server_refusing_a_format_is_asked_on_the_next_rung_once_and_for_all(
    server: OpenAIServer,
) -> None:
    """llama-cpp-python refuses json_schema with a 500, which was taken for an outage and
    retried for ever; it enforces ``{"type": "json_object", "schema": …}``."""
    judged = {"flows": {"agendar": 50}, "mentions": {}, "extract": {}, "branches": {}, "fields": {}}
    server.script.reply(status=500, json=LLAMA_REFUSES_JSON_SCHEMA)
    server.script.reply(json=completion(json.dumps(judged)))
    server.script.reply(json=completion(json.dumps(judged)))
    model = model_for(server)

    assert model.understand(understand_request()).flows == {"agendar": 50}
    assert model.understand(understand_request()).flows == {"agendar": 50}
    assert model.structured_output == "json_object"

    formats = [request["body"]["response_format"] for request in server.script.requests]
    assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
    assert formats[1]["schema"]["properties"]["flows"]["required"] == ["agendar"]
    assert "JSON schema" in server.script.requests[1]["body"]["messages"][0]["content"]


def test_a_server_refusing_every_format_gets_the_schema_in_the_prompt_alone(
    server: OpenAIServer,
) -> None:
    judged = {"flows": {"agendar": 50}, "mentions": {}, "extract": {}, "branches": {}, "fields": {}}
    server.script.reply(
        status=400, json={"error": {"message": "response_format json_schema is not supported"}}
    )
    server.script.reply(status=422, json={"detail": "response_format: json_object unsupported"})
    server.script.reply(json=completion("```json\n" + json.dumps(judged) + "\n```"))
    model = model_for(server)

    assert model.understand(understand_request()).flows == {"agendar": 50}
    bodies = [request["body"] for request in server.script.requests]
    assert "response_format" not in bodies[2] and model.structured_output == "prompt"


def test_speak_streams_the_message_text_and_parses_the_envelope(server: OpenAIServer) -> None:
    server.script.reply(
        sse=stream_chunks(
            envelope('Oi "Ana"!\nÉ ana@example.com?', nome="Ana", email="ana@example.com"), size=5
        )
    )
    shown: list[str] = []

    spoken = model_for(server).streaming(shown.append).speak(speak_request())

    assert isinstance(spoken, Spoken)
    assert spoken.message == 'Oi "Ana"!\nÉ ana@example.com?'
    assert "".join(shown) == spoken.message and len(shown) > 3
    assert spoken.fields == {"nome": "Ana", "email": "ana@example.com"} and spoken.llm_calls == 1
    body = server.script.requests[0]["body"]
    assert body["stream"] is True
    assert "Seja breve." in body["messages"][0]["content"]
    assert body["messages"][-1] == {"role": "user", "content": "Ana, ana@example.com"}


def test_a_tool_round_runs_the_tool_and_merges_its_data(server: OpenAIServer) -> None:
    call = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "horarios", "arguments": '{"dia": "amanh'},
                        }
                    ]
                },
                "finish_reason": None,
            }
        ]
    }
    rest = {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'ã"}'}}]},
                "finish_reason": "tool_calls",
            }
        ]
    }
    server.script.reply(sse=[call, rest])
    server.script.reply(sse=stream_chunks(envelope("Tenho 10h e 14h.")))

    spoken = model_for(server).speak(speak_request(tools=AGENT.tools))

    assert isinstance(spoken, Spoken) and spoken.llm_calls == 2
    assert spoken.data == {"livres": ["10h", "14h"], "dia": "amanhã"}
    assert spoken.tool_calls == [{"toolName": "horarios", "arguments": {"dia": "amanhã"}}]
    second = server.script.requests[1]["body"]["messages"]
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["livres"] == [
        "10h",
        "14h",
    ]
    assert server.script.requests[0]["body"]["tools"][0]["function"]["name"] == "horarios"


def test_a_malformed_reply_gets_one_repair_attempt(server: OpenAIServer) -> None:
    server.script.reply(sse=stream_chunks("Oi Ana! (sem JSON)"))
    server.script.reply(json=completion(envelope("Oi Ana!")))
    spoken = model_for(server).speak(speak_request())
    assert isinstance(spoken, Spoken) and spoken.message == "Oi Ana!" and spoken.llm_calls == 2
    assert server.script.requests[1]["body"]["messages"][-1]["content"].startswith(
        "Your previous reply"
    )

    server.script.reply(sse=stream_chunks("still not json"))
    server.script.reply(json=completion("nope"))
    failed = model_for(server).speak(speak_request())
    assert failed == Deferral(
        code="provider-invalid", retryable=False, reset_at_ms=None, llm_calls=2
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            {
                "status": 429,
                "headers": {"Retry-After": "30"},
                "json": {"error": {"message": "Rate limit"}},
            },
            ("provider-unavailable", True, T0_MS + 30_000),
        ),
        (
            {
                "status": 429,
                "headers": {
                    "x-ratelimit-reset-requests": "6m0s",
                    "x-ratelimit-reset-tokens": "20ms",
                },
                "json": {
                    "error": {
                        "code": "insufficient_quota",
                        "message": "You exceeded your current quota",
                    }
                },
            },
            ("provider-quota", True, T0_MS + 360_000),
        ),
        (
            {"status": 429, "json": {"error": {"code": "insufficient_quota", "message": "quota"}}},
            ("provider-quota", False, None),
        ),
        (
            {"status": 401, "json": {"error": {"message": "Incorrect API key provided"}}},
            ("provider-auth", False, None),
        ),
        (
            {"status": 403, "json": {"error": {"message": "forbidden"}}},
            ("provider-auth", False, None),
        ),
        ({"status": 500, "raw": "<html>oops</html>"}, ("provider-unavailable", True, None)),
        (
            {"status": 503, "json": {"error": {"message": "overloaded"}}},
            ("provider-unavailable", True, None),
        ),
        (
            {
                "status": 400,
                "json": {
                    "error": {
                        "code": "context_length_exceeded",
                        "message": "This model's maximum context length is 8192 tokens",
                    }
                },
            },
            ("provider-context", False, None),
        ),
        (
            {"status": 404, "json": {"error": {"message": "The model `gpt-9` does not exist"}}},
            ("provider-invalid", False, None),
        ),
        (
            {
                "sse": [
                    {
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": '{"message": "x'},
                                "finish_reason": "content_filter",
                            }
                        ]
                    }
                ]
            },
            ("provider-invalid", False, None),
        ),
        (
            {
                "sse": [
                    {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]}
                ]
            },
            ("provider-unavailable", True, None),
        ),
        (
            {
                "sse": stream_chunks(envelope("Olá, tudo certo por aqui e com você?")),
                "cut_after": 3,
            },
            ("provider-unavailable", True, None),
        ),
        ({"sse": stream_chunks(envelope()), "delay": 3}, ("provider-unavailable", True, None)),
    ],
)
def test_speak_failures_are_classified(
    server: OpenAIServer, reply: dict[str, Any], expected: tuple[str, bool, int | None]
) -> None:
    server.script.reply(**reply)
    outcome = model_for(server, timeout=1.0).speak(speak_request())
    assert isinstance(outcome, Deferral)
    assert (outcome.code, outcome.retryable, outcome.reset_at_ms) == expected


def test_an_unreachable_server_is_unavailable_and_the_key_never_leaks() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(
        f"http://127.0.0.1:{port}/v1", "m", api_key="sk-secret-123", timeout=1
    )
    outcome = model.speak(speak_request())
    assert isinstance(outcome, Deferral) and (outcome.code, outcome.retryable) == (
        "provider-unavailable",
        True,
    )
    with pytest.raises(ProviderError) as caught:
        model.understand(understand_request())
    assert "sk-secret" not in repr(model) and "sk-secret" not in str(caught.value)


def test_understand_failures_raise(server: OpenAIServer) -> None:
    server.script.reply(status=401, json={"error": {"message": "bad key"}})
    with pytest.raises(ProviderError) as caught:
        model_for(server).understand(understand_request())
    assert caught.value.code == "provider-auth"


def test_through_turn_a_rate_limited_reply_parks_a_retry_at_the_stated_reset(
    server: OpenAIServer,
) -> None:
    judged = {
        "flows": {"agendar": 95},
        "mentions": {"cupom": False},
        "extract": {},
        "branches": {},
        "fields": {"nome": None, "email": "ana@example.com"},
    }
    server.script.reply(json=completion(json.dumps(judged)))
    server.script.reply(
        status=429, headers={"Retry-After": "600"}, json={"error": {"message": "slow down"}}
    )

    result = turn(
        agent=AGENT,
        session_id="s1",
        message={"text": "quero agendar: ana@example.com", "id": "m1"},
        clock=FakeClock(T0_MS),
        model=model_for(server),
    )

    assert result.session["data"] == {"email": "ana@example.com"}
    assert result.schedule == [
        {"key": f"agendar#m1:q:1:retry:{T0_MS + 600_000}", "at": "2026-09-20T10:10:00.000Z"}
    ]
    assert [(x["status"], x.get("code")) for x in result.outcomes][-1] == (
        "deferred",
        "provider-unavailable",
    )
    assert result.llm_calls == 2


def test_through_turn_a_normal_exchange(server: OpenAIServer) -> None:
    judged = {
        "flows": {"agendar": 95},
        "mentions": {"cupom": False},
        "extract": {},
        "branches": {},
        "fields": {"nome": None, "email": None},
    }
    server.script.reply(json=completion(json.dumps(judged)))
    server.script.reply(sse=stream_chunks(envelope("Claro! Qual o seu nome e e-mail?")))
    result = turn(
        agent=AGENT,
        session_id="s1",
        message={"text": "quero agendar", "id": "m1"},
        clock=FakeClock(T0_MS),
        model=model_for(server),
    )
    assert [(m["kind"], m["text"], m["key"]) for m in result.messages] == [
        ("ai", "Claro! Qual o seu nome e e-mail?", "agendar#m1:q:1")
    ]


def test_message_deltas_handle_split_escapes() -> None:
    deltas = MessageDeltas()
    text = json.dumps({"nome": "x", "message": 'a"b\\nc é \u00e9 😀 end'})
    shown = "".join(deltas.feed(text[i : i + 1]) for i in range(len(text)))
    assert shown == 'a"b\\nc é é 😀 end'


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAICompatibleModel("api.openai.com/v1", "gpt-4o-mini")
    with pytest.raises(ValueError, match="model must name"):
        OpenAICompatibleModel("https://api.openai.com/v1", "")


def test_reset_headers_in_http_date_form() -> None:
    error = classify(
        429, {"error": {"message": "rate"}}, {"retry-after": "Sun, 20 Sep 2026 10:05:00 GMT"}, T0
    )
    assert error.reset_at_ms == T0_MS + 300_000


@pytest.mark.parametrize(
    ("header", "delay_ms"),
    [
        ("Sun, 20 Sep 2026 10:05:00 -0000", 300_000),  # a naive date: read as UTC
        ("soon", None),  # neither seconds nor a date: no advice, no crash
        ("", None),
    ],
)
def test_odd_retry_after_headers_never_fail_the_turn(header: str, delay_ms: int | None) -> None:
    assert reset_delay_ms({"retry-after": header}, T0) == delay_ms


def test_a_talk_step_with_nothing_left_to_ask_still_sees_what_is_known() -> None:
    request = speak_request()
    request = dataclasses.replace(
        request,
        talk=dataclasses.replace(request.talk, pending=[]),
        data={"nome": "Ana", "email": ""},
    )
    system = speak_messages(request)[0]["content"]
    assert 'Known so far: {"nome": "Ana"}' in system
    assert "still missing" not in system
