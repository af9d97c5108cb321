"""Reading a streamed completion: server-sent events, the chunks' text and tool calls, and the
``message`` of the JSON envelope as it arrives (for a chat UI). Pure: fed text, no HTTP."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from ...engine.ports import ProviderError
from ...errors import EmptyStreamError
from .errors import classify, stream_error_status


def check_finish(reason: object) -> None:
    """A finish that makes the reply no reply: filtered, or cut off at ``max_tokens`` (which
    is never repaired: its repair would replay it whole)."""
    if reason == "content_filter":
        raise ProviderError("provider-invalid", False, detail="content filter")
    if reason == "length":
        raise ProviderError("provider-invalid", False, detail="the reply was cut off at max_tokens")


def sse_events(lines: Iterator[str]) -> Iterator[str]:
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


class StreamedReply:
    """A completion assembled from its stream's events: its text, the tool calls it asked for
    (their names and arguments arrive in pieces), and whether it finished."""

    def __init__(
        self,
        on_delta: Callable[[str], None] | None,
        now: datetime,
        *,
        envelope: bool = True,
        deadline: float | None = None,
    ) -> None:
        self.on_delta = on_delta
        self.now = now
        #: ``time.monotonic()`` past which the stream is given up, however steadily it comes.
        self.deadline = deadline
        # A reply in a JSON envelope shows only its message; a plain chat reply shows all.
        self.deltas: MessageDeltas | None = MessageDeltas() if envelope else None
        self.usage: dict[str, Any] = {}
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finished = False
        #: How the server said the reply ended (``stop``, ``tool_calls``…), if it said.
        self.finish_reason: str | None = None
        #: Server-sent events read so far.
        self.events = 0
        #: The completion's id and the model that answered, as the server said them.
        self.said: dict[str, Any] = {}

    def read(self, lines: Iterator[str]) -> None:
        for event in sse_events(lines):
            self.events += 1
            if event == "[DONE]":
                self.finished = True
                return
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise ProviderError(
                    "provider-unavailable", True, detail="the reply took past its deadline"
                )
            chunk = json.loads(event)
            if isinstance(chunk, Mapping) and "error" in chunk:
                raise classify(stream_error_status(chunk["error"]), chunk, {}, self.now)
            self._said(chunk)
            for choice in chunk.get("choices") or []:
                self._choice(choice)
            if isinstance(chunk.get("usage"), Mapping):
                self.usage = dict(chunk["usage"])
        if self.events == 0:
            raise EmptyStreamError()

    def _said(self, chunk: Mapping[str, Any]) -> None:
        for name in ("id", "model"):
            if isinstance(chunk.get(name), str) and name not in self.said:
                self.said[name] = chunk[name]

    def read_completion(self, reply: Mapping[str, Any]) -> None:
        """An unstreamed completion read as if it had streamed in one piece."""
        choices = reply.get("choices") if isinstance(reply, Mapping) else None
        if not choices:
            raise ProviderError("provider-unavailable", True, detail="the reply had no choices")
        self._said(reply)
        message = choices[0].get("message") or {}
        calls = [
            {**call, "index": index} for index, call in enumerate(message.get("tool_calls") or [])
        ]
        self._choice(
            {
                "delta": {"content": message.get("content"), "tool_calls": calls},
                "finish_reason": choices[0].get("finish_reason") or "stop",
            }
        )
        if isinstance(reply.get("usage"), Mapping):
            self.usage = dict(reply["usage"])

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta") or {}
        text = delta.get("content")
        if text:
            self.content.append(text)
            shown = self.deltas.feed(text) if self.deltas is not None else text
            if shown and self.on_delta is not None:
                self.on_delta(shown)
        for call in delta.get("tool_calls") or []:
            self._tool_call_piece(call)
        check_finish(choice.get("finish_reason"))
        if choice.get("finish_reason"):
            self.finished = True
            self.finish_reason = str(choice["finish_reason"])

    def _tool_call_piece(self, call: Mapping[str, Any]) -> None:
        """One delta of a tool call, as the protocol means it: the call is its ``index``; its
        id and name come whole (the first time, though some servers repeat them in every
        delta, which changes nothing); its arguments come in pieces, appended."""
        slot = self.calls.setdefault(
            call.get("index", 0),
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        slot["id"] = slot["id"] or call.get("id") or ""
        function = call.get("function") or {}
        slot["function"]["name"] = slot["function"]["name"] or function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""

    def result(self) -> tuple[str, list[dict[str, Any]]]:
        """The text and tool calls; a stream cut short or a reply with neither is a failure
        worth retrying."""
        if not self.finished:
            raise ProviderError(
                "provider-unavailable", True, detail="the stream ended before the reply"
            )
        text = "".join(self.content)
        if not text.strip() and not self.calls:
            raise ProviderError("provider-unavailable", True, detail="the reply was empty")
        return text, [self.calls[index] for index in sorted(self.calls)]


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
        """The message text that ``chunk`` completes (possibly empty)."""
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
        while index < len(self.buffer):
            char = self.buffer[index]
            if char == '"':
                self.done = True
                index += 1
                break
            if char != "\\":
                out.append(char)
                index += 1
                continue
            decoded, width = self._escape(index)
            if width == 0:
                break  # the escape is cut: wait for the next chunk
            out.append(decoded)
            index += width
        self.position = index
        return "".join(out)

    def _escape(self, index: int) -> tuple[str, int]:
        """The character the escape at ``index`` stands for and its length in the buffer, or a
        length of 0 while the escape is not complete."""
        buffer = self.buffer
        if index + 1 >= len(buffer):
            return "", 0
        kind = buffer[index + 1]
        if kind != "u":
            return self._ESCAPES.get(kind, kind), 2
        if index + 6 > len(buffer):
            return "", 0
        code = int(buffer[index + 2 : index + 6], 16)
        if not 0xD800 <= code < 0xDC00:
            return chr(code), 6
        if index + 12 > len(buffer):  # a surrogate pair: wait for its second half
            return "", 0
        low = int(buffer[index + 8 : index + 12], 16)
        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
