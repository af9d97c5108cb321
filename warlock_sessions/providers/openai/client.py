"""The HTTP side of ``POST {base_url}/chat/completions``: request bodies for each structured
output mode, plain and streamed completions, the one fallback for servers that refuse a
schema, and the repair of a reply that was not JSON."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import httpx

from ...engine.ports import ProviderError
from .errors import response_error, send
from .prompts import parse_json_object, repair_messages, with_json_instruction
from .streaming import StreamedReply

STRUCTURED_OUTPUTS = ("json_schema", "json_object", "prompt")
T = TypeVar("T")


class ChatClient:
    """One connection pool to an OpenAI-compatible server, safe to share between threads.

    ``structured_output`` is how replies are held to a schema: ``json_schema`` (the server
    enforces it), ``json_object`` (the server guarantees JSON; the schema is in the prompt) or
    ``prompt`` (the schema is in the prompt only). A server that rejects ``json_schema`` or
    ``json_object`` is asked again in ``prompt`` mode, and every later request goes straight
    to ``prompt``; the configured value itself never changes.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        timeout: float,
        headers: Mapping[str, str] | None,
        structured_output: str,
        temperature: float | None,
        transport: httpx.BaseTransport | None,
    ) -> None:
        self.model = model
        self.structured_output = structured_output
        self.temperature = temperature
        # Written once, from False to True; a racing reader at worst asks with the schema
        # once more and falls back again.
        self._schema_refused = False
        all_headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout, headers=all_headers, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    @property
    def mode(self) -> str:
        """The structured output mode requests use now."""
        return "prompt" if self._schema_refused else self.structured_output

    def complete_json(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], now: datetime
    ) -> tuple[dict[str, Any], int]:
        """One completion parsed as a JSON object (a second call repairs a reply that was not
        JSON), with the number of calls made."""
        reply = self._with_schema_fallback(
            lambda mode, sent: self._post(self._body(sent, name, schema, mode), now),
            messages,
            schema,
        )
        content = first_content(reply)
        parsed = parse_json_object(content)
        if parsed is not None:
            return parsed, 1
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

        def attempt(mode: str, sent: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
            body = self._body(sent, "reply", schema, mode)
            body["stream"] = True
            if tools:
                body["tools"] = tools
            return self._read_stream(body, now, on_delta).result()

        return self._with_schema_fallback(attempt, messages, schema)

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        now: datetime,
        on_delta: Callable[[str], None] | None,
    ) -> StreamedReply:
        """One streamed completion in plain text (no envelope), offering ``tools``."""
        body = self._body(messages, "", {}, "prompt")
        body["stream"] = True
        if tools:
            body["tools"] = tools
        return self._read_stream(body, now, on_delta, envelope=False)

    def repair(self, messages: list[dict[str, Any]], content: str, now: datetime) -> dict[str, Any]:
        """Ask once more, showing the model its reply, for only the JSON object."""
        body: dict[str, Any] = {"model": self.model, "messages": repair_messages(messages, content)}
        if self.mode != "prompt":
            body["response_format"] = {"type": "json_object"}
        parsed = parse_json_object(first_content(self._post(body, now)))
        if parsed is None:
            raise ProviderError("provider-invalid", False, detail="the reply was not JSON, twice")
        return parsed

    def _with_schema_fallback(
        self,
        attempt: Callable[[str, list[dict[str, Any]]], T],
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
    ) -> T:
        mode = self.mode
        try:
            return attempt(
                mode, messages if mode == "json_schema" else with_json_instruction(messages, schema)
            )
        except ProviderError as error:
            if mode == "prompt" or not _schema_rejected(error):
                raise
            self._schema_refused = True
            return attempt("prompt", with_json_instruction(messages, schema))

    def _body(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any], mode: str
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema},
            }
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _post(self, body: dict[str, Any], now: datetime) -> dict[str, Any]:
        response = send(lambda: self._http.post("/chat/completions", json=body))
        if response.status_code >= 400:
            raise response_error(response, now)
        try:
            reply: dict[str, Any] = response.json()
            return reply
        except ValueError:
            raise ProviderError(
                "provider-invalid", False, detail="the server did not answer JSON"
            ) from None

    def _read_stream(
        self,
        body: dict[str, Any],
        now: datetime,
        on_delta: Callable[[str], None] | None,
        *,
        envelope: bool = True,
    ) -> StreamedReply:
        reply = StreamedReply(on_delta, now, envelope=envelope)
        try:
            with self._http.stream(
                "POST", "/chat/completions", json=body, headers={"Accept": "text/event-stream"}
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise response_error(response, now)
                reply.read(response.iter_lines())
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
        return reply


def _schema_rejected(error: ProviderError) -> bool:
    """The server refused the ``response_format`` itself (not the request's content)."""
    text = str(error).lower()
    return error.code == "provider-invalid" and ("response_format" in text or "json_schema" in text)


def first_content(reply: Mapping[str, Any]) -> str:
    """The text of a completion's first choice; a reply without one is worth retrying."""
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
