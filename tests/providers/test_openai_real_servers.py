"""What real OpenAI-compatible servers do that the fake server did not, each reproduced on it
as llama-cpp-python 0.3.36 does it (wire logs of the real exchange; docs/providers.md), and
what the provider makes of it."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from warlock_sessions.engine import Deferral, ProviderError
from warlock_sessions.providers.openai import OpenAICompatibleModel

from .openai_server import OpenAIServer, completion, stream_chunks
from .test_openai_model import envelope, model_for, speak_request


def repeated_name_chunks(arguments: list[str]) -> list[dict[str, Any]]:
    """A streamed tool call as llama-cpp-python sends it: the id, type and name again in every
    delta, the arguments in pieces."""
    return [
        *[
            {"choices": [{"index": 0, "finish_reason": None, "delta": {
                "role": None, "content": None,
                "tool_calls": [{"index": 0, "id": "call__0_calculate", "type": "function",
                                "function": {"name": "calculate", "arguments": piece}}]}}]}
            for piece in arguments
        ],
        {"choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}]},
    ]  # fmt: skip


TOOLS = [
    {
        "id": "calculate",
        "description": "Evaluate arithmetic",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        "run": lambda args: {"result": 84, "expression": args.get("expression")},
    }
]


def test_a_tool_call_whose_name_comes_again_in_every_delta_is_called_by_its_name(
    server: OpenAIServer,
) -> None:
    """The name was appended from every delta: 'calculatecalculate…', then 'no such tool'."""
    server.script.reply(sse=repeated_name_chunks(['{"expression": ', '"12*7"', "}"]))
    server.script.reply(sse=stream_chunks(envelope("12 x 7 = 84")))
    spoken = model_for(server).speak(speak_request(tools=TOOLS))

    assert not isinstance(spoken, Deferral)
    assert spoken.tool_calls == [{"toolName": "calculate", "arguments": {"expression": "12*7"}}]
    second = server.script.requests[1]["body"]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "calculate",
        "arguments": '{"expression": "12*7"}',
    }
    assert second[-2]["content"] == ""  # llama-cpp-python refuses null here (a 500)
    assert second[-1]["content"] == '{"result": 84, "expression": "12*7"}'


def test_tools_are_offered_with_tool_choice_and_go_unstreamed_where_a_stream_cannot_carry_them(
    server: OpenAIServer,
) -> None:
    """Without tool_choice llama-cpp-python offers no tool; with "auto" it answers a stream
    200 and nothing at all, once reported as "the stream ended before the reply"."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "calculate", "arguments": '{"expression": "12*7"}'}}  # fmt: skip
    unstreamed = completion("", finish_reason="tool_calls")
    unstreamed["choices"][0]["message"] = {"role": "assistant", "content": None,
                                           "tool_calls": [call]}  # fmt: skip
    server.script.reply(sse=[], done=False)  # the empty stream
    server.script.reply(json=unstreamed)
    server.script.reply(json=completion(envelope("84")))
    model = model_for(server)

    spoken = model.speak(speak_request(tools=TOOLS))
    assert not isinstance(spoken, Deferral) and spoken.message == "84"
    first, second, third = (request["body"] for request in server.script.requests)
    assert first["stream"] is True and first["tool_choice"] == "auto"
    assert "stream" not in second and second["tool_choice"] == "auto"
    assert "stream" not in third  # remembered: tools go unstreamed on this server from now on


def test_a_streamed_overflow_answered_with_an_empty_stream_is_asked_unstreamed_and_not_retried(
    server: OpenAIServer,
) -> None:
    overflow = {
        "error": {
            "code": 400,
            "message": "request (5012 tokens) exceeds the available context size (4096 tokens)",
            "type": "exceed_context_size_error",
        }
    }
    server.script.reply(sse=[], done=False)
    server.script.reply(status=400, json=overflow)
    spoken = model_for(server).speak(speak_request())
    assert isinstance(spoken, Deferral)
    assert (spoken.code, spoken.retryable) == ("provider-context", False)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"code": 400, "message": "the request exceeds the available context size",
             "type": "exceed_context_size_error"},
            ("provider-context", False),
        ),
        (
            {"message": "Incorrect API key", "type": "authentication_error"},
            ("provider-auth", False),
        ),
        ({"message": "overloaded", "type": "server_error"}, ("provider-unavailable", True)),
    ],
)  # fmt: skip
def test_an_error_event_inside_a_200_stream_is_classified_by_what_it_says(
    server: OpenAIServer, error: dict[str, Any], expected: tuple[str, bool]
) -> None:
    """Every such event was taken for a 500, so an overflow or a bad key was retried."""
    server.script.reply(sse=[{"error": error}], done=False)
    spoken = model_for(server).speak(speak_request())
    assert isinstance(spoken, Deferral) and (spoken.code, spoken.retryable) == expected


