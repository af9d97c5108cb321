"""OpenAICompatibleModel: the engine's ``understand`` and ``speak`` ports, and the chat port of a
``ToolAgent``, over the client."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from ...engine.agent import tool_id
from ...engine.ports import (
    Deferral,
    ProviderError,
    SpeakRequest,
    Spoken,
    Understanding,
    UnderstandRequest,
    deferral_of,
)
from ..chat import ChatReply, Message, OnDelta, ToolSchema, content_text
from ..endpoints import check_base_url
from .chat import chat_reply, wire_messages, wire_tools
from .client import STRUCTURED_OUTPUTS, ChatClient
from .prompts import (
    parse_json_object,
    read_envelope,
    read_understanding,
    speak_messages,
    speak_schema,
    tools_schema,
    understand_messages,
    understand_schema,
)


class OpenAICompatibleModel:
    """The ``understand`` and ``speak`` ports over ``POST {base_url}/chat/completions``.

    Works with OpenAI and with the servers that speak its format (vLLM, Ollama, llama.cpp, LM
    Studio). ``understand`` is one completion constrained to a JSON schema; ``speak`` is
    streamed over SSE, surfaces the reply's text as it arrives (``streaming(on_delta)``), runs
    tool rounds, and parses the ``{message, <field>: value|null}`` envelope. Every failure is a
    ``ProviderError`` classified as docs/providers.md says; ``speak`` hands it to the engine as
    a deferral, ``understand`` raises it.

    ``api_key`` goes in an ``Authorization: Bearer`` header and never into a log, repr or
    error. ``structured_output`` is ``"json_schema"`` (the default: OpenAI, vLLM, Ollama, LM
    Studio), ``"json_object"`` (llama.cpp's servers, which enforce the schema sent beside it)
    or ``"prompt"``; a server that refuses one is asked on the next, and remembered.
    ``timeout`` bounds each read, ``deadline`` a whole call (a stream that keeps coming
    included) and ``max_tokens`` each reply; a reply cut off there is a failure. One
    instance is safe to share between threads.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        deadline: float = 120.0,
        max_tokens: int | None = 1024,
        headers: Mapping[str, str] | None = None,
        structured_output: str = "json_schema",
        temperature: float | None = 0.2,
        max_tool_rounds: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError("structured_output must be 'json_schema', 'json_object' or 'prompt'")
        if not model:
            raise ValueError("model must name the model to call, e.g. 'gpt-4o-mini'")
        self.base_url = check_base_url(base_url)
        self.model = model
        self.max_tool_rounds = max_tool_rounds
        self.on_delta: Callable[[str], None] | None = None
        self._client = ChatClient(
            self.base_url,
            model,
            api_key=api_key,
            timeout=timeout,
            deadline=deadline,
            max_tokens=max_tokens,
            headers=headers,
            structured_output=structured_output,
            temperature=temperature,
            transport=transport,
        )

    provider = "openai"

    def __repr__(self) -> str:
        return f"<OpenAICompatibleModel {self.model} at {self.base_url}>"

    @property
    def structured_output(self) -> str:
        """The mode requests use now (``"prompt"`` once the server refused a schema)."""
        return self._client.mode

    def streaming(self, on_delta: Callable[[str], None]) -> OpenAICompatibleModel:
        """This model, sharing its connection pool, calling ``on_delta`` with reply text as
        it streams (the realtime layer forwards it to the chat UI)."""
        bound = copy.copy(self)
        bound.on_delta = on_delta
        return bound

    def cache_settings(self) -> dict[str, Any]:
        """What shapes its answers besides the messages, for a semantic cache's key: the
        server, the output limit, the temperature and how replies are held to a schema."""
        client = self._client
        return {
            "base_url": str(client._http.base_url),
            "max_tokens": client.max_tokens,
            "temperature": client.temperature,
            "structured_output": client.structured_output,
        }

    def close(self) -> None:
        self._client.close()

    def chat(
        self, messages: list[Message], tools: list[ToolSchema], on_delta: OnDelta | None
    ) -> ChatReply:
        """The chat port (``ToolAgent``): one streamed completion offering ``tools``; a
        failure raises ``ProviderError``."""
        reply = self._client.chat(
            wire_messages(messages), wire_tools(tools), datetime.now(UTC), on_delta
        )
        text, calls = reply.result()
        return chat_reply(text, calls, reply.usage, reply.finish_reason)

    def summarize(self, messages: list[Message]) -> str:
        """A short summary of ``messages``, for a ``ToolAgent``'s compaction."""
        transcript = "\n".join(f"{m['role']}: {content_text(m.get('content'))}" for m in messages)
        request = [
            {
                "role": "system",
                "content": "Summarize this conversation in a few sentences. Keep names, "
                "facts, decisions and open questions.",
            },
            {"role": "user", "content": transcript},
        ]
        text, _calls = self._client.chat(request, [], datetime.now(UTC), None).result()
        return text

    def understand(self, request: UnderstandRequest) -> Understanding:
        reply, calls = self._client.complete_json(
            understand_messages(request), "understanding", understand_schema(request), request.now
        )
        return read_understanding(reply, calls, request)

    def speak(self, request: SpeakRequest) -> Spoken | Deferral:
        calls = 0
        try:
            messages = speak_messages(request)
            schema = speak_schema(request)
            tools = tools_schema(request.tools)
            data: dict[str, Any] = {}
            tool_calls: list[dict[str, Any]] = []
            for _round in range(self.max_tool_rounds + 1):
                calls += 1
                content, requested = self._client.stream(
                    messages, schema, tools, request.now, self.on_delta
                )
                if not requested:
                    break
                # Text, never null: llama.cpp's servers refuse a null content.
                messages.append(
                    {"role": "assistant", "content": content or "", "tool_calls": requested}
                )
                for call in requested:
                    messages.append(_run_tool(request.tools, call, data, tool_calls))
            else:
                raise ProviderError(
                    "provider-invalid", False, detail="the model kept calling tools"
                )
            envelope = parse_json_object(content)
            if envelope is None:
                calls += 1
                envelope = self._client.repair(messages, content, request.now)
            return read_envelope(
                envelope, request, data=data, tool_calls=tool_calls, llm_calls=calls
            )
        except ProviderError as error:
            return deferral_of(error, max(calls, 1))


def _run_tool(
    tools: Sequence[Any],
    call: Mapping[str, Any],
    data: dict[str, Any],
    tool_calls: list[dict[str, Any]],
) -> dict[str, Any]:
    """Run the tool a call asks for; its result (or its failure, which goes back to the model
    rather than up the stack) is the tool message to send. A mapping result joins ``data``."""
    name = call["function"]["name"]
    arguments = parse_json_object(call["function"].get("arguments") or "{}") or {}
    tool_calls.append({"toolName": name, "arguments": arguments})
    tool = next((t for t in tools if tool_id(t) == name), None)
    result: Any
    if tool is None:
        result = {"error": f"there is no tool {name!r}"}
    else:
        try:
            result = tool["run"](arguments) if isinstance(tool, Mapping) else tool.run(arguments)
        except Exception as error:
            result = {"error": str(error) or type(error).__name__}
        else:
            if isinstance(result, Mapping):
                data.update(result)
            if result is None:
                result = {"ok": True}
    return {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": json.dumps(result, ensure_ascii=False, default=str),
    }
