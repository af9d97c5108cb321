"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions wire format from a
script: JSON replies, SSE streams, error statuses with headers, slow replies, cut streams."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }


def stream_chunks(content: str, size: int = 7) -> list[dict[str, Any]]:
    """``content`` as streamed deltas of ``size`` characters, then a stop chunk."""
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"content": content[i : i + size]}, "finish_reason": None}
            ]
        }
        for i in range(0, len(content), size)
    ]
    return [*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


class Script:
    """What the server answers, in order; and every request it received."""

    def __init__(self) -> None:
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []

    def reply(self, **reply: Any) -> Script:
        self.replies.append(reply)
        return self


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.script.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body}
        )
        reply = (
            self.script.replies.popleft() if self.script.replies else {"status": 500, "json": {}}
        )
        time.sleep(reply.get("delay", 0))
        if reply.get("drop"):  # closed without a word, as a stale pooled connection is
            self.close_connection = True
            self.connection.shutdown(2)
            return
        status = reply.get("status", 200)
        if "sse" in reply:
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            events = reply["sse"]
            cut = reply.get("cut_after")
            for index, event in enumerate(events):
                if cut is not None and index >= cut:
                    self.wfile.write(b'data: {"choices": [{"index": 0, "delta": {"content": "trun')
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(reply.get("event_delay", 0))
            if reply.get("done", True):
                self.wfile.write(b"data: [DONE]\n\n")
            return
        payload = reply.get("raw", json.dumps(reply.get("json", {})))
        data = payload.encode()
        self.send_response(status)
        self.send_header("Content-Type", reply.get("content_type", "application/json"))
        for name, value in reply.get("headers", {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class OpenAIServer:
    def __init__(self) -> None:
        self.script = Script()
        handler = type("Handler", (_Handler,), {"script": self.script})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