def test_every_call_is_bounded_and_a_reply_cut_at_the_bound_is_a_failure_never_repaired(
    server: OpenAIServer,
) -> None:
    """A looping small model streamed to the context limit (410 to 503 s for one speak), the cut
    reply was accepted, and its repair replayed it whole and overflowed the context."""
    cut = stream_chunks('{"message": "Olá! Olá! Olá! Olá!')
    cut[-1]["choices"][0]["finish_reason"] = "length"
    server.script.reply(sse=cut)
    spoken = model_for(server, max_tokens=64).speak(speak_request())
    assert isinstance(spoken, Deferral)
    assert (spoken.code, spoken.retryable) == ("provider-invalid", False)
    [request] = server.script.requests  # no repair request
    assert request["body"]["max_tokens"] == 64
    server.script.reply(sse=cut)
    with pytest.raises(ProviderError, match="cut off at max_tokens"):
        model_for(server).chat([{"role": "user", "content": "oi"}], [], None)


def test_a_stream_that_keeps_coming_is_given_up_at_the_call_s_deadline(
    server: OpenAIServer,
) -> None:
    """Chunks kept arriving, so the read timeout never fired."""
    server.script.reply(sse=stream_chunks("Olá " * 200, size=4), event_delay=0.02)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="deadline") as raised:
        model_for(server, deadline=0.5).chat([{"role": "user", "content": "oi"}], [], None)
    assert time.monotonic() - started < 2.5
    assert (raised.value.code, raised.value.retryable) == ("provider-unavailable", True)


def test_usage_is_asked_for_in_streams_and_left_unknown_when_the_server_sends_none(
    server: OpenAIServer,
) -> None:
    server.script.reply(sse=stream_chunks("Oi!"))
    reply = model_for(server).chat([{"role": "user", "content": "oi"}], [], None)
    assert reply.usage == {}  # not {"input_tokens": 0, "output_tokens": 0}
    assert server.script.requests[0]["body"]["stream_options"] == {"include_usage": True}


def test_a_fastapi_error_body_is_read_for_its_detail(server: OpenAIServer) -> None:
    server.script.reply(status=404, json={"detail": "Model gemma-9b not found"})
    with pytest.raises(ProviderError, match="Model gemma-9b not found") as raised:
        model_for(server).chat([{"role": "user", "content": "oi"}], [], None)
    assert raised.value.code == "provider-invalid"


def test_a_refused_connection_is_said_so() -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    model = OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", "gemma", timeout=1.0)
    with pytest.raises(ProviderError, match="could not connect") as raised:
        model.chat([{"role": "user", "content": "oi"}], [], None)
    assert (raised.value.code, raised.value.retryable) == ("provider-unavailable", True)


def test_a_connection_the_server_dropped_is_tried_once_more_on_a_new_one(
    server: OpenAIServer,
) -> None:
    """After llama-cpp-python's empty stream the pooled connection was dead, and the
    unstreamed retry that would have said "context length exceeded" failed with a reset."""
    server.script.reply(drop=True)
    server.script.reply(sse=stream_chunks("Olá"))
    reply = model_for(server).chat([{"role": "user", "content": "oi"}], [], None)
    assert len(server.script.requests) == 2
    server.script.reply(drop=True)
    server.script.reply(drop=True)
    with pytest.raises(ProviderError) as raised:  # twice is not a stale connection
        model_for(server).chat([{"role": "user", "content": "oi"}], [], None)
    assert raised.value.retryable
    assert reply.text == "Olá"


def test_a_server_that_wants_max_completion_tokens_gets_it_from_then_on(
    server: OpenAIServer,
) -> None:
    """OpenAI's reasoning models refuse max_tokens; every call would have failed."""
    refusal = {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model."
            " Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    }
    server.script.reply(status=400, json=refusal)
    server.script.reply(sse=stream_chunks("Olá"))
    server.script.reply(sse=stream_chunks("Oi"))
    model = model_for(server, max_tokens=300)
    assert model.chat([{"role": "user", "content": "oi"}], [], None).text == "Olá"
    assert model.chat([{"role": "user", "content": "oi"}], [], None).text == "Oi"
    first, second, third = (request["body"] for request in server.script.requests)
    assert first["max_tokens"] == 300 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 300 and "max_tokens" not in second
    assert third["max_completion_tokens"] == 300


def test_an_older_vllm_error_body_is_read_and_moves_down_the_ladder(
    server: OpenAIServer,
) -> None:
    """vLLM before 0.10 answers {"object": "error", "message": …}: read as "no detail", a
    refused json_schema never moved down."""
    server.script.reply(
        status=400,
        json={"object": "error", "message": "response_format json_schema unsupported", "code": 400},
    )
    server.script.reply(sse=stream_chunks(envelope("Oi!")))
    spoken = model_for(server).speak(speak_request())
    assert not isinstance(spoken, Deferral) and spoken.message == "Oi!"
    formats = [r["body"].get("response_format", {}).get("type") for r in server.script.requests]
    assert formats == ["json_schema", "json_object"]


def test_a_server_that_takes_no_temperature_is_asked_without_one(server: OpenAIServer) -> None:
    """OpenAI's reasoning models refuse any temperature but the default."""
    refusal = {
        "error": {
            "message": "Unsupported value: 'temperature' does not support 0.2 with this model."
            " Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }
    server.script.reply(status=400, json=refusal)
    server.script.reply(sse=stream_chunks("Olá"))
    assert model_for(server).chat([{"role": "user", "content": "oi"}], [], None).text == "Olá"
    first, second = (request["body"] for request in server.script.requests)
    assert first["temperature"] == 0.2 and "temperature" not in second
