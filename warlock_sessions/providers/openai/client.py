"""The HTTP side of ``POST {base_url}/chat/completions``: request bodies for each structured
output mode, plain and streamed completions, the fallbacks for what a server does not support
(a response format, tools in a stream), and the repair of a reply that was not JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import httpx

from ...engine.ports import ProviderError
from ...errors import EmptyStreamError
from ...tracing import Recorder, span
from .errors import StreamBroke, response_error, send
from .prompts import parse_json_object, repair_messages, with_json_instruction
from .streaming import StreamedReply, check_finish

#: The structured output modes, each a rung down from the one before: a server that refuses
#: one is asked again on the next, and every later request starts there.
STRUCTURED_OUTPUTS = ("json_schema", "json_object", "prompt")
T = TypeVar("T")


def http_client(
    base_url: str,
    api_key: str | None,
    timeout: float,
    headers: Mapping[str, str] | None,
    transport: httpx.BaseTransport | None,
) -> httpx.Client:
    """One connection pool to an OpenAI-compatible server, with its key and headers."""
    all_headers = {"Accept": "application/json", **(headers or {})}
    if api_key:
        all_headers["Authorization"] = f"Bearer {api_key}"
    return httpx.Client(
        base_url=base_url, timeout=timeout, headers=all_headers, transport=transport
    )


class ChatClient:
    """One connection pool to an OpenAI-compatible server, safe to share between threads.

    ``structured_output`` is how replies are held to a schema: ``json_schema`` (the server
    enforces it: OpenAI, vLLM, Ollama, LM Studio), ``json_object`` (JSON, with the schema sent
    beside it, which llama.cpp's servers enforce and others ignore; the schema is in the
    prompt too) or ``prompt`` (the schema is in the prompt only). A server that refuses a
    mode, whatever status it answers, is asked again on the next rung, and every later
    request starts there; the configured value itself never changes.

    Every call is bounded: ``max_tokens`` of output (a reply cut there is a failed reply, never
    repaired) and ``deadline`` seconds in all, however steadily a stream keeps coming.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        timeout: float,
        deadline: float,
        max_tokens: int | None,
        headers: Mapping[str, str] | None,
        structured_output: str,
        temperature: float | None,
        transport: httpx.BaseTransport | None,
    ) -> None:
        self.model = model
        self.structured_output = structured_output
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.deadline = deadline
        # What this server refused, learnt once and never unlearnt (a racing request at worst
        # asks the refused way once more and adapts again).
        self._refused_rungs = 0
        self._tools_unstreamed = False
        self._completion_tokens = False
        self._no_temperature = False
        self._timeout = timeout
        self._http = http_client(base_url, api_key, timeout, headers, transport)

    def close(self) -> None:
        self._http.close()

    @property
    def mode(self) -> str:
        """The structured output mode requests use now."""
        start = STRUCTURED_OUTPUTS.index(self.structured_output)
        return STRUCTURED_OUTPUTS[min(start + self._refused_rungs, len(STRUCTURED_OUTPUTS) - 1)]

    def complete_json(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], now: datetime
    ) -> tuple[dict[str, Any], int]:
        """One completion parsed as a JSON object (a second call repairs a reply that was not
        JSON), with the number of calls made."""
        with self._traced(messages) as traced:
            reply = self._with_format_fallback(
                lambda mode, sent: self._post(self._body(sent, name, schema, mode), now),
                messages,
                schema,
            )
            choices = reply.get("choices") or [{}]
            _traced_reply(traced, reply, reply.get("usage"), choices[0].get("finish_reason"))
            content = first_content(reply)
            traced.text("gen_ai.output.messages", content)
            parsed = parse_json_object(content)
            if parsed is not None:
                return parsed, 1
            traced.set({"warlock.llm_calls": 2})  # the repair is a second call
            return self.repair(messages, content, now), 2

    def stream(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        tools: list[dict[str, Any]],
        now: datetime,
        on_delta: Callable[[str], None] | None,
    ) -> tuple[str, list[dict[str, Any]]]:
        """One streamed completion: its text and any tool calls it asked for."""

        with self._traced(messages) as traced:

            def attempt(mode: str, sent: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
                body = self._body(sent, "reply", schema, mode)
                reply = self._completion(body, tools, now, on_delta, envelope=True)
                _traced_streamed(traced, reply)
                return reply.result()

            return self._with_format_fallback(attempt, messages, schema)

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        now: datetime,
        on_delta: Callable[[str], None] | None,
    ) -> StreamedReply:
        """One streamed completion in plain text (no envelope), offering ``tools``."""
        body = self._body(messages, "", {}, "prompt")
        with self._traced(messages) as traced:
            reply = self._completion(body, tools, now, on_delta, envelope=False)
            _traced_streamed(traced, reply)
            return reply

    def repair(self, messages: list[dict[str, Any]], content: str, now: datetime) -> dict[str, Any]:
        """Ask once more, showing the model its reply, for only the JSON object."""
        body = self._body(repair_messages(messages, content), "", {}, "prompt")
        if self.mode != "prompt":
            body["response_format"] = {"type": "json_object"}
        parsed = parse_json_object(first_content(self._post(body, now)))
        if parsed is None:
            raise ProviderError("provider-invalid", False, detail="the reply was not JSON, twice")
        return parsed

    @contextmanager
    def _traced(self, messages: list[dict[str, Any]]) -> Iterator[Recorder]:
        """A model call's span, with the GenAI semantic conventions' attributes."""
        with span(
            f"chat {self.model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": self.model,
                "gen_ai.request.temperature": self.temperature,
                "gen_ai.request.max_tokens": self.max_tokens,
                "server.address": self._http.base_url.host,
                "server.port": self._http.base_url.port,
            },
            kind="CLIENT",
        ) as traced:
            traced.text("gen_ai.input.messages", json.dumps(messages, ensure_ascii=False))
            yield traced

    def _with_format_fallback(
        self,
        attempt: Callable[[str, list[dict[str, Any]]], T],
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
    ) -> T:
        while True:
            mode = self.mode
            sent = messages if mode == "json_schema" else with_json_instruction(messages, schema)
            try:
                return attempt(mode, sent)
            except ProviderError as error:
                if mode == "prompt" or not format_refused(error):
                    raise
                self._refused_rungs = (
                    STRUCTURED_OUTPUTS.index(mode)
                    + 1
                    - (STRUCTURED_OUTPUTS.index(self.structured_output))
                )

    def _body(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], mode: str
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            # The one bound every server honours (llama.cpp's ignores max_completion_tokens).
            body["max_tokens"] = self.max_tokens
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema},
            }
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def _post(self, body: dict[str, Any], now: datetime) -> dict[str, Any]:
        sent = self._adapted(body)
        # Unstreamed, the whole reply is one read: it may take the call's deadline.
        timeout = httpx.Timeout(self._timeout, read=self.deadline)
        response = send(lambda: self._http.post("/chat/completions", json=sent, timeout=timeout))
        if response.status_code >= 400:
            error = response_error(response, now)
            if self._adapts_to(error, sent):
                return self._post(body, now)
            raise error
        try:
            reply: dict[str, Any] = response.json()
            return reply
        except ValueError:
            raise ProviderError(
                "provider-invalid", False, detail="the server did not answer JSON"
            ) from None

    def _completion(
        self,
        body: dict[str, Any],
        tools: list[dict[str, Any]],
        now: datetime,
        on_delta: Callable[[str], None] | None,
        *,
        envelope: bool,
    ) -> StreamedReply:
        """A completion offering ``tools``, streamed unless this server has answered a stream
        with tools with nothing at all (llama-cpp-python's: ``tool_choice: "auto"`` is not
        streamed there), or a stream with nothing at all came back (a refusal it could not
        stream, such as a prompt over its context): then it is asked once more unstreamed,
        which answers what it has to say, and later calls with tools go unstreamed."""
        if tools:
            body = {**body, "tools": tools, "tool_choice": "auto"}
        if not (tools and self._tools_unstreamed):
            try:
                return self._read_stream(body, now, on_delta, envelope=envelope)
            except EmptyStreamError:
                pass
        reply = StreamedReply(on_delta, now, envelope=envelope)
        reply.read_completion(self._post(body, now))
        if tools and reply.calls:
            # Learnt only from tool calls that came unstreamed: one empty stream from a proxy
            # must not stop streaming for good.
            self._tools_unstreamed = True
        return reply

    def _read_stream(
        self,
        body: dict[str, Any],
        now: datetime,
        on_delta: Callable[[str], None] | None,
        *,
        envelope: bool,
    ) -> StreamedReply:
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        deadline = self._deadline()
        try:
            return send(
                lambda: self._stream_once(streamed, now, on_delta, envelope, deadline),
                streaming=True,
            )
        except ValueError:
            raise ProviderError(
                "provider-invalid", False, detail="a stream event was not JSON"
            ) from None

    def _stream_once(
        self,
        streamed: dict[str, Any],
        now: datetime,
        on_delta: Callable[[str], None] | None,
        envelope: bool,
        deadline: float,
    ) -> StreamedReply:
        reply = StreamedReply(on_delta, now, envelope=envelope, deadline=deadline)
        try:
            with self._http.stream(
                "POST",
                "/chat/completions",
                json=(sent := self._adapted(streamed)),
                headers={"Accept": "text/event-stream"},
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    error = response_error(response, now)
                    if not self._adapts_to(error, sent):
                        raise error
                else:
                    reply.read(response.iter_lines())
                    return reply
        except (httpx.RemoteProtocolError, httpx.ReadError) as error:
            if reply.events:  # not a stale connection: what arrived was already shown
                raise StreamBroke(error) from error
            raise
        return self._stream_once(streamed, now, on_delta, envelope, deadline)

    def _adapted(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as this server takes it: the output bound under the name it knows, and no
        temperature where it refuses one (OpenAI's reasoning models)."""
        adapted = dict(body)
        if self._completion_tokens and "max_tokens" in adapted:
            adapted["max_completion_tokens"] = adapted.pop("max_tokens")
        if self._no_temperature:
            adapted.pop("temperature", None)
        return adapted

    def _adapts_to(self, error: ProviderError, sent: Mapping[str, Any]) -> bool:
        """Whether ``error`` is the server refusing a parameter of ``sent`` that can be put
        otherwise (``max_tokens`` for ``max_completion_tokens``; a temperature it does not
        take), now learnt for this and every later request."""
        text = str(error).lower()
        if "max_completion_tokens" in text and "max_tokens" in sent:
            self._completion_tokens = True
            return True
        refused = "unsupported" in text or "not supported" in text
        if "temperature" in text and refused and "temperature" in sent:
            self._no_temperature = True
            return True
        return False

    def _deadline(self) -> float:
        return time.monotonic() + self.deadline


def _traced_reply(
    traced: Recorder, reply: Mapping[str, Any], usage: Any, finish_reason: Any
) -> None:
    usage = usage if isinstance(usage, Mapping) else {}
    traced.set(
        {
            "gen_ai.response.model": reply.get("model"),
            "gen_ai.response.id": reply.get("id"),
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else None,
        }
    )


def _traced_streamed(traced: Recorder, reply: StreamedReply) -> None:
    _traced_reply(traced, reply.said, reply.usage, reply.finish_reason)
    traced.text("gen_ai.output.messages", "".join(reply.content))


def format_refused(error: ProviderError) -> bool:
    """The server refused the ``response_format`` itself, not the request's content, whatever
    status it chose for that (llama-cpp-python answers 500)."""
    if error.code in ("provider-auth", "provider-quota", "provider-context"):
        return False
    text = str(error).lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object"))


def first_content(reply: Mapping[str, Any]) -> str:
    """The text of a completion's first choice; a reply without one is worth retrying, one
    cut off at ``max_tokens`` is not a reply."""
    try:
        choice = reply["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ProviderError(
            "provider-unavailable", True, detail="the reply had no choices"
        ) from None
    check_finish(choice.get("finish_reason"))
    content = (choice.get("message") or {}).get("content") or ""
    if not content.strip():
        raise ProviderError("provider-unavailable", True, detail="the reply was empty")
    return content
