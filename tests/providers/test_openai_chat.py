"""OpenAICompatibleModel's chat port, and a ToolAgent on it, against a real HTTP server on
127.0.0.1: streamed text, tool calls in pieces, tool results and attachments on the wire,
summaries, failures as the run's error."""

from __future__ import annotations

import base64
from typing import Any

from warlock_sessions.conversations import ToolAgent, session, tool
from warlock_sessions.engine import ProviderError
from warlock_sessions.providers.openai import OpenAICompatibleModel
from warlock_sessions.snapshots import MemorySnapshotStore

from .openai_server import OpenAIServer, stream_chunks


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "clear"}


def tool_call_chunks(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    """A tool call whose arguments arrive in two pieces, then its finish."""
    half = len(arguments) // 2
    pieces = [
        {"index": 0, "id": call_id, "type": "function",
         "function": {"name": name, "arguments": arguments[:half]}},
        {"index": 0, "function": {"arguments": arguments[half:]}},
    ]  # fmt: skip
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": None}]}
        for piece in pieces
    ]
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    return [*chunks, done, {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}]


def test_a_tool_agent_on_the_wire(server: OpenAIServer) -> None:
    server.script.reply(sse=tool_call_chunks("call_9", "weather", '{"city": "Lisboa"}'))
    server.script.reply(sse=stream_chunks("It is clear in Lisboa.", size=5))
    model = OpenAICompatibleModel(server.url, "gpt-test", api_key="sk-1", timeout=2)
    chat = session("w", MemorySnapshotStore(), ToolAgent(model, "Be brief.", [weather]))
    stream = chat.stream("weather in Lisboa?")
    events = list(stream)
    result = stream.result

    assert result.error is None and result.text == "It is clear in Lisboa."
    assert events[0] == {
        "type": "tool-call", "id": "call_9", "name": "weather", "input": {"city": "Lisboa"},
    }  # fmt: skip
    assert [e["text"] for e in events if e["type"] == "delta"] == [
        "It is", " clea", "r in ", "Lisbo", "a.",
    ]  # fmt: skip
    assert result.usage["input_tokens"] == 20

    first, second = (request["body"] for request in server.script.requests)
    assert first["stream"] is True and "response_format" not in first
    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather in Lisboa?"},
    ]
    assert first["tools"][0]["function"]["name"] == "weather"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert second["messages"][2] == {
        "role": "assistant",
        "content": "",  # never null: llama.cpp's servers refuse it
        "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Lisboa"}'}},
        ],
    }  # fmt: skip
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": '{"output": {"city": "Lisboa", "sky": "clear"}}',
    }
    assert server.script.requests[0]["headers"]["Authorization"] == "Bearer sk-1"


def test_attachments_go_as_content_parts(server: OpenAIServer) -> None:
    server.script.reply(sse=stream_chunks("Seen."))
    model = OpenAICompatibleModel(server.url, "gpt-test", timeout=2)
    png = base64.b64encode(b"\x89PNG").decode()
    ToolAgent(model).execute(
        [
            {"type": "text", "text": "look"},
            {"type": "image", "name": "a.png", "mediaType": "image/png", "data": png},
            {"type": "file", "name": "n.txt", "mediaType": "text/plain",
             "data": base64.b64encode(b"hello").decode()},
            {"type": "file", "name": "r.pdf", "mediaType": "application/pdf", "data": "JVBE"},
        ]
    )  # fmt: skip
    content = server.script.requests[0]["body"]["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "text", "text": "[n.txt]\nhello"},
        {"type": "file", "file": {"filename": "r.pdf",
                                  "file_data": "data:application/pdf;base64,JVBE"}},
    ]  # fmt: skip


def test_a_failing_server_fails_the_run_and_the_turn_is_not_stored(server: OpenAIServer) -> None:
    server.script.reply(status=429, json={"error": {"message": "slow down"}})
    model = OpenAICompatibleModel(server.url, "gpt-test", timeout=2)
    chat = session("f", MemorySnapshotStore(), ToolAgent(model))
    result = chat.send("hi")
    assert isinstance(result.error, ProviderError) and result.error.code == "provider-unavailable"
    assert chat.history() == []


def test_summaries_for_compaction(server: OpenAIServer) -> None:
    server.script.reply(sse=stream_chunks("Sara booked a table."))
    model = OpenAICompatibleModel(server.url, "gpt-test", timeout=2)
    text = model.summarize([{"role": "user", "content": "I am Sara, book a table"}])
    assert text == "Sara booked a table."
    sent = server.script.requests[0]["body"]["messages"]
    assert sent[0]["role"] == "system" and sent[1]["content"] == "user: I am Sara, book a table"
