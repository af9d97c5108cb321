"""OpenAICompatibleModel: the engine's ports over the OpenAI chat-completions wire format.

Works with OpenAI and with the servers that speak its format (vLLM, Ollama, llama.cpp, LM
Studio). ``understand`` is one completion constrained to a JSON schema; ``speak`` is streamed
over SSE, surfaces the reply's text as it arrives (``streaming(on_delta)``), runs tool rounds,
and parses the ``{message, <field>: value|null}`` envelope. Every failure becomes a
``ProviderError`` classified as the table in docs/providers.md says; ``speak`` hands it to the
engine as a deferral, ``understand`` raises it.
"""

from __future__ import annotations

import copy
import email.utils
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..engine.agent import tool_id
from ..engine.ports import (
    Deferral,
    IdleRequest,
    ProviderError,
    SpeakRequest,
    Spoken,
    TalkRequest,
    Understanding,
    UnderstandRequest,
)
from ..engine.templates import render

JSON_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}
QUOTA_CODES = frozenset({"insufficient_quota", "quota_exceeded", "billing_hard_limit_reached"})
_CONTEXT_WORDS = (
    "context_length",
    "context length",
    "maximum context",
    "too many tokens",
    "context window",
    "prompt is too long",
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")

UNDERSTAND_SYSTEM = (
    "You read one customer message for a conversational agent and judge it. Reply with one JSON "
    "object and nothing else, matching the schema. flows: for each candidate flow, 0-100 for how "
    "well the message fits it. mentions: whether the message brings up each topic. extract: the "
    "values each mentioned topic asks for, or null. branches: whether each condition holds for "
    "the message. fields: each value the customer stated, or null when they did not."
)
SPEAK_ENVELOPE = (
    'Reply with one JSON object and nothing else: {"message": the text to send to the customer'
    "{fields}}."
)
JSON_ONLY = "Your previous reply was not valid JSON. Reply again with only the JSON object."


def check_base_url(base_url: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"base_url must be an http(s) URL with a host, like "
            f"'https://api.openai.com/v1', not {base_url!r}"
        )
    return base_url.rstrip("/")


def reset_delay_ms(headers: Mapping[str, str], now: datetime) -> int | None:
    """When the provider says its limit reopens: ``Retry-After`` (seconds or an HTTP date) or
    ``x-ratelimit-reset-*`` (``"6m0s"``, ``"20ms"``, or seconds); the latest one wins."""
    delays = []
    retry_after = headers.get("retry-after")
    if retry_after:
        if retry_after.strip().replace(".", "", 1).isdigit():
            delays.append(round(float(retry_after) * 1000))
        else:
            moment = email.utils.parsedate_to_datetime(retry_after)
            if moment is not None:
                delays.append(round((moment - now).total_seconds() * 1000))
    for name, value in headers.items():
        if name.lower().startswith("x-ratelimit-reset"):
            if value.strip().replace(".", "", 1).isdigit():
                delays.append(round(float(value) * 1000))
            else:
                units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
                parts = _DURATION_PART.findall(value)
                if parts:
                    delays.append(round(sum(float(n) * units[u] for n, u in parts)))
    delays = [delay for delay in delays if delay >= 0]
    return max(delays) if delays else None


def classify(status: int, body: Any, headers: Mapping[str, str], now: datetime) -> ProviderError:
    """An HTTP error reply as the engine's provider codes (the table in docs/providers.md)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    error = error if isinstance(error, Mapping) else {}
    code = str(error.get("code") or error.get("type") or "")
    text = f"{code} {error.get('message') or ''} {body if not error else ''}".lower()
    detail = f"HTTP {status}: {error.get('message') or code or 'no detail'}"
    now_ms = round(now.timestamp() * 1000)
    delay = reset_delay_ms(headers, now)
    reset_at = now_ms + delay if delay is not None else None
    if status in (401, 403):
        return ProviderError("provider-auth", False, detail=detail)
    if status == 429 or (status == 402 and "quota" in text):
        if code in QUOTA_CODES or "quota" in text or status == 402:
            return ProviderError("provider-quota", reset_at is not None, reset_at, detail)
        return ProviderError("provider-unavailable", True, reset_at, detail)
    if status >= 500:
        return ProviderError("provider-unavailable", True, reset_at, detail)
    if any(word in text for word in _CONTEXT_WORDS):
        return ProviderError("provider-context", False, detail=detail)
    return ProviderError("provider-invalid", False, detail=detail)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model's reply, tolerating code fences and chatter around it."""
    candidates = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        candidates.append(fenced[1].strip())
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


class MessageDeltas:
    """Follows a JSON envelope as it streams in and yields the text of its ``message`` value.

    So a chat UI can show the reply while the model is still writing it, without ever showing
    the JSON around it.
    """

    _START = re.compile(r'"message"\s*:\s*"')
    _ESCAPES = {
        '"': '"',
        "\\": "\\",
        "/": "/",
        "b": "\b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
    }

    def __init__(self) -> None:
        self.buffer = ""
        self.position: int | None = None
        self.done = False

    def feed(self, chunk: str) -> str:
        self.buffer += chunk
        if self.done:
            return ""
        if self.position is None:
            match = self._START.search(self.buffer)
            if match is None:
                return ""
            self.position = match.end()
        out = []
        index = self.position
        buffer = self.buffer
        while index < len(buffer):
            char = buffer[index]
            if char == '"':
                self.done = True
                index += 1
                break
            if char == "\\":
                if index + 1 >= len(buffer):
                    break
                kind = buffer[index + 1]
                if kind == "u":
                    if index + 6 > len(buffer):
                        break
                    code = int(buffer[index + 2 : index + 6], 16)
                    if 0xD800 <= code < 0xDC00:  # a surrogate pair: wait for its second half
                        if index + 12 > len(buffer):
                            break
                        low = int(buffer[index + 8 : index + 12], 16)
                        out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                        index += 12
                        continue
                    out.append(chr(code))
                    index += 6
                    continue
                out.append(self._ESCAPES.get(kind, kind))
                index += 2
                continue
            out.append(char)
            index += 1
        self.position = index
        return "".join(out)


class OpenAICompatibleModel:
    """The ``understand`` and ``speak`` ports over ``POST {base_url}/chat/completions``.

    ``api_key`` goes in an ``Authorization: Bearer`` header and never into a log, repr or
    error. ``structured_output`` is ``"json_schema"`` (the default, OpenAI and vLLM), or
    ``"json_object"``/``"prompt"`` for servers without schema support; a server that rejects
    the schema is retried once with a plain JSON instruction, and remembered.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        structured_output: str = "json_schema",
        temperature: float | None = 0.2,
        max_tool_rounds: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if structured_output not in ("json_schema", "json_object", "prompt"):
            raise ValueError("structured_output must be 'json_schema', 'json_object' or 'prompt'")
        if not model:
            raise ValueError("model must name the model to call, e.g. 'gpt-4o-mini'")
        self.base_url = check_base_url(base_url)
        self.model = model
        self.structured_output = structured_output
        self.temperature = temperature
        self.max_tool_rounds = max_tool_rounds
        self.on_delta: Callable[[str], None] | None = None
        all_headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.base_url, timeout=timeout, headers=all_headers, transport=transport
        )

    def __repr__(self) -> str:
        return f"<OpenAICompatibleModel {self.model} at {self.base_url}>"

    def streaming(self, on_delta: Callable[[str], None]) -> OpenAICompatibleModel:
        """This model, sharing its connection pool, calling ``on_delta`` with reply text as
        it streams (the realtime layer forwards it to the chat UI)."""
        bound = copy.copy(self)
        bound.on_delta = on_delta
        return bound

    def close(self) -> None:
        self._client.close()

    # -- understand ---------------------------------------------------------------------------

    def understand(self, request: UnderstandRequest) -> Understanding:
        flows = [*([request.floor_flow] if request.floor_flow else []), *request.message_flows]
        schema = _object(
            {
                "flows": _object(
                    {flow.id: {"type": "integer", "minimum": 0, "maximum": 100} for flow in flows}
                ),
                "mentions": _object(
                    {flow.id: {"type": "boolean"} for flow in request.mention_flows}
                ),
                "extract": _object(
                    {
                        flow.id: _object(
                            {
                                name: _nullable(definition)
                                for name, definition in (self._extract_schema(flow)).items()
                            }
                        )
                        for flow in request.mention_flows
                    }
                ),
                "branches": _object(
                    {question.key: {"type": "boolean"} for question in request.branches}
                ),
                "fields": _object(
                    {name: _nullable(definition) for name, definition in request.fields.items()}
                ),
            }
        )
        brief = {
            "message": request.text,
            "recent_history": list(request.history)[-10:],
            "candidate_flows": [_describe_flow(flow) for flow in flows],
            "topics": [_describe_flow(flow) for flow in request.mention_flows],
            "conditions": [{"key": q.key, "condition": q.when} for q in request.branches],
            "fields": {
                name: _describe_field(definition) for name, definition in request.fields.items()
            },
        }
        messages = [
            {"role": "system", "content": UNDERSTAND_SYSTEM},
            {"role": "user", "content": json.dumps(brief, ensure_ascii=False, default=str)},
        ]
        reply, calls = self._json_completion(messages, "understanding", schema, request.now)
        return Understanding(
            flows={
                k: v for k, v in _mapping(reply.get("flows")).items() if isinstance(v, int | float)
            },
            mentions={k: v is True for k, v in _mapping(reply.get("mentions")).items()},
            extract={
                k: dict(v)
                for k, v in _mapping(reply.get("extract")).items()
                if isinstance(v, Mapping)
            },
            branches={k: v is True for k, v in _mapping(reply.get("branches")).items()},
            fields={k: v for k, v in _mapping(reply.get("fields")).items() if v is not None},
            llm_calls=calls,
        )

    @staticmethod
    def _extract_schema(flow: Any) -> Mapping[str, Any]:
        trigger = flow.trigger_of("mention")
        return trigger.extract if trigger is not None and trigger.extract else {}

    # -- speak --------------------------------------------------------------------------------

    def speak(self, request: SpeakRequest) -> Spoken | Deferral:
        calls = 0
        try:
            messages, pending = self._speak_messages(request)
            schema = _object(
                {
                    "message": {"type": "string"},
                    **{
                        name: _nullable(request.fields.get(name) or {"type": "string"})
                        for name in pending
                    },
                }
            )
            tools = [_tool_schema(tool) for tool in request.tools]
            data: dict[str, Any] = {}
            tool_calls: list[dict[str, Any]] = []
            for _round in range(self.max_tool_rounds + 1):
                calls += 1
                content, requested = self._stream(messages, schema, tools, request.now)
                if not requested:
                    break
                messages.append(
                    {"role": "assistant", "content": content or None, "tool_calls": requested}
                )
                for call in requested:
                    result = self._run_tool(request.tools, call, data)
                    tool_calls.append(
                        {"toolName": call["function"]["name"], "arguments": result[0]}
                    )
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "content": json.dumps(result[1], ensure_ascii=False, default=str),
                        }
                    )
            else:
                raise ProviderError(
                    "provider-invalid", False, detail="the model kept calling tools"
                )
            envelope = parse_json_object(content)
            if envelope is None:
                calls += 1
                envelope, _ = self._repair(messages, content, request.now)
            message = envelope.get("message")
            if not isinstance(message, str) or not message.strip():
                raise ProviderError("provider-unavailable", True, detail="the reply had no message")
            fields = {
                name: envelope.get(name) for name in pending if envelope.get(name) is not None
            }
            return Spoken(
                message=message, fields=fields, data=data, tool_calls=tool_calls, llm_calls=calls
            )
        except ProviderError as error:
            return error.as_deferral(max(calls, 1))

    def _speak_messages(self, request: SpeakRequest) -> tuple[list[dict[str, Any]], list[str]]:
        talk = request.talk
        scope = {
            "data": request.data,
            "context": request.context,
            "input": talk.run.get("input") if isinstance(talk, TalkRequest) else None,
        }
        lines = [render(_instruction_text(item), scope) for item in request.instructions]
        pending: list[str] = []
        if isinstance(talk, IdleRequest):
            if talk.idle.get("prompt"):
                lines.append(render(talk.idle["prompt"], scope))
        else:
            step = talk.step
            if step.raw.get("prompt"):
                lines.append(render(step.raw["prompt"], scope))
            pending = list(talk.pending)
            if pending:
                wanted = []
                for name in pending:
                    definition = request.fields.get(name) or {}
                    ask = definition.get("ask") or step.raw.get("ask")
                    wanted.append(
                        f"- {name} ({_describe_field(definition)})"
                        + (f': ask like "{render(ask, scope)}"' if ask else "")
                    )
                lines.append("Ask the customer for what is still missing:\n" + "\n".join(wanted))
            known = {k: v for k, v in request.data.items() if v not in (None, "")}
            if known:
                lines.append("Known so far: " + json.dumps(known, ensure_ascii=False, default=str))
        field_list = "".join(
            f', "{name}": the value the customer gave in their last message or null'
            for name in pending
        )
        lines.append(SPEAK_ENVELOPE.replace("{fields}", field_list))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "\n\n".join(line for line in lines if line)}
        ]
        for item in list(request.history)[-20:]:
            if (
                isinstance(item, Mapping)
                and item.get("role") in ("user", "assistant")
                and item.get("content")
            ):
                messages.append({"role": item["role"], "content": str(item["content"])})
        if request.input_kind == "message" and request.text:
            messages.append({"role": "user", "content": request.text})
        else:
            messages.append(
                {"role": "user", "content": "(The customer has not written: you speak first.)"}
            )
        return messages, pending

    def _run_tool(
        self, tools: Sequence[Any], call: Mapping[str, Any], data: dict[str, Any]
    ) -> tuple[Any, Any]:
        name = call["function"]["name"]
        arguments = parse_json_object(call["function"].get("arguments") or "{}") or {}
        tool = next((t for t in tools if tool_id(t) == name), None)
        if tool is None:
            return arguments, {"error": f"there is no tool {name!r}"}
        try:
            result = tool["run"](arguments) if isinstance(tool, Mapping) else tool.run(arguments)
        except Exception as error:  # a tool's failure goes back to the model, not up the stack
            return arguments, {"error": str(error) or type(error).__name__}
        if isinstance(result, Mapping):
            data.update(result)
        return arguments, result if result is not None else {"ok": True}

    # -- HTTP ---------------------------------------------------------------------------------

    def _body(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.structured_output == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema},
            }
        elif self.structured_output == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _post(self, body: dict[str, Any], now: datetime) -> dict[str, Any]:
        response = self._send(lambda: self._client.post("/chat/completions", json=body))
        if response.status_code >= 400:
            raise self._error(response, now)
        try:
            return response.json()
        except ValueError:
            raise ProviderError(
                "provider-invalid", False, detail="the server did not answer JSON"
            ) from None

    @staticmethod
    def _send(call: Callable[[], httpx.Response]) -> httpx.Response:
        try:
            return call()
        except httpx.TimeoutException as error:
            raise ProviderError(
                "provider-unavailable", True, detail=f"timed out ({type(error).__name__})"
            ) from None
        except httpx.HTTPError as error:
            raise ProviderError(
                "provider-unavailable", True, detail=f"{type(error).__name__}: {error}"
            ) from None

    @staticmethod
    def _error(response: httpx.Response, now: datetime) -> ProviderError:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text[:500]
        return classify(response.status_code, body, response.headers, now)

    def _json_completion(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], now: datetime
    ) -> tuple[dict[str, Any], int]:
        calls = 1
        reply = self._complete_with_fallback(messages, name, schema, now)
        content = _first_content(reply)
        parsed = parse_json_object(content)
        if parsed is None:
            calls += 1
            parsed, _ = self._repair(messages, content, now)
        return parsed, calls

    def _complete_with_fallback(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], now: datetime
    ) -> dict[str, Any]:
        try:
            return self._post(self._body(messages, name, schema), now)
        except ProviderError as error:
            if not self._schema_rejected(error):
                raise
            self.structured_output = "prompt"
            return self._post(
                self._body(self._with_json_instruction(messages, schema), name, schema), now
            )

    def _schema_rejected(self, error: ProviderError) -> bool:
        text = str(error).lower()
        return (
            self.structured_output != "prompt"
            and error.code == "provider-invalid"
            and ("response_format" in text or "json_schema" in text)
        )

    @staticmethod
    def _with_json_instruction(
        messages: list[dict[str, Any]], schema: dict[str, Any]
    ) -> list[dict[str, Any]]:
        note = "Answer with a JSON object valid against this JSON schema: " + json.dumps(schema)
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}, *messages[1:]]

    def _repair(
        self, messages: list[dict[str, Any]], content: str, now: datetime
    ) -> tuple[dict[str, Any], int]:
        body = {
            "model": self.model,
            "messages": [
                *messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": JSON_ONLY},
            ],
        }
        if self.structured_output in ("json_schema", "json_object"):
            body["response_format"] = {"type": "json_object"}
        parsed = parse_json_object(_first_content(self._post(body, now)))
        if parsed is None:
            raise ProviderError("provider-invalid", False, detail="the reply was not JSON, twice")
        return parsed, 1

    def _stream(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        tools: list[dict[str, Any]],
        now: datetime,
    ) -> tuple[str, list[dict[str, Any]]]:
        """One streamed completion: its text and any tool calls it asked for."""
        body = self._body(messages, "reply", schema)
        body["stream"] = True
        if tools:
            body["tools"] = tools
        try:
            return self._read_stream(body, now)
        except ProviderError as error:
            if not self._schema_rejected(error):
                raise
            self.structured_output = "prompt"
            body = self._body(self._with_json_instruction(messages, schema), "reply", schema)
            body["stream"] = True
            if tools:
                body["tools"] = tools
            return self._read_stream(body, now)

    def _read_stream(self, body: dict[str, Any], now: datetime) -> tuple[str, list[dict[str, Any]]]:
        deltas = MessageDeltas()
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finished = False
        try:
            with self._client.stream(
                "POST", "/chat/completions", json=body, headers={"Accept": "text/event-stream"}
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._error(response, now)
                for event in _sse_events(response.iter_lines()):
                    if event == "[DONE]":
                        finished = True
                        break
                    chunk = json.loads(event)
                    if isinstance(chunk, Mapping) and "error" in chunk:
                        raise classify(500, chunk, {}, now)
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        text = delta.get("content")
                        if text:
                            content.append(text)
                            shown = deltas.feed(text)
                            if shown and self.on_delta is not None:
                                self.on_delta(shown)
                        for call in delta.get("tool_calls") or []:
                            slot = calls.setdefault(
                                call.get("index", 0),
                                {
                                    "id": "",
                                    "type": "function",
                                    "function": {"name": "", "arguments": ""},
                                },
                            )
                            slot["id"] = call.get("id") or slot["id"]
                            function = call.get("function") or {}
                            slot["function"]["name"] += function.get("name") or ""
                            slot["function"]["arguments"] += function.get("arguments") or ""
                        if choice.get("finish_reason") == "content_filter":
                            raise ProviderError("provider-invalid", False, detail="content filter")
                        if choice.get("finish_reason"):
                            finished = True
        except httpx.TimeoutException:
            raise ProviderError(
                "provider-unavailable", True, detail="timed out while streaming"
            ) from None
        except httpx.HTTPError as error:
            raise ProviderError(
                "provider-unavailable", True, detail=f"stream broke: {error}"
            ) from None
        except ValueError:
            raise ProviderError(
                "provider-invalid", False, detail="a stream event was not JSON"
            ) from None
        if not finished:
            raise ProviderError(
                "provider-unavailable", True, detail="the stream ended before the reply"
            )
        text = "".join(content)
        if not text.strip() and not calls:
            raise ProviderError("provider-unavailable", True, detail="the reply was empty")
        return text, [calls[index] for index in sorted(calls)]


def _sse_events(lines: Iterator[str]) -> Iterator[str]:
    """The data of each server-sent event. An event counts once its blank line arrives: data
    left unterminated when the connection closes is a cut stream, not an event."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def _first_content(reply: Mapping[str, Any]) -> str:
    try:
        choice = reply["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ProviderError(
            "provider-unavailable", True, detail="the reply had no choices"
        ) from None
    if choice.get("finish_reason") == "content_filter":
        raise ProviderError("provider-invalid", False, detail="content filter")
    content = (choice.get("message") or {}).get("content") or ""
    if not content.strip():
        raise ProviderError("provider-unavailable", True, detail="the reply was empty")
    return content


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nullable(definition: Mapping[str, Any]) -> dict[str, Any]:
    kind = JSON_TYPES.get(definition.get("type", "string"), "string")
    schema: dict[str, Any] = {"type": [kind, "null"]}
    if definition.get("enum"):
        schema["enum"] = [*definition["enum"], None]
    if definition.get("description"):
        schema["description"] = definition["description"]
    return schema


def _describe_field(definition: Mapping[str, Any]) -> str:
    parts = [definition.get("type", "string")]
    if definition.get("format"):
        parts.append(definition["format"])
    if definition.get("enum"):
        parts.append("one of " + ", ".join(map(str, definition["enum"])))
    if definition.get("description") or definition.get("label"):
        parts.append(str(definition.get("description") or definition.get("label")))
    return "; ".join(parts)


def _describe_flow(flow: Any) -> dict[str, Any]:
    phrases = [phrase for trigger in flow.triggers for phrase in trigger.phrases]
    return {
        "id": flow.id,
        "name": flow.raw.get("name") or flow.id,
        "description": flow.raw.get("description") or "",
        "examples": phrases,
    }


def _instruction_text(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item.get("text") or item.get("content") or "")
    return str(item)


def _tool_schema(tool: Any) -> dict[str, Any]:
    get = (
        tool.get
        if isinstance(tool, Mapping)
        else lambda key, default=None: getattr(tool, key, default)
    )
    return {
        "type": "function",
        "function": {
            "name": get("id"),
            "description": get("description", ""),
            "parameters": get("parameters", None) or {"type": "object", "properties": {}},
        },
    }
