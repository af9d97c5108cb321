"""The demo's OpenAI Agents SDK agent (``/helper/``): a shop helper written with the SDK, its
replies kept, pushed and handed to a person by this app (``AgentModel``).

``ShopModel`` is a small offline model of the SDK's ``Model`` interface, so the page needs no
key: it looks the menu up with the agent's tool when asked about it, and otherwise says what
it can do. Put a real model in its place (``Agent(model="gpt-4.1-mini")``) and nothing else
changes.
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent as SdkAgent
from agents import ModelResponse, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from warlock_sessions.engine import Agent
from warlock_sessions.frameworks.openai_agents import AgentModel

from .agents import HANDOVER

MENU = {"margherita": 9.5, "pepperoni": 11.0, "quattro formaggi": 12.5}


@function_tool
def menu() -> str:
    """Today's pizzas and their prices, in euros."""
    return json.dumps(MENU)


def _said(text: str, index: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg-{index}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ShopModel(Model):
    """Answers from what it was given: the menu tool's output when it has it, a call of the
    tool when asked about the menu or prices, else what it can do."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [input] if isinstance(input, str) else list(input)
        last = items[-1] if items else {}
        last = last if isinstance(last, dict) else {"role": "user", "content": str(last)}
        if last.get("type") == "function_call_output":
            prices = json.loads(last["output"])
            listed = ", ".join(f"{name} {price:.2f} €" for name, price in prices.items())
            output: Any = _said(f"Today's pizzas: {listed}.", len(items))
        elif any(
            word in str(last.get("content", "")).lower() for word in ("menu", "price", "pizza")
        ):
            output = ResponseFunctionToolCall(
                id=f"fc-{len(items)}",
                call_id=f"call-{len(items)}",
                type="function_call",
                name="menu",
                arguments="{}",
            )
        else:
            output = _said(
                "I'm the shop's helper, written with the OpenAI Agents SDK: ask me for the "
                'menu, or say "talk to a person" for one of us.',
                len(items),
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the demo's offline model answers whole replies only")


def helper_agent() -> Agent:
    """This app's agent whose replies the SDK agent writes (``AGENTS["helper"]``)."""
    set_tracing_disabled(True)  # the SDK's traces would go to OpenAI's servers: none offline
    shop = SdkAgent(
        name="shop helper",
        instructions="Help customers of a pizza shop; look prices up with the menu tool.",
        model=ShopModel(),
        tools=[menu],
    )
    return Agent(
        [], idle={"prompt": ""}, model=AgentModel(shop), name="helper", interrupts=[HANDOVER]
    )
