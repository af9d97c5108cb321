"""Real exchanges with OpenAI-compatible servers, kept as cassettes and served again.

``make test-llm`` talks to a real llama-cpp-python server through a ``Recorder`` (an httpx
transport that passes every request on over a real socket and keeps the request body and the
whole answer) and writes each test's exchanges to ``cassettes/<name>.json`` with what the
provider made of them. ``make test`` serves those answers again, byte for byte, from the fake
server on 127.0.0.1 (``replay``) and checks the provider makes the same of them: the real wire
formats are checked in CI without building the server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from .openai_server import Script

CASSETTES = Path(__file__).parent / "cassettes"
#: Headers kept from a real answer (the others describe the recorded connection).
KEPT_HEADERS = ("content-type", "retry-after")


class Recorder(httpx.BaseTransport):
    """Passes requests on to the real server and keeps each exchange."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.exchanges: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        body = response.read()
        response.close()
        headers = {name: value for name, value in response.headers.items() if name in KEPT_HEADERS}
        self.exchanges.append(
            {
                "request": json.loads(request.content or b"{}"),
                "status": response.status_code,
                "headers": headers,
                "body": body.decode("utf-8", "replace"),
            }
        )
        return httpx.Response(response.status_code, headers=headers, content=body, request=request)

    def close(self) -> None:
        self.inner.close()


def save(
    name: str,
    exchanges: list[dict[str, Any]],
    outcome: dict[str, Any],
    directory: Path = CASSETTES,
) -> Path:
    path = directory / f"{name}.json"
    path.write_text(
        json.dumps({"exchanges": exchanges, "outcome": outcome}, ensure_ascii=False, indent=1)
        + "\n"
    )
    return path


def load(name: str, directory: Path = CASSETTES) -> dict[str, Any]:
    cassette: dict[str, Any] = json.loads((directory / f"{name}.json").read_text())
    return cassette


def replay(script: Script, cassette: dict[str, Any]) -> None:
    """Script the fake server to answer as the real one did, in the same order."""
    for exchange in cassette["exchanges"]:
        script.reply(
            status=exchange["status"],
            raw=exchange["body"],
            content_type=exchange["headers"].get("content-type", "application/json"),
            headers={k: v for k, v in exchange["headers"].items() if k != "content-type"},
        )


def names() -> list[str]:
    return sorted(path.stem for path in CASSETTES.glob("*.json"))
