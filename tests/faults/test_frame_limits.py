"""The servers as docs/deployment.md runs them: a frame a little over ``MAX_BODY_BYTES`` gets
the app's ``payload-too-large`` and the socket stays; a 10 MB frame is refused by the server
(1009) before the app reads it. Without the recipe's limit uvicorn read 16 MiB frames."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from pathlib import Path

import pytest
import websockets

from .conftest import Deployment
from .test_server_faults import chat_socket, visitor

pytestmark = pytest.mark.faults
DOCS = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"


def recipe(server: str) -> list[str]:
    """The page's command line for ``server``, on this test's host and port."""
    line = re.search(rf"^\s*({server} (?:-|example_project).*)$", DOCS.read_text(), re.MULTILINE)
    assert line, f"docs/deployment.md has no {server} command line"
    words = shlex.split(line.group(1))
    for flag in ("--host", "-b"):
        if flag in words:
            words[words.index(flag) + 1] = "127.0.0.1"
    for flag in ("--port", "-p"):
        if flag in words:
            words[words.index(flag) + 1] = "{port}"
    return words


@pytest.mark.parametrize("server", ["uvicorn", "daphne"])
def test_the_recipes_servers_refuse_huge_frames_before_the_app(
    deployment: Deployment, server: str
) -> None:
    _process, base = deployment.server(recipe(server))
    client = visitor(base)

    async def talk() -> int | None:
        async with chat_socket(base, client, f"limits-{server}") as socket:
            await socket.send(json.dumps({"type": "message", "text": "x" * 300_000, "id": "m1"}))
            answer = json.loads(await asyncio.wait_for(socket.recv(), 10))
            assert answer["code"] == "payload-too-large", answer
            await socket.send(json.dumps({"type": "message", "text": "hi", "id": "m2"}))
            while json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] != "turn":
                pass  # the socket stayed open, and still talks
            try:
                await socket.send("x" * 10_000_000)
                while True:
                    await asyncio.wait_for(socket.recv(), 10)
            except websockets.ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
        return -1  # unreachable: the socket stayed open

    # uvicorn says 1009 (message too big); daphne's library drops the connection before its
    # close frame gets through the rest of the frame being sent. Either way the socket is
    # gone and the app never read the frame (it would have answered payload-too-large).
    assert asyncio.run(talk()) in ((1009,) if server == "uvicorn" else (1009, None))
