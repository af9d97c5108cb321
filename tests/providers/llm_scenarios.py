"""What the provider is asked to do against a real server, each as a function of the model:
``make test-llm`` runs them on llama-cpp-python and records the exchanges (``cassettes``),
``make test`` runs them again on the recorded answers and expects the same requests and the
same outcome. Every outcome holds only what the provider decided, never a timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from example_project.demo.agents import booking_agent
from warlock_sessions.engine import FakeClock, ProviderError, turn
from warlock_sessions.engine.fields import coerce_field
from warlock_sessions.providers import OpenAICompatibleModel
from warlock_sessions.providers.chat import ToolSchema

Scenario = Callable[[OpenAICompatibleModel], dict[str, Any]]

BOOKING = [
    "Hi, I'd like to book an appointment",
    "My name is Ana Souza",
    "ana@example.com",
    "oi, quero marcar um horário",
]


def booking_conversation(model: OpenAICompatibleModel) -> dict[str, Any]:
    """The demo's booking agent, turn by turn: whatever the small model manages, nothing it
    stores may break its field's rules, and every turn ends (a reply or a deferral)."""
    return _booking(model, BOOKING)


def first_turn(model: OpenAICompatibleModel) -> dict[str, Any]:
    """One understand and one speak in the model's structured output mode, as configured."""
    return _booking(model, ["I want to book a table, my name is Ana Souza"])


def _booking(model: OpenAICompatibleModel, said: list[str]) -> dict[str, Any]:
    agent = booking_agent()
    clock = FakeClock("2026-09-20T10:00:00.000Z")
    session = None
    turns = []
    for index, text in enumerate(said):
        try:
            result = turn(
                agent=agent,
                session_id=f"llm-{index // 3}",
                session=session if index < 3 else None,
                message={"text": text, "id": f"m{index}"},
                clock=clock,
                model=model,
            )
        except ProviderError as error:  # understand raises; the host makes it the turn's error
            turns.append({"message": text, "error": str(error), "retryable": error.retryable})
            continue
        session = result.session
        data = session.get("data", {})
        turns.append(
            {
                "message": text,
                "code": result.code,
                "outcomes": [outcome.get("code") for outcome in result.outcomes],
                "replies": [message.get("text", "") for message in result.messages],
                "data": data,
                "language": (session.get("metadata") or {}).get("language"),
                "llm_calls": result.llm_calls,
                "stored_values_fit": all(
                    coerce_field(agent.fields[name], value, clock.now())[0]
                    for name, value in data.items()
                    if name in agent.fields
                ),
            }
        )
        clock.advance("1m")
    return {"turns": turns, "structured_output": model.structured_output}


CALCULATE = ToolSchema(
    name="calculate",
    description="Evaluate an arithmetic expression",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)


def tool_trip(model: OpenAICompatibleModel) -> dict[str, Any]:
    """The chat port offering a tool, then the tool's result sent back: the call comes by its
    own name, and the second trip is accepted (content empty text, never null)."""
    question = [
        {"role": "system", "content": "You are a helpful assistant with tools."},
        {"role": "user", "content": "What is 12*7? Use the calculate tool."},
    ]
    first = model.chat(question, [CALCULATE], None)
    outcome: dict[str, Any] = {
        "text": first.text,
        "calls": [[call["name"], call["input"]] for call in first.tool_calls],
        "usage_known": sorted(first.usage),
    }
    if first.tool_calls:
        call = first.tool_calls[0]
        answered = [
            *question,
            {"role": "assistant", "content": first.text, "toolCalls": [call]},
            {"role": "tool", "toolCallId": call["id"], "content": {"result": 84}},
        ]
        try:
            outcome["second"] = model.chat(answered, [CALCULATE], None).text
        except ProviderError as error:
            outcome["second"] = error.code
    return outcome


def streamed_reply(model: OpenAICompatibleModel) -> dict[str, Any]:
    """A plain streamed reply: its text in pieces as they come, usage where it is known; a
    small model that rambles to ``max_tokens`` is cut there, and that is a failed reply."""
    pieces: list[str] = []
    try:
        reply = model.chat(
            [
                {"role": "system", "content": "You are a friendly assistant."},
                {"role": "user", "content": "Say hello to Ana in one short sentence."},
            ],
            [],
            pieces.append,
        )
    except ProviderError as error:
        return {"error": error.code, "retryable": error.retryable, "pieces": len(pieces)}
    return {
        "text": reply.text,
        "pieces_join_to_the_text": "".join(pieces) == reply.text,
        "pieces": len(pieces),
        "usage_known": sorted(reply.usage),
    }


def summary(model: OpenAICompatibleModel) -> dict[str, Any]:
    """A ToolAgent's compaction: a conversation summarised, unstreamed, in a few sentences."""
    try:
        text = model.summarize(
            [
                {"role": "user", "content": "Hi, I'm Ana. I want to book a table for two."},
                {"role": "assistant", "content": "Hello Ana! For which day?"},
                {"role": "user", "content": "Friday at 8pm, please."},
            ]
        )
    except ProviderError as error:
        return {"error": error.code, "retryable": error.retryable}
    return {"summary": text}


def unknown_model(model: OpenAICompatibleModel) -> dict[str, Any]:
    """A model name the server does not have: llama-cpp-python serves its one model whatever
    the name (OpenAI and vLLM answer 404, which is ``provider-invalid``)."""
    try:
        reply = model.chat(
            [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say OK."},
            ],
            [],
            None,
        )
    except ProviderError as error:
        return {"error": str(error), "retryable": error.retryable}
    return {"answered": bool(reply.text)}


def context_overflow(model: OpenAICompatibleModel) -> dict[str, Any]:
    """A prompt over the server's context: llama-cpp-python streams it back empty; asked
    unstreamed, it says why, which is not worth a retry."""
    long_message = "Please remember this sentence about the weather in Lisbon. " * 400
    try:
        model.chat([{"role": "user", "content": long_message}], [], None)
    except ProviderError as error:
        return {"code": error.code, "retryable": error.retryable}
    return {"code": None}


SCENARIOS: dict[str, tuple[Scenario, dict[str, Any]]] = {
    # name: (scenario, the model's options; "tools" marks the server started for tool calls)
    "booking_conversation": (booking_conversation, {"max_tokens": 192}),
    "first_turn_json_object": (
        first_turn,
        {"max_tokens": 192, "structured_output": "json_object"},
    ),
    "first_turn_prompt": (first_turn, {"max_tokens": 192, "structured_output": "prompt"}),
    "summary": (summary, {"max_tokens": 160}),
    "unknown_model": (unknown_model, {"max_tokens": 64, "model": "no-such-model-9b"}),
    "tool_trip": (tool_trip, {"max_tokens": 96, "tools": True}),
    "streamed_reply": (streamed_reply, {"max_tokens": 160}),
    "context_overflow": (context_overflow, {"max_tokens": 16}),
}


def model_options(options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the model (the model's name and the server are the caller's)."""
    return {key: value for key, value in options.items() if key not in ("tools", "model")}
